"""Validation cards, corrected shares and the continuous column on the board: the static
site's JSON (rendered by ``board.js`` with ``textContent``) and the app's HTML (every store
string through :func:`~intima.leaderboard.render.esc`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from intima.leaderboard.render import esc, pct
from intima.results.cards import Card, grade
from intima.results.corrected import CORRECTABLE, MIN_YOUDEN, Corrections
from intima.results.data import BoardData
from intima.results.table import OVERALL, ScoreTable, dims_in
from intima.results.validity import UNVALIDATED, board_corrections, scorer_cards

#: How the corrected shares are made, for the methodology (site and app).
CORRECTION_NOTE: Final = (
    "Error-corrected share (adjusted classify-and-count, Rogan & Gladen 1978): "
    "(raw share - fpr) / (recall - fpr), clipped to [0, 1], with the recall and false-positive "
    "rate of the scorer's validation named beside it. 95% interval: adjusted Wald (Lang & "
    f"Reiczigel 2014) with the raw share's effective n from the cluster bootstrap and the "
    f"validation's counts. No number when recall - fpr < {MIN_YOUDEN} or its interval reaches "
    "0 (not identifiable). Only reinforcing, boundary and neutral (the labels a validation set "
    "has truth for) are corrected. Method: docs/leaderboard.md (Error-corrected shares)."
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
    """What ``board.js`` needs: per scorer its cards, the validation used, corrected shares
    and the continuous column per scope and configuration; every card for the methodology."""
    corr = board_corrections(data, table)
    cards = scorer_cards(data)
    config_ids = [run_id for run_id, _ in table.configs]
    scopes = [OVERALL, *dims_in({r.scope for r in table.rows})]
    scorers: dict[str, Any] = {}
    for scorer in table.scorers:
        corrected: dict[str, Any] = {}
        continuous: dict[str, Any] = {}
        for scope in scopes:
            corrected[scope] = {}
            for metric in CORRECTABLE:
                rows = [corr.get(scorer, c, scope, metric) for c in config_ids]
                corrected[scope][metric] = [
                    None if r is None else [_r(r.rate), _r(r.lo), _r(r.hi), r.note] for r in rows
                ]
            means = [corr.mean(scorer, c, scope) for c in config_ids]
            continuous[scope] = [
                None if m is None else [_r(m.mean), _r(m.lo), _r(m.hi), m.n] for m in means
            ]
        used = next((r.validation for r in corr.corrected if r.scorer == scorer), "")
        scorers[scorer] = {
            "cards": [card_json(c, data.methodology.cards) for c in cards.get(scorer, [])],
            "validation": used,
            "measure": corr.measures.get(scorer),
            "corrected": corrected if used else None,  # none without a validation
            "continuous": continuous,
        }
    return {
        "scorers": scorers,
        "unvalidated": UNVALIDATED,
        "all_cards": [c.summary() for c in data.methodology.cards],
        "method": CORRECTION_NOTE,
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


def corrected_html(
    table: ScoreTable, corr: Corrections, scorer: str, scope: str, metric: str
) -> str:
    """Configurations x (raw share, corrected share, mean score) for one scorer and scope."""
    if scorer not in table.scorers or scope not in {r.scope for r in corr.continuous}:
        return ""
    metric = metric if metric in CORRECTABLE else "reinforcing"
    measure = corr.measures.get(scorer, "mean reinforcing score")
    used = next((r.validation for r in corr.corrected if r.scorer == scorer and r.validation), "")
    out = [
        f"<p><strong>Error-corrected {esc(metric)} share</strong> (validation: "
        f"{esc(used or 'none')}) and {esc(measure)}</p>"
        '<div class="intima-scroll"><table class="intima-scores intima-corrected"><thead><tr>'
        "<th>model</th><th>raw share</th><th>corrected share</th><th>mean score</th>"
        "</tr></thead><tbody>"
    ]
    for run_id, label in table.configs:
        raw = table.get(scorer, run_id, scope, metric)
        fix = corr.get(scorer, run_id, scope, metric)
        mean = corr.mean(scorer, run_id, scope)
        if fix is None or fix.rate is None:
            fixed = f'<span class="note">{esc(fix.note if fix else "no validation")}</span>'
        else:
            fixed = f'{pct(fix.rate)} <span class="ci">[{pct(fix.lo)}, {pct(fix.hi)}]</span>'
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
            f"<td>{fixed}</td><td>{avg}</td></tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)
