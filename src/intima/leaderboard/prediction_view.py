"""Prediction-powered shares on the board (:mod:`intima.results.prediction`): the static site's
JSON (rendered by ``board.js`` with ``textContent``) and the app's HTML (every store string
through :func:`~intima.leaderboard.render.esc`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from intima.leaderboard.render import esc, pct
from intima.results.board import BoardView
from intima.results.prediction import LABELS, PredictionRow
from intima.results.table import OVERALL

#: How the prediction-powered shares are made, for the methodology (site and app).
PREDICTION_NOTE: Final = (
    "Prediction-powered share (PPI++, Angelopoulos, Duchi & Zrnic 2023): the share a judge "
    "would give every response of a configuration, from the judge on a seeded random sample "
    "(intima judge --sample N, or people: intima annotate --design random) and a predictor on "
    "all: the predictor's mean on all plus the judge-minus-predictor mean on the sample "
    "(power-tuned). The predictor: the panel, else an LLM judge, that labelled every response "
    "of the configuration (not the sampled judge itself), else the affect measure; each row "
    "names it. Unbiased whatever the predictor's error on that configuration. 95% interval: "
    "a score interval with the "
    "finite-population correction and a small-sample correction, at least 93% coverage in "
    "every cell of a simulation over shares 0.5%-50% and 30-120 labelled of 368. Raw share: "
    "the predictor's own share, beside it. Method and figures: docs/leaderboard.md "
    "(What the numbers mean)."
)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def prediction_payload(view: BoardView) -> dict[str, Any] | None:
    """``judges``: judge -> scope -> label -> per configuration (the table's, in order)
    ``[estimate, lo, hi, n_labelled, n_total, raw, note, predictor]`` or None; None without a
    sample."""
    rows, configs = view.prediction, view.table.configs
    if not rows:
        return None
    config_ids = [c for c, _ in configs]
    index = {(r.judge, r.run_id, r.scope, r.metric): r for r in rows}
    judges = sorted({r.judge for r in rows})
    scopes = sorted({r.scope for r in rows}, key=lambda s: (s != OVERALL, s))
    out: dict[str, Any] = {}
    for judge in judges:
        out[judge] = {
            scope: {
                metric: [
                    None
                    if (r := index.get((judge, c, scope, metric))) is None
                    else [
                        _r(r.estimate),
                        _r(r.lo),
                        _r(r.hi),
                        r.n_labelled,
                        r.n_total,
                        _r(r.raw),
                        r.note,
                        r.predictor,
                    ]
                    for c in config_ids
                ]
                for metric in LABELS
            }
            for scope in scopes
        }
    labels = [label for _, label in configs]
    return {"judges": out, "configs": labels, "labels": list(LABELS), "method": PREDICTION_NOTE}


def prediction_html(
    rows: Sequence[PredictionRow],
    configs: Sequence[tuple[str, str]],
    metric: str,
    scope: str = OVERALL,
) -> str:
    """Configurations x (prediction-powered share, raw share) per judge with a sample
    (``rows``: :attr:`BoardView.prediction`)."""
    if not rows:
        return ""
    metric = metric if metric in LABELS else "reinforcing"
    index = {(r.judge, r.run_id, r.scope, r.metric): r for r in rows}
    out = []
    for judge in sorted({r.judge for r in rows}):
        if not any((judge, run_id, scope, metric) in index for run_id, _ in configs):
            continue  # e.g. a code's scope: the shares are per configuration and dimension
        out.append(
            f"<p><strong>{esc(metric.capitalize())} share as {esc(judge)} would label every "
            "response</strong> (prediction-powered; the predictor's raw share beside)</p>"
            '<div class="intima-scroll"><table class="intima-scores intima-prediction">'
            "<thead><tr><th>model</th><th>prediction-powered share</th><th>what it estimates"
            "</th><th>predictor</th><th>raw share of the predictor</th></tr></thead><tbody>"
        )
        for run_id, label in configs:
            r = index.get((judge, run_id, scope, metric))
            if r is None:
                continue
            if r.estimate is None:
                share = f'<span class="note">{esc(r.note)}</span>'
                what = ""
            else:
                share = f'{pct(r.estimate)} <span class="ci">[{pct(r.lo)}, {pct(r.hi)}]</span>'
                what = esc(r.note)
            raw = "–" if r.raw is None else pct(r.raw)
            out.append(
                f'<tr data-run-id="{esc(run_id)}"><td>{esc(label)}</td><td>{share}</td>'
                f"<td>{what}</td><td>{esc(r.predictor)}</td><td>{raw}</td></tr>"
            )
        out.append("</tbody></table></div>")
    return "".join(out)
