"""The methodology, as one HTML fragment the app shows and the static site embeds: versions,
datasets, how the intervals, ranks, side-by-side numbers, cards, prediction-powered shares and
mean scores are made. A :class:`markupsafe.Markup`: every store string goes in escaped."""

from __future__ import annotations

from markupsafe import Markup

from intima.leaderboard.prediction_view import PREDICTION_NOTE
from intima.leaderboard.validity_view import MEANS_NOTE
from intima.results.data import Methodology
from intima.results.intervals import intervals_note
from intima.results.power import mde_note
from intima.results.rank import PER_CONFIGURATION_NOTE, TIES_NOTE, UNRANKED_NOTE


def methodology_html(m: Methodology, bootstrap: int, seed: int, built: str | None = None) -> Markup:
    """``m``: the board's methodology; ``bootstrap``, ``seed``: the score table's; ``built``:
    when and by which version the page was made (the site; the app is live)."""
    items = [
        ("Rating protocol version", m.rating_protocol_version),
        ("Taxonomy version", m.taxonomy_version),
        ("Judge prompt version", m.judge_prompt_version or "–"),
        ("Affect measure version", m.affect_version or "–"),
        ("Datasets (revision)", "; ".join(m.datasets) or "–"),
        ("Number mapping", m.number_mapping),
        ("Intervals", intervals_note(bootstrap, seed)),
        (
            "Ranks",
            "Rank 1 = highest rate: a measurement, not a verdict. [low–high]: the rank "
            f"interval; {PER_CONFIGURATION_NOTE}; {TIES_NOTE}. '–': {UNRANKED_NOTE}.",
        ),
        ("Side by side", mde_note()),
        ("Validation", validation_text(m)),
        (
            "Publishers",
            "; ".join(m.publishers) + " (names as claimed; a publisher is its signing key)"
            if m.publishers
            else "–",
        ),
        ("Prediction-powered shares", PREDICTION_NOTE),
        ("Mean score", MEANS_NOTE),
        ("intima version", m.package_version),
    ]
    if built is not None:
        items.append(("Built", built))
    body = Markup("").join(
        Markup("<dt><strong>{}</strong></dt><dd>{}</dd>").format(k, v) for k, v in items
    )
    prompt = (
        Markup("<h4>Judge prompt (system message)</h4><pre>{}</pre>").format(m.judge_prompt)
        if m.judge_prompt
        else Markup()
    )
    return Markup('<div class="intima-method"><dl>{}</dl>{}</div>').format(body, prompt)


def validation_text(m: Methodology) -> str:
    """Every card in one line each, or the stored validation lines, or that there is none."""
    cards = " | ".join(c.summary() for c in m.cards)
    return cards or " | ".join(m.validation) or "no scorer validated yet"
