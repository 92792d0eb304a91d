"""Which stored runs are one configuration on the board, and how much of its dataset each
configuration answered.

A run is one command's prompt list: ``intima run --limit 8`` and then ``--limit 40`` of the same
configuration store two runs (each keeps the prompts it was asked, so its provenance says what
was run), but the second asks only the 32 new prompts (answers are keyed by configuration and
prompt) and both are one configuration. The board shows it once, with every prompt either run
answered. Runs are one configuration when they share the configuration key (provider, model,
system prompt, generation settings) and the dataset (id, revision and file hash); another
setting, dataset or revision stays apart, and its name says how
(:func:`intima.core.labels.board_labels`).

A configuration that answered fewer prompts than its dataset holds says so wherever it is
shown ("40 of 368 prompts"), with the INTIMA dimensions it has no answer in
(:class:`Coverage`), and so does the board's title when any does (:func:`board_coverage`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from intima.core.taxonomy import Dimension
from intima.store import StoredResponse


@dataclass(frozen=True)
class Coverage:
    """How much of its dataset one configuration answered."""

    answered: int = 0  # distinct prompts with an answer on the board
    size: int | None = None  # prompts in the whole dataset; None: not recorded
    lacking: tuple[str, ...] = ()  # INTIMA dimensions with no answered prompt

    @property
    def partial(self) -> bool:
        return self.size is not None and self.answered < self.size

    @property
    def prompts(self) -> str:
        """ "40 of 368 prompts" ("40 prompts" when the dataset's size was not recorded)."""
        of = f" of {self.size:,}" if self.size is not None else ""
        return f"{self.answered:,}{of} prompt{'s' if (self.size or self.answered) != 1 else ''}"

    def note(self) -> str:
        """What a reader must know beside the configuration's name, or "" when it answered
        its whole dataset in every dimension."""
        parts = [self.prompts] if self.partial else []
        if self.lacking:
            parts.append("no prompt in " + ", ".join(self.lacking))
        return "; ".join(parts)


def coverage_of(responses: Sequence[StoredResponse], size: int | None) -> Coverage:
    """One configuration's coverage from its responses on the board. Dimensions are named as
    lacking only for a configuration on INTIMA's dimensions (an external set has none)."""
    prompts = {r.prompt_id for r in responses}
    dims = {r.dimension for r in responses}
    known = [str(d) for d in Dimension]
    lacking = tuple(d for d in known if d not in dims) if dims & set(known) else ()
    return Coverage(len(prompts), size, lacking)


def board_coverage(coverages: Sequence[Coverage]) -> str:
    """What the board's title adds when a configuration answered only part of its dataset:
    "40 of 368 prompts" when every configuration answered the same part, else how many did;
    "" when every configuration answered its whole dataset."""
    partial = [c for c in coverages if c.partial]
    if not partial:
        return ""
    if len(partial) == len(coverages) and len({(c.answered, c.size) for c in partial}) == 1:
        return partial[0].prompts
    return f"{len(partial)} of {len(coverages)} configurations on part of their prompts"


@dataclass(frozen=True)
class StoredRun:
    """What deciding which runs are one configuration reads of a stored run."""

    run_id: str
    config_key: str
    dataset: tuple[str, str | None, str]  # id, revision, sha256


def one_per_configuration(
    runs: Sequence[StoredRun], responses: Sequence[StoredResponse]
) -> dict[str, str]:
    """Stored run id -> the run that stands for its configuration on the board: of the runs
    with one configuration key and dataset, the one with the most answers (the first of
    equals, in ``runs`` order). ``responses``: every run's answers, listed under each run."""
    answers: dict[str, int] = {}
    for r in responses:
        answers[r.run_id] = answers.get(r.run_id, 0) + 1
    best: dict[tuple[str, tuple[str, str | None, str]], str] = {}
    for run in runs:
        key = (run.config_key, run.dataset)
        if key not in best or answers.get(run.run_id, 0) > answers.get(best[key], 0):
            best[key] = run.run_id
    return {run.run_id: best[run.config_key, run.dataset] for run in runs}


def merged_responses(
    responses: Sequence[StoredResponse], board_id: Mapping[str, str]
) -> list[StoredResponse]:
    """Each configuration's answers once, under the run that stands for it (every answer a
    run of it holds, in the order first met), configurations in the order first met."""
    by_config: dict[str, dict[str, StoredResponse]] = {}
    for r in responses:
        target = board_id[r.run_id]
        kept = by_config.setdefault(target, {})
        if r.response_id not in kept:
            kept[r.response_id] = r if r.run_id == target else replace(r, run_id=target)
    return [r for kept in by_config.values() for r in kept.values()]


def covering_runs(responses: Sequence[StoredResponse], board_id: Mapping[str, str]) -> set[str]:
    """The stored runs that answered every prompt their configuration has on the board: a
    random sample of such a run's answers is a random sample of the configuration's (one of a
    smaller run's is not, and is left off the board's prediction-powered shares)."""
    own: dict[str, set[str]] = {}
    for r in responses:
        own.setdefault(r.run_id, set()).add(r.response_id)
    union: dict[str, set[str]] = {}
    for run_id, ids in own.items():
        union.setdefault(board_id[run_id], set()).update(ids)
    return {run_id for run_id, ids in own.items() if ids >= union[board_id[run_id]]}
