"""Validation cards and the continuous column (mean score) beside the raw shares on the board,
as HTML fragments (every store string through :func:`~intima.leaderboard.render.esc`): the app
shows them and the static site embeds the very same fragments."""

from __future__ import annotations

from typing import Final

from intima.leaderboard.render import esc, pct
from intima.results.cards import Card, grade
from intima.results.means import Means
from intima.results.table import ScoreTable
from intima.results.validity import UNVALIDATED

#: What the mean score is, for the methodology (site and app).
MEANS_NOTE: Final = (
    "Mean score: each configuration's mean reinforcing score (the affect measure's continuous "
    "measure; a judge's or a person's reinforcing level, 0 low, 1 medium, 2 high), beside its "
    "raw share, with a normal 95% interval (the larger of the cluster bootstrap's and the plain "
    "standard error). A summary of the scorer's output, like the raw share; what a judge would "
    "say is the prediction-powered share, where a judge labelled a random sample."
)


_HEADLINE: Final = {"validated": "Validated", "failed": "Failed", "too small": "Too small"}


def validity_html(cards: dict[str, list[Card]], scorer: str) -> str:
    """The scorer's cards, each graded, every fact it measured (:meth:`Card.facts`: every
    label's error rates), or the unvalidated mark: the one card of the site and the app. The
    box is marked validated only when a card passes."""
    own = cards.get(scorer) or []
    if not own:
        return (
            '<p class="intima-validity intima-unvalidated" id="validity" '
            f'data-scorer="{esc(scorer)}">'
            f"<strong>{esc(scorer)}: not validated.</strong> {esc(UNVALIDATED)}.</p>"
        )
    pool = [c for every in cards.values() for c in every]
    graded = [(c, *grade(c, pool)) for c in own]
    items = "".join(_card(c, word, why) for c, word, why in graded)
    mark = "validated" if any(w == "validated" for _, w, _ in graded) else "failed-validation"
    return (
        f'<div class="intima-validity intima-{mark}" id="validity" data-scorer="{esc(scorer)}">'
        f"<strong>Validation of {esc(scorer)}</strong>{items}</div>"
    )


def validity_status(cards: dict[str, list[Card]], scorer: str) -> str:
    """One line for beside a headline a scorer makes (the prediction-powered shares, which open
    the page): validated or not, in the validation card's words; the card itself, with every
    figure, stays with the scorer's scores. People (``human``) are the reference: no line."""
    if scorer.split(":")[0] == "human":
        return ""
    own = cards.get(scorer) or []
    graded = [(c, *grade(c, [x for every in cards.values() for x in every])) for c in own]
    passed = [(c, why) for c, word, why in graded if word == "validated"]
    if passed:
        card, why = passed[0]
        mark, text = "validated", f"validated on {card.name} ({why})"
    elif graded:
        mark, text = (
            "failed-validation",
            "failed its validation: " + "; ".join(f"{c.name}: {why}" for c, _, why in graded),
        )
    else:
        mark, text = "unvalidated", f"not validated: {UNVALIDATED}"
    return (
        f'<p class="intima-validity intima-{mark} intima-status" data-scorer="{esc(scorer)}">'
        f"<strong>{esc(scorer)}</strong> {esc(text)}. Its validation card: under Scores.</p>"
    )


def _card(card: Card, word: str, why: str) -> str:
    facts = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in card.facts())
    return (
        f'<details class="intima-card" data-source="{esc(card.source)}" data-grade="{esc(word)}">'
        f"<summary><strong>{_HEADLINE[word]}</strong> ({esc(card.source)}): {esc(card.scorer)} "
        f"{esc(card.version)} on {esc(card.name)} · {esc(why)}</summary><dl>{facts}<dt>Method</dt>"
        f"<dd>{esc(card.method)} · see Methodology</dd></dl></details>"
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
        '<div class="intima-scroll"><table class="intima-scores intima-means" id="mean-scores">'
        "<thead><tr>"
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
            f'<tr data-run-id="{esc(run_id)}"><td class="model">{esc(label)}</td>'
            f'<td class="num raw">{raw_s}</td><td class="num mean">{avg}</td></tr>'
        )
    out.append("</tbody></table></div>")
    return "".join(out)
