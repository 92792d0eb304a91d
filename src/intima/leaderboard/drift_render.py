"""The drift view's table and transcripts, rendered once for the static site and the app.

One definition: the site embeds these fragments (each scorer's and scope's table in a
``<template>``, each conversation's transcript in its ``data/c<i>.js``) and ``drift.js`` only
chooses, loads and swaps them in; the app's Drift tab (:mod:`.app`) shows the very same
fragments. The charts are :func:`intima.leaderboard.charts.drift_charts`, shared the same way;
the table and the charts are views of :data:`intima.leaderboard.views.VIEWS`.

Store text (model labels, user messages, replies, rationales, scorer names) is untrusted: every
fragment is a :class:`markupsafe.Markup` built from literal templates here, store text only
ever an argument, which markupsafe escapes. Numbers are formatted here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from markupsafe import Markup

from intima.core.ratings import RatingSet
from intima.leaderboard.detail import CATEGORY_HEAD, level_cells, primary_shown
from intima.leaderboard.render import clip, pct
from intima.results.conversations import default_scorer
from intima.results.drift import DRIFT_METRICS, DriftTable, Estimate, drift_note

if TYPE_CHECKING:
    from intima.converse import ConversationTurn
    from intima.results.conversations import ConversationBoard

#: Above the charts, on the site and in the app.
INTRO: Final = (
    "Each conversation starts from an INTIMA prompt and a simulated user continues it. A rate "
    "is the share of conversations whose reply at that turn has the label (95% intervals); the "
    "slope says how fast it changes per turn."
)
#: What the table's columns are, in order.
COLUMNS: Final = (
    "Model", "Conversations", "Reinforcing slope (pp/turn)", "Boundary slope (pp/turn)",
    "Boundary kept at turn 1, dropped later", "Turns without a label",
)  # fmt: skip
#: What the app's Drift tab and the site's drift section show when no scorer rated a turn.
NOT_RATED: Final = "No turn is rated yet: judge or score the conversation runs, then rebuild."


def busiest_scorer(board: ConversationBoard, scorers: Sequence[str]) -> str | None:
    """The scorer the drift view shows first: the one that rated the most turns (one human
    rating must not open the view on an empty chart); on a tie, the usual order (panel
    first)."""
    counts = Counter(rs.scorer for rs in board.rating_sets if rs.scored and rs.scorer in scorers)
    if not counts:
        return default_scorer(list(scorers))
    most = max(counts.values())
    return default_scorer([s for s in scorers if counts[s] == most])


def points(x: float) -> str:
    """Percentage points with their sign; a value that rounds to zero reads ``0.0``, never
    ``+0.0`` or ``-0.0`` (an interval ``[-0.0, +0.0]`` would suggest a direction there is
    not)."""
    v = round(x, 1)
    return "0.0" if v == 0 else f"{v:+.1f}"


def _slope(est: Estimate) -> Markup:
    if est.value is None:
        return Markup('<span class="rate">–</span>')
    ends = (
        Markup()
        if est.lo is None or est.hi is None
        else Markup('<span class="ci"> [{}, {}]</span>').format(points(est.lo), points(est.hi))
    )
    return Markup('<span class="rate">{}</span>{}').format(points(est.value), ends)


def _dropped(est: Estimate) -> Markup:
    ends = (
        Markup()
        if est.value is None
        else Markup('<span class="ci"> [{}, {}]</span>').format(pct(est.lo), pct(est.hi))
    )
    return Markup('<span class="rate">{}</span>{}<span class="ci"> n={}</span>').format(
        pct(est.value), ends, est.n
    )


def _without_label(counts: Mapping[str, int]) -> str:
    """Turns without a label, by why (plain text)."""
    said = [f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n > 0]
    return ", ".join(said) or "0"


def table_html(table: DriftTable, scope: str, run_ids: Sequence[str]) -> Markup:
    """Per configuration of ``scope``: its conversations, both slopes with their intervals,
    the dropped-boundary share and its ``n``, and its turns without a label (and why); then
    the note on the minimum and on how the numbers are made. ``run_ids``: the configurations in
    the view's order (a row's ``data-config`` is its position there)."""
    index = {run_id: i for i, run_id in enumerate(run_ids)}
    head = Markup("").join(Markup("<th>{}</th>").format(h) for h in COLUMNS)
    body = []
    for r in (r for r in table.rows if r.scope == scope):
        title = Markup(' title="{}"').format(r.note) if r.note else Markup()
        slopes = Markup("").join(
            Markup('<td class="num slope" data-metric="{}">{}</td>').format(m, _slope(r.slope[m]))
            for m in DRIFT_METRICS
        )
        body.append(
            Markup(
                '<tr data-config="{}"><td class="model"{}>{}{}</td><td class="num">{}</td>{}'
                '<td class="num dropped">{}</td><td class="unscored">{}</td></tr>'
            ).format(
                index.get(r.config, -1), title, r.label, "" if r.enough else " *",
                r.n_conversations, slopes, _dropped(r.dropped), _without_label(r.not_scored),
            )
        )  # fmt: skip
    note = drift_note(table.bootstrap, table.seed, table.min_conversations)
    return Markup(
        '<div class="scroll"><table id="drift-table" class="scores"><thead><tr>{}</tr>'
        "</thead><tbody>{}</tbody></table></div>"
        '<p class="drift-note">* fewer than {} scored conversations (or '
        "a single turn): shown, but no slope is claimed. {}</p>"
    ).format(head, Markup("").join(body), table.min_conversations, note)


@dataclass(frozen=True)
class Conversation:
    """One conversation of one configuration, its turns in order."""

    id: str
    turns: tuple[ConversationTurn, ...]

    @property
    def choice(self) -> str:
        """How a menu names it (plain text, escaped where it is shown): its code and the start
        of its first message."""
        first = self.turns[0]
        return f"{first.code} · {' '.join(first.user_text.split())[:70]}"


def conversations(board: ConversationBoard) -> dict[str, list[Conversation]]:
    """Per run id (in ``board.runs`` order), its conversations in the store's order."""
    grouped: dict[str, dict[str, list[ConversationTurn]]] = {r: {} for r, _ in board.runs}
    for t in board.turns:
        grouped.setdefault(t.run_id, {}).setdefault(t.conversation_id, []).append(t)
    return {
        run_id: [Conversation(cid, tuple(ts)) for cid, ts in convs.items()]
        for run_id, convs in grouped.items()
    }


def ratings_by_response(sets: Sequence[RatingSet]) -> dict[str, list[RatingSet]]:
    out: dict[str, list[RatingSet]] = {}
    for rs in sets:
        out.setdefault(rs.response_id, []).append(rs)
    return out


def transcript_html(conv: Conversation, ratings: Mapping[str, Sequence[RatingSet]]) -> Markup:
    """Every turn of one conversation: the user's message, the reply (or why there is none),
    each scorer's levels and primary label, and the rationales. ``ratings``: per response id
    (:func:`ratings_by_response`)."""
    first = conv.turns[0]
    out = [
        Markup('<div class="transcript" data-conversation-id="{}"><h4>{} · {}</h4>').format(
            conv.id, first.code, first.dimension
        )
    ]
    for t in conv.turns:
        who = "User (the INTIMA prompt)" if t.turn == 1 else "Simulated user"
        out.append(
            Markup(
                '<div class="turn" data-turn="{0}"><h4>Turn {0}</h4>'
                '<div class="who">{1}</div><pre class="user">{2}</pre>'
            ).format(t.turn, who, clip(t.user_text))
        )
        if t.user_status not in ("seed", "ok"):
            out.append(
                Markup(
                    '<p class="status">The simulated user stopped here '
                    "({}); no reply was asked for.</p></div>"
                ).format(t.user_status.replace("_", " "))
            )
            continue
        out.append(Markup('<div class="who">Assistant</div>'))
        if t.response_text is None:
            out.append(
                Markup('<p class="status">No reply ({}).</p></div>').format(t.response_status)
            )
            continue
        out.append(Markup('<pre class="assistant">{}</pre>').format(clip(t.response_text)))
        out.append(_ratings(ratings.get(t.response_id or "", ())) + Markup("</div>"))
    out.append(Markup("</div>"))
    return Markup("").join(out)


def _ratings(sets: Sequence[RatingSet]) -> Markup:
    if not sets:
        return Markup('<div class="turn-ratings"><p class="status">Not rated yet.</p></div>')
    rows = Markup("").join(
        Markup('<tr data-scorer="{0}"><td>{0}</td><td class="primary">{1}</td>{2}</tr>').format(
            rs.scorer, primary_shown(rs), level_cells(rs)
        )
        for rs in sets
    )
    reasons = Markup("").join(
        Markup('<p class="reason"><strong>{}: </strong>{}</p>').format(rs.scorer, rs.reason)
        for rs in sets
        if rs.reason
    )
    return Markup(
        '<div class="turn-ratings"><div class="scroll"><table class="ratings"><tr><th>scorer'
        "</th><th>primary</th>{}</tr>{}</table></div>{}</div>"
    ).format(CATEGORY_HEAD, rows, reasons)


#: The fragments' look in the app (the site's is the drift part of ``static/board.css``):
#: the same layout, in colours that read on Gradio's light and dark themes.
APP_CSS: Final = Markup("""
.intima-drift .drift-note { font-size: 12px; opacity: 0.75; }
.intima-drift .scroll { overflow-x: auto; max-width: 100%; }
/* More specific than Gradio's own .prose table rules (a border round every row, a margin). */
.intima-drift div.scroll table { border-collapse: collapse; margin: 0; border: 0; }
.intima-drift div.scroll table tr { border: 0; }
.intima-drift table.scores { width: 100%; }
.intima-drift table.scores th, .intima-drift table.scores td { padding: 4px 8px; border: 0;
  border-bottom: 1px solid rgba(127,127,127,0.25); text-align: left; white-space: nowrap;
  vertical-align: top; }
.intima-drift table.scores th { white-space: normal; vertical-align: bottom; }
.intima-drift td.model { white-space: normal; overflow-wrap: anywhere; min-width: 10em;
  max-width: 16em; }
.intima-drift td.num { font-variant-numeric: tabular-nums; white-space: normal; }
.intima-drift td.num .rate { white-space: nowrap; }
.intima-drift .ci { opacity: 0.65; font-size: 12px; display: inline-block; white-space: nowrap;
  margin-left: 0.3em; }
.intima-drift .turn { border-top: 1px solid rgba(127,127,127,0.25); padding: 6px 0; }
.intima-drift h4 { margin: 6px 0 4px; }
.intima-drift pre { white-space: pre-wrap; word-break: break-word; padding: 8px;
  border-radius: 4px; margin: 2px 0 6px; background: rgba(127,127,127,0.1); }
.intima-drift pre.assistant { background: rgba(42,122,176,0.12); }
.intima-drift .who { font-size: 12px; opacity: 0.75; font-weight: 600; }
.intima-drift .status { color: #c06a00; font-size: 13px; }
.intima-drift table.ratings { font-size: 12px; }
.intima-drift table.ratings th, .intima-drift table.ratings td { border: 1px solid
  rgba(127,127,127,0.25); padding: 2px 4px; text-align: center; }
.intima-drift table.ratings th.cat { writing-mode: vertical-rl; transform: rotate(180deg);
  font-weight: normal; }
.intima-drift td.lv1 { background: rgba(224,90,85,0.25); }
.intima-drift td.lv2 { background: rgba(224,90,85,0.6); }
.intima-drift .reason { font-size: 13px; }
""")
