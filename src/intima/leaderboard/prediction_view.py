"""Prediction-powered shares on the board (:mod:`intima.results.prediction`), rendered once:
:func:`prediction_html` is the app's view and, one ``<template>`` per scope
(:data:`intima.leaderboard.views.VIEWS`), the site's, which ``static/prediction.js`` only clones in.
Every store string goes through :func:`~intima.leaderboard.render.esc`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from intima.leaderboard.render import esc, pct
from intima.leaderboard.validity_view import validity_status
from intima.results.cards import Card
from intima.results.prediction import LABELS, PredictionRow
from intima.results.table import OVERALL

#: The site's script that clones the chosen scope's template (only on sites with a sample).
PREDICTION_SCRIPT: Final = "prediction.js"

#: How the prediction-powered shares are made, for the methodology (site and app).
PREDICTION_NOTE: Final = (
    "Prediction-powered share (PPI++, Angelopoulos, Duchi & Zrnic 2023): the share a judge "
    "would give every response of a configuration, from the judge on a seeded random sample "
    "(intima judge --sample N, or people: intima annotate --design random) and a predictor on "
    "all: the predictor's mean on all plus the judge-minus-predictor mean on the sample "
    "(power-tuned). A sample drawn with intima judge --sample N --stratify is weighted by "
    "dimension: each dimension's share is estimated alone and the overall share weights them "
    "by each dimension's recorded size. The predictor: the panel, else an LLM judge, that "
    "labelled every response "
    "of the configuration (not the sampled judge itself), else the affect measure; each row "
    "names it. Unbiased whatever the predictor's error on that configuration. 95% interval: "
    "a score interval with the "
    "finite-population correction and a small-sample correction, at least 93% coverage in "
    "every cell of a simulation over shares 0.5%-50% and 30-120 labelled of 368, and from 15 "
    "labelled (the fewest a row needs) at a dimension's size. Raw share: "
    "the predictor's own share, beside it. Method and figures: docs/leaderboard.md "
    "(What the numbers mean)."
)


def prediction_html(
    rows: Sequence[PredictionRow],
    configs: Sequence[tuple[str, str]],
    scope: str = OVERALL,
    cards: dict[str, list[Card]] | None = None,
) -> str:
    """Per judge with a sample, configurations x labels in ``scope``: beside each model its
    predictor (chosen per configuration, so named on every row), each cell the
    prediction-powered share and its 95% interval, under them the predictor's raw share, then
    what the row estimates (``rows``: :attr:`BoardView.prediction`). Under each judge's heading,
    whether that judge is validated (``cards``: :attr:`BoardView.cards`): these shares open the
    page, so their trust is said beside them, not only in the card further down. Empty without
    a share in ``scope`` (a code's: the shares are per configuration, overall and per
    dimension)."""
    index = {(r.judge, r.run_id, r.scope, r.metric): r for r in rows}
    where = "overall" if scope == OVERALL else f"in {scope}"
    out = []
    for judge in sorted({r.judge for r in rows}):
        firsts = [(run_id, label, index.get((judge, run_id, scope, LABELS[0])))
                  for run_id, label in configs]  # fmt: skip
        shown = [(run_id, label, first) for run_id, label, first in firsts if first is not None]
        if not shown:
            continue  # no sample of this judge's in this scope
        preds = " or ".join(sorted({first.predictor for _, _, first in shown}))
        head = "".join(f"<th>{esc(m)}</th>" for m in LABELS)
        out.append(
            f"<h3>As {esc(judge)} would label every response</h3>"
            + validity_status(cards or {}, judge)
            + f'<p class="intima-note">{esc(judge)} labelled a random sample of each model\'s '
            f"responses; {esc(preds)} scored every response (the predictor). Each cell: the "
            f"prediction-powered share [95% interval], {esc(where)}; under it, raw: "
            f"{esc(preds)}'s own share.</p>"
            '<div class="intima-scroll"><table class="intima-scores intima-prediction" '
            f'data-judge="{esc(judge)}"><thead><tr><th>model</th><th>predictor</th>{head}'
            '<th class="what">what it estimates</th></tr></thead><tbody>'
        )
        for run_id, label, first in shown:
            cells = "".join(_share(index.get((judge, run_id, scope, m)), m) for m in LABELS)
            what = "" if first.estimate is None else esc(first.note)
            out.append(
                f'<tr data-run-id="{esc(run_id)}"><td class="model">{esc(label)}</td>'
                f'<td class="predictor">{esc(first.predictor)}</td>{cells}'
                f'<td class="what">{what}</td></tr>'
            )
        out.append("</tbody></table></div>")
    if not out:
        return ""
    return f'<div class="intima-prediction-view" data-scope="{esc(scope)}">{"".join(out)}</div>'


def _share(r: PredictionRow | None, label: str) -> str:
    """One label's cell: the share and its interval, or why there is none; then the raw share."""
    if r is None:
        return f'<td class="num ppi" data-label="{esc(label)}">–</td>'
    if r.estimate is None:
        body = f'<span class="why">{esc(r.note)}</span>'
    else:
        body = (
            f'<span class="rate">{pct(r.estimate)}</span>'
            f'<span class="ci"> [{pct(r.lo)}, {pct(r.hi)}]</span>'
            f'<span class="raw" title="{esc(r.predictor)}\'s own share of this label">'
            f"raw {pct(r.raw)}</span>"
        )
    return f'<td class="num ppi" data-label="{esc(label)}">{body}</td>'
