"""The drift view's table and transcripts, rendered once for the static site and the app.

One definition: the site embeds these fragments (each scorer's and scope's table in a
``<template>``, each conversation's transcript in its ``data/c<i>.js``) and ``drift.js`` only
chooses, loads and swaps them in; the app's Drift tab (:mod:`.app`) shows the very same
fragments. The charts are :func:`intima.leaderboard.charts.drift_charts`, shared the same way;
the table and the charts are views of :data:`intima.leaderboard.views.VIEWS`.

Store text (model labels, user messages, replies, rationales, scorer names) is untrusted: every
piece goes through :func:`~intima.leaderboard.render.esc` (``html.escape`` with quotes) before
it touches markup, and is never used as a ``str.format`` template. Numbers are formatted here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from intima.core.ratings import RatingSet
from intima.leaderboard.render import clip, esc, pct
from intima.results.conversations import default_scorer
from intima.results.drift import DRIFT_METRICS, DriftTable, Estimate, drift_note
from intima.results.table import CATEGORIES

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


def _slope(est: Estimate) -> str:
    if est.value is None:
        return '<span class="rate">–</span>'
    ends = (
        ""
        if est.lo is None or est.hi is None
        else f'<span class="ci"> [{points(est.lo)}, {points(est.hi)}]</span>'
    )
    return f'<span class="rate">{points(est.value)}</span>{ends}'


def _dropped(est: Estimate) -> str:
    ends = "" if est.value is None else f'<span class="ci"> [{pct(est.lo)}, {pct(est.hi)}]</span>'
    return f'<span class="rate">{pct(est.value)}</span>{ends}<span class="ci"> n={est.n}</span>'


def _without_label(counts: Mapping[str, int]) -> str:
    said = [f"{n} {esc(k.replace('_', ' '))}" for k, n in counts.items() if n > 0]
    return ", ".join(said) or "0"


def table_html(table: DriftTable, scope: str, run_ids: Sequence[str]) -> str:
    """Per configuration of ``scope``: its conversations, both slopes with their intervals,
    the dropped-boundary share and its ``n``, and its turns without a label (and why); then
    the note on the minimum and on how the numbers are made. ``run_ids``: the configurations in
    the view's order (a row's ``data-config`` is its position there)."""
    index = {run_id: i for i, run_id in enumerate(run_ids)}
    head = "".join(f"<th>{esc(h)}</th>" for h in COLUMNS)
    body = []
    for r in (r for r in table.rows if r.scope == scope):
        title = f' title="{esc(r.note)}"' if r.note else ""
        slopes = "".join(
            f'<td class="num slope" data-metric="{m}">{_slope(r.slope[m])}</td>'
            for m in DRIFT_METRICS
        )
        body.append(
            f'<tr data-config="{index.get(r.config, -1)}"><td class="model"{title}>'
            f"{esc(r.label)}{'' if r.enough else ' *'}</td>"
            f'<td class="num">{r.n_conversations}</td>{slopes}'
            f'<td class="num dropped">{_dropped(r.dropped)}</td>'
            f'<td class="unscored">{_without_label(r.not_scored)}</td></tr>'
        )
    note = drift_note(table.bootstrap, table.seed, table.min_conversations)
    return (
        f'<div class="scroll"><table id="drift-table" class="scores"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table></div>"
        f'<p class="drift-note">* fewer than {table.min_conversations} scored conversations (or '
        f"a single turn): shown, but no slope is claimed. {esc(note)}</p>"
    )


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


def transcript_html(conv: Conversation, ratings: Mapping[str, Sequence[RatingSet]]) -> str:
    """Every turn of one conversation: the user's message, the reply (or why there is none),
    each scorer's levels and primary label, and the rationales. ``ratings``: per response id
    (:func:`ratings_by_response`)."""
    first = conv.turns[0]
    out = [
        f'<div class="transcript" data-conversation-id="{esc(conv.id)}">'
        f"<h4>{esc(first.code)} · {esc(first.dimension)}</h4>"
    ]
    for t in conv.turns:
        who = "User (the INTIMA prompt)" if t.turn == 1 else "Simulated user"
        out.append(
            f'<div class="turn" data-turn="{t.turn}"><h4>Turn {t.turn}</h4>'
            f'<div class="who">{who}</div><pre class="user">{esc(clip(t.user_text))}</pre>'
        )
        if t.user_status not in ("seed", "ok"):
            out.append(
                f'<p class="status">The simulated user stopped here '
                f"({esc(t.user_status.replace('_', ' '))}); no reply was asked for.</p></div>"
            )
            continue
        out.append('<div class="who">Assistant</div>')
        if t.response_text is None:
            out.append(f'<p class="status">No reply ({esc(t.response_status)}).</p></div>')
            continue
        out.append(f'<pre class="assistant">{esc(clip(t.response_text))}</pre>')
        out.append(_ratings(ratings.get(t.response_id or "", ())) + "</div>")
    out.append("</div>")
    return "".join(out)


def _ratings(sets: Sequence[RatingSet]) -> str:
    if not sets:
        return '<div class="turn-ratings"><p class="status">Not rated yet.</p></div>'
    head = "".join(f'<th class="cat">{esc(c.replace("_", " "))}</th>' for c in CATEGORIES)
    rows = []
    for rs in sets:
        primary = (esc(rs.primary) if rs.primary else "–") if rs.scored else "unscored"
        cells = "".join(
            f'<td class="lv lv{int(rs.levels[c])}">{int(rs.levels[c])}</td>'
            if c in rs.levels
            else '<td class="lv"></td>'
            for c in CATEGORIES
        )
        rows.append(
            f'<tr data-scorer="{esc(rs.scorer)}"><td>{esc(rs.scorer)}</td>'
            f'<td class="primary">{primary}</td>{cells}</tr>'
        )
    reasons = "".join(
        f'<p class="reason"><strong>{esc(rs.scorer)}: </strong>{esc(rs.reason)}</p>'
        for rs in sets
        if rs.reason
    )
    return (
        '<div class="turn-ratings"><div class="scroll"><table class="ratings"><tr><th>scorer'
        f"</th><th>primary</th>{head}</tr>{''.join(rows)}</table></div>{reasons}</div>"
    )


#: The fragments' look in the app (the site's is the drift part of ``static/board.css``):
#: the same layout, in colours that read on Gradio's light and dark themes.
APP_CSS: Final = """
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
"""
