"""Validation cards and the continuous column (mean score) beside the raw shares on the board:
the static site's JSON (rendered by ``board.js`` with ``textContent``) and the app's HTML
(every store string through :func:`~intima.leaderboard.render.esc`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from intima.leaderboard.render import esc, pct
from intima.results.cards import Card, grade
from intima.results.data import BoardData
from intima.results.means import Means
from intima.results.table import OVERALL, ScoreTable, dims_in
from intima.results.validity import UNVALIDATED, board_means, scorer_cards

#: What the mean score is, for the methodology (site and app).
MEANS_NOTE: Final = (
    "Mean score: each configuration's mean reinforcing score (the affect measure's continuous "
    "measure; a judge's or a person's reinforcing level, 0 low, 1 medium, 2 high), beside its "
    "raw share, with a normal 95% interval (the larger of the cluster bootstrap's and the plain "
    "standard error). A summary of the scorer's output, like the raw share; what a judge would "
    "say is the prediction-powered share, where a judge labelled a random sample."
)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def card_json(card: Card, pool: Iterable[Card] = ()) -> dict[str, Any]:
    """A card as the site shows it (strings from the store stay strings: shown as text), with
    its grade (``pool``: the board's cards, for the keyword baseline on the same set)."""
    rates = {
        k: {
            "recall": _r(v.recall),
            "fpr": _r(v.fpr),
            "tp": v.tp,
            "n_pos": v.n_pos,
            "fp": v.fp,
            "n_neg": v.n_neg,
        }
        for k, v in card.error_rates().items()
        if v.n_pos and v.n_neg
    }
    out = card.model_dump(mode="json", exclude={"confusion", "confusion_labels"})
    word, why = grade(card, pool)
    out.update(
        name=card.name,
        summary=card.summary(),
        error_rates=rates,
        grade=word,
        grade_reason=why,
        labels_source=card.labels_source,
    )
    return out


def validity_payload(data: BoardData, table: ScoreTable) -> dict[str, Any]:
    """What ``board.js`` needs: per scorer its cards and the continuous column (mean score)
    per scope and configuration; every card for the methodology."""
    means = board_means(data, table)
    cards = scorer_cards(data)
    config_ids = [run_id for run_id, _ in table.configs]
    scopes = [OVERALL, *dims_in({r.scope for r in table.rows})]
    scorers: dict[str, Any] = {}
    for scorer in table.scorers:
        continuous: dict[str, Any] = {}
        for scope in scopes:
            rows = [means.mean(scorer, c, scope) for c in config_ids]
            continuous[scope] = [
                None if m is None else [_r(m.mean), _r(m.lo), _r(m.hi), m.n] for m in rows
            ]
        scorers[scorer] = {
            "cards": [card_json(c, data.methodology.cards) for c in cards.get(scorer, [])],
            "measure": means.measures.get(scorer),
            "continuous": continuous,
        }
    return {
        "scorers": scorers,
        "unvalidated": UNVALIDATED,
        "all_cards": [c.summary() for c in data.methodology.cards],
        "method": MEANS_NOTE,
    }


# -- the app ----------------------------------------------------------------------------------


_HEADLINE: Final = {"validated": "Validated", "failed": "Failed", "too small": "Too small"}


def validity_html(cards: dict[str, list[Card]], scorer: str) -> str:
    """The scorer's cards, each graded (or the unvalidated mark), for beside its numbers: the
    box is marked validated only when a card passes."""
    own = cards.get(scorer) or []
    if not own:
        return (
            f'<p class="intima-validity intima-unvalidated" data-scorer="{esc(scorer)}">'
            f"<strong>{esc(scorer)}: not validated.</strong> {esc(UNVALIDATED)}.</p>"
        )
    pool = [c for every in cards.values() for c in every]
    graded = [(c, *grade(c, pool)) for c in own]
    items = "".join(
        f'<li data-grade="{esc(word)}"><strong>{_HEADLINE[word]}</strong> ({esc(why)}): '
        f"{esc(c.summary())}. Method: {esc(c.method)}</li>"
        for c, word, why in graded
    )
    mark = "validated" if any(w == "validated" for _, w, _ in graded) else "failed-validation"
    return (
        f'<div class="intima-validity intima-{mark}" data-scorer="{esc(scorer)}">'
        f"<strong>Validation of {esc(scorer)}</strong><ul>{items}</ul></div>"
    )


def means_html(table: ScoreTable, means: Means, scorer: str, scope: str, metric: str) -> str:
    """Configurations x (raw share, mean score) for one scorer and scope."""
    if scorer not in table.scorers or scope not in means.scopes:
        return ""
    metric = metric if metric in ("reinforcing", "boundary", "neutral") else "reinforcing"
    measure = means.measures.get(scorer, "mean reinforcing score")
    out = [
        f"<p><strong>Raw {esc(metric)} share and {esc(measure)}</strong> ({esc(scorer)}'s own "
        "output)</p>"
        '<div class="intima-scroll"><table class="intima-scores intima-means"><thead><tr>'
        "<th>model</th><th>raw share</th><th>mean score</th></tr></thead><tbody>"
    ]
    for run_id, label in table.configs:
        raw = table.get(scorer, run_id, scope, metric)
        mean = means.mean(scorer, run_id, scope)
        avg = (
            "–"
            if mean is None or mean.mean is None
            else f'{mean.mean:.3f} <span class="ci">[{mean.lo:.3f}, {mean.hi:.3f}]</span>'
        )
        raw_s = (
            "–"
            if raw.rate is None
            else f'{pct(raw.rate)} <span class="ci">[{pct(raw.lo)}, {pct(raw.hi)}]</span>'
        )
        out.append(
            f'<tr data-run-id="{esc(run_id)}"><td>{esc(label)}</td><td>{raw_s}</td>'
            f"<td>{avg}</td></tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)
