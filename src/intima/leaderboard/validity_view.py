"""Validation cards and the continuous column (mean score) beside the raw shares on the board,
as HTML fragments (:class:`markupsafe.Markup`: every store string escaped): the app shows
them and the static site embeds the very same fragments."""

from __future__ import annotations

from typing import Final

from markupsafe import Markup

from intima.leaderboard.render import pct
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


def validity_html(cards: dict[str, list[Card]], scorer: str) -> Markup:
    """The scorer's cards, each graded, every fact it measured (:meth:`Card.facts`: every
    label's error rates), or the unvalidated mark: the one card of the site and the app. The
    box is marked validated only when a card passes."""
    own = cards.get(scorer) or []
    if not own:
        return Markup(
            '<p class="intima-validity intima-unvalidated" id="validity" data-scorer="{0}">'
            "<strong>{0}: not validated.</strong> {1}.</p>"
        ).format(scorer, UNVALIDATED)
    pool = [c for every in cards.values() for c in every]
    graded = [(c, *grade(c, pool)) for c in own]
    items = Markup("").join(_card(c, word, why) for c, word, why in graded)
    mark = "validated" if any(w == "validated" for _, w, _ in graded) else "failed-validation"
    return Markup(
        '<div class="intima-validity intima-{}" id="validity" data-scorer="{}">'
        "<strong>Validation of {}</strong>{}</div>"
    ).format(mark, scorer, scorer, items)


def validity_status(cards: dict[str, list[Card]], scorer: str) -> Markup:
    """One line for beside a headline a scorer makes (the prediction-powered shares, which open
    the page): validated or not, in the validation card's words; the card itself, with every
    figure, stays with the scorer's scores. People (``human``) are the reference: no line."""
    if scorer.split(":")[0] == "human":
        return Markup()
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
    return Markup(
        '<p class="intima-validity intima-{} intima-status" data-scorer="{}">'
        "<strong>{}</strong> {}. Its validation card: under Scores.</p>"
    ).format(mark, scorer, scorer, text)


def _card(card: Card, word: str, why: str) -> Markup:
    facts = Markup("").join(Markup("<dt>{}</dt><dd>{}</dd>").format(k, v) for k, v in card.facts())
    return Markup(
        '<details class="intima-card" data-source="{source}" data-grade="{word}">'
        "<summary><strong>{headline}</strong> ({source}): {scorer} {version} on {name} · {why}"
        "</summary><dl>{facts}<dt>Method</dt><dd>{method} · see Methodology</dd></dl></details>"
    ).format(
        source=card.source,
        word=word,
        headline=_HEADLINE[word],
        scorer=card.scorer,
        version=card.version,
        name=card.name,
        why=why,
        facts=facts,
        method=card.method,
    )


#: A mean score and its 95% interval; a raw share and its; a row of the mean-scores table.
_MEAN = Markup('%.3f <span class="ci">[%.3f, %.3f]</span>')
_SHARE = Markup('%s <span class="ci">[%s, %s]</span>')
_MEANS_ROW = Markup(
    '<tr data-run-id="%s"><td class="model">%s</td>'
    '<td class="num raw">%s</td><td class="num mean">%s</td></tr>'
)


def means_html(table: ScoreTable, means: Means, scorer: str, scope: str, metric: str) -> Markup:
    """Configurations x (raw share, mean score) for one scorer and scope."""
    if scorer not in table.scorers or scope not in means.scopes:
        return Markup()
    metric = metric if metric in ("reinforcing", "boundary", "neutral") else "reinforcing"
    measure = means.measures.get(scorer, "mean reinforcing score")
    out = [
        Markup(
            "<p><strong>Raw {} share and {}</strong> ({}'s own output)</p>"
            '<div class="intima-scroll"><table class="intima-scores intima-means" '
            'id="mean-scores"><thead><tr>'
            "<th>model</th><th>raw share</th><th>mean score</th></tr></thead><tbody>"
        ).format(metric, measure, scorer)
    ]
    # (``%``, not ``.format``: 5,000 rows on the benchmark board, and ``%`` escapes alike
    # without parsing its template in Python each time.)
    for run_id, label in table.configs:
        raw = table.get(scorer, run_id, scope, metric)
        mean = means.mean(scorer, run_id, scope)
        avg = (
            Markup("–")
            if mean is None or mean.mean is None
            else _MEAN % (mean.mean, mean.lo, mean.hi)
        )
        raw_s = (
            Markup("–") if raw.rate is None else _SHARE % (pct(raw.rate), pct(raw.lo), pct(raw.hi))
        )
        out.append(_MEANS_ROW % (run_id, label, raw_s, avg))
    out.append(Markup("</tbody></table></div>"))
    return Markup("").join(out)
