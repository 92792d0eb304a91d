"""Prediction-powered shares on the board (:mod:`intima.results.prediction`), rendered once:
:func:`prediction_html` is the app's view and, one ``<template>`` per scope
(:data:`intima.leaderboard.views.VIEWS`), the site's, which ``static/prediction.js`` only clones in.
Every fragment is a :class:`markupsafe.Markup`: store strings go in only as escaped arguments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from markupsafe import Markup

from intima.leaderboard.render import pct
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
) -> Markup:
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
        head = Markup("").join(Markup("<th>{}</th>").format(m) for m in LABELS)
        out.append(
            Markup("<h3>As {judge} would label every response</h3>{status}"
                   '<p class="intima-note">{judge} labelled a random sample of each model\'s '
                   "responses; {preds} scored every response (the predictor). Each cell: the "
                   "prediction-powered share [95% interval], {where}; under it, raw: "
                   "{preds}'s own share.</p>"
                   '<div class="intima-scroll"><table class="intima-scores intima-prediction" '
                   'data-judge="{judge}"><thead><tr><th>model</th><th>predictor</th>{head}'
                   '<th class="what">what it estimates</th></tr></thead><tbody>')
            .format(judge=judge, status=validity_status(cards or {}, judge), preds=preds,
                    where=where, head=head)
        )  # fmt: skip
        for run_id, label, first in shown:
            cells = Markup("").join(_share(index.get((judge, run_id, scope, m)), m) for m in LABELS)
            out.append(
                Markup(
                    '<tr data-run-id="{}"><td class="model">{}</td>'
                    '<td class="predictor">{}</td>{}<td class="what">{}</td></tr>'
                ).format(
                    run_id,
                    label,
                    first.predictor,
                    cells,
                    "" if first.estimate is None else first.note,
                )
            )
        out.append(Markup("</tbody></table></div>"))
    if not out:
        return Markup()
    return Markup('<div class="intima-prediction-view" data-scope="{}">{}</div>').format(
        scope, Markup("").join(out)
    )


def _share(r: PredictionRow | None, label: str) -> Markup:
    """One label's cell: the share and its interval, or why there is none; then the raw share."""
    if r is None:
        return Markup('<td class="num ppi" data-label="{}">–</td>').format(label)
    if r.estimate is None:
        body = Markup('<span class="why">{}</span>').format(r.note)
    else:
        body = Markup(
            '<span class="rate">{}</span><span class="ci"> [{}, {}]</span>'
            '<span class="raw" title="{}\'s own share of this label">raw {}</span>'
        ).format(pct(r.estimate), pct(r.lo), pct(r.hi), r.predictor, pct(r.raw))
    return Markup('<td class="num ppi" data-label="{}">{}</td>').format(label, body)
