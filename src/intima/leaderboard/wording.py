"""What the board's pages say about their numbers, in one place for the site and the app.

A leaderboard reads as "rank 1 is best". INTIMA's rates are measurements, not verdicts: rank 1
on "reinforcing" is the configuration that reinforced companionship *most often*, and whether
that is good depends on what the model is for. Every rank states its direction, every number
states what it counts, and a board built on the project's demo prompts says so in its title.
The texts are plain strings; the pages escape them (the site with ``textContent``, the
fragments as arguments of ``markupsafe.Markup`` templates).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from intima.dataset.loaders import DEMO_DATASET_ID, HUB_DATASET_ID
from intima.results.configurations import Coverage, board_coverage
from intima.results.table import LABEL_METRICS

#: Shown above every ranked table, whatever the metric.
NOT_A_VERDICT: Final = (
    "A measurement, not a verdict: rank 1 is the highest rate of the chosen label, not the "
    "best model. Whether reinforcing or boundary-maintaining responses are wanted depends on "
    "what the model is for."
)
#: The intervals, in a few words (the methodology has the whole sentence,
#: :func:`intima.results.intervals.intervals_note`).
INTERVALS_SHORT: Final = (
    "95% Wilson intervals on the effective sample size (design effect from a cluster bootstrap)"
)

_LABEL_WORDS: Final = {
    "reinforcing": "companionship-reinforcing",
    "boundary": "boundary-maintaining",
    "neutral": "neutral",
    "mixed": "mixed (reinforcing and boundary tie)",
    "no_majority": "no majority (the panel's judges disagree)",
}


def direction_note(metric: str) -> str:
    """Which way the ranks run on ``metric``."""
    name = metric.replace("_", " ")
    if metric in LABEL_METRICS:
        what = "labelled " + _LABEL_WORDS.get(metric, name)
    else:
        what = "rated medium or high on " + name
    return f"Ranked by {name}: rank 1 = MOST often {what} (highest rate first)."


def is_demo(dataset_ids: Iterable[str]) -> bool:
    ids = set(dataset_ids)
    return bool(ids) and ids <= {DEMO_DATASET_ID}


def _is_intima(ids: set[str]) -> bool:
    """Every run on the benchmark's prompts: its id or a variant of it (``:full``, ``:cleaned``)."""
    return bool(ids) and all(i.split(":")[0] == HUB_DATASET_ID for i in ids)


def board_title(dataset_ids: Iterable[str], coverage: Sequence[Coverage] = ()) -> str:
    """The title a board gets unless one is given: it names the prompt set, and says how much
    of it was answered when a configuration answered only part (``coverage``: each
    configuration's, :class:`intima.results.configurations.Coverage`)."""
    ids = set(dataset_ids)
    if is_demo(ids):
        title = "INTIMA leaderboard: demo prompts (not the INTIMA benchmark)"
    elif _is_intima(ids):
        title = "INTIMA companionship leaderboard"
    else:
        title = "Companionship leaderboard (INTIMA method, custom prompts)"
    part = board_coverage(coverage)
    return f"{title} — {part}" if part else title


def _coverage_sentence(coverage: Sequence[Coverage]) -> str:
    """The subtitle's sentence on a partial board: how much was answered, the dimensions no
    configuration has a prompt in, and where each configuration's own note is."""
    part = board_coverage(coverage)
    lacking = (
        [d for d in coverage[0].lacking if all(d in c.lacking for c in coverage)]
        if (coverage)
        else []
    )
    if not part and not lacking:
        return ""
    said = [f"Partial: {part}"] if part else []
    if lacking:
        said.append(f"no prompt in {', '.join(lacking)}, so no rate there")
    return " " + "; ".join(said) + " (the note beside each configuration says what it answered)."


#: What an empty board says, in the subtitle and in place of the scores.
NO_RESULTS = (
    "No results yet: runs appear here once they are scored (intima judge or intima score) "
    "and, on a Space, published to its results repo."
)


def board_subtitle(dataset_ids: Iterable[str], coverage: Sequence[Coverage] = ()) -> str:
    """One sentence under the title: what is measured, on which prompts, with which intervals;
    and, on a board where a configuration answered part of its dataset, a second saying so."""
    ids = set(dataset_ids)
    if is_demo(ids):
        prompts = (
            f"on the project's demo prompts ({DEMO_DATASET_ID}, written for intima, not "
            "INTIMA's), so these numbers are not INTIMA results"
        )
    elif _is_intima(ids):
        prompts = f"on the INTIMA benchmark prompts ({', '.join(sorted(ids))})"
    elif ids:
        prompts = "on these prompt sets: " + ", ".join(sorted(ids))
    else:
        return (
            "How often model responses reinforce companionship or maintain boundaries, by INTIMA "
            f"dimension. {NO_RESULTS}"
        )
    return (
        "How often model responses reinforce companionship or maintain boundaries, by INTIMA "
        f"dimension, {prompts}; with {INTERVALS_SHORT}." + _coverage_sentence(coverage)
    )
