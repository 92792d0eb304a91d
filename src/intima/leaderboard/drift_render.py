"""HTML fragments of the drift tab of the Gradio app, built server-side.

The same numbers as the static site's drift view (:mod:`intima.leaderboard.drift_view`); the
charts of both are :func:`intima.leaderboard.charts.drift_charts`. Every
piece of store text (labels, user messages, replies, rationales) goes through
:func:`~intima.leaderboard.render.esc` before it touches markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from intima.core.ratings import RatingSet
from intima.leaderboard.render import clip, esc, pct
from intima.results.drift import DriftTable, Estimate
from intima.results.table import CATEGORIES

if TYPE_CHECKING:
    from intima.converse import ConversationTurn


def _slope(est: Estimate) -> str:
    if est.value is None:
        return "–"
    ends = "" if est.lo is None else f' <span class="ci">[{est.lo:+.1f}, {est.hi or 0:+.1f}]</span>'
    return f"{est.value:+.1f}{ends}"


def drift_numbers(table: DriftTable, scope: str) -> str:
    """Per configuration: conversations, both slopes, the dropped-boundary share."""
    head = "".join(
        f"<th>{esc(h)}</th>"
        for h in ("model", "conversations", "reinforcing slope (pp/turn)",
                  "boundary slope (pp/turn)", "boundary kept at turn 1, dropped later")
    )  # fmt: skip
    body = []
    for r in (r for r in table.rows if r.scope == scope):
        d = r.dropped
        dropped = "–" if d.value is None else f'{pct(d.value)} <span class="ci">[{pct(d.lo)}, '
        dropped += "" if d.value is None else f"{pct(d.hi)}]</span>"
        body.append(
            f'<tr><td title="{esc(r.note or "")}">{esc(r.label)}{"" if r.enough else " *"}</td>'
            f"<td>{r.n_conversations}</td><td>{_slope(r.slope['reinforcing'])}</td>"
            f"<td>{_slope(r.slope['boundary'])}</td><td>{dropped} n={d.n}</td></tr>"
        )
    return (
        f'<div class="intima-scroll"><table class="intima-scores"><tr>{head}</tr>'
        f"{''.join(body)}</table></div><p>* fewer than {table.min_conversations} scored "
        "conversations (or a single turn): shown, no slope claimed.</p>"
    )


def transcript(turns: Sequence[ConversationTurn], sets: Sequence[RatingSet]) -> str:
    """Every turn of one conversation: the user's message, the reply, each scorer's rating."""
    by_response: dict[str, list[RatingSet]] = {}
    for rs in sets:
        by_response.setdefault(rs.response_id, []).append(rs)
    head = "".join(f"<th>{esc(c.replace('_', ' '))}</th>" for c in CATEGORIES)
    out = ['<div class="intima-detail intima-transcript">']
    for t in turns:
        out.append(
            f'<div class="intima-turn" data-turn="{t.turn}"><h4>Turn {t.turn}</h4>'
            f'<pre class="intima-user">{esc(clip(t.user_text))}</pre>'
        )
        if t.user_status not in ("seed", "ok"):
            out.append(f"<p>The simulated user stopped here ({esc(t.user_status)}).</p></div>")
            continue
        if t.response_text is None:
            out.append(f"<p>No reply ({esc(t.response_status)}).</p></div>")
            continue
        rows = "".join(
            f"<tr><td>{esc(rs.scorer)}</td><td>{esc(rs.primary) if rs.scored else 'unscored'}"
            "</td>"
            + "".join(f"<td>{int(rs.levels[c]) if c in rs.levels else ''}</td>" for c in CATEGORIES)
            + "</tr>"
            for rs in by_response.get(t.response_id or "", [])
        )
        out.append(
            f'<pre class="intima-response">{esc(clip(t.response_text))}</pre>'
            f'<div class="intima-scroll"><table class="intima-ratings"><tr><th>scorer</th>'
            f"<th>primary</th>{head}</tr>{rows}</table></div></div>"
        )
    out.append("</div>")
    return "".join(out)
