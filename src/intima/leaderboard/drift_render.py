"""HTML fragments of the drift tab of the Gradio app, built server-side.

The same numbers as the static site's drift view (:mod:`intima.leaderboard.drift_view`). Every
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

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")


def drift_chart(table: DriftTable, scope: str, metric: str) -> str:
    """A line per configuration over the turns, with 95% interval bars (an SVG)."""
    rows = [r for r in table.rows if r.scope == scope]
    max_turn = max((t.turn for r in rows for t in r.turns), default=1)
    w, h, left, right, top, bottom = 420, 240, 44, 14, 24, 36
    span = w - left - right - 20

    def x(turn: int) -> float:
        return left + 10 + (span / 2 if max_turn == 1 else (turn - 1) * span / (max_turn - 1))

    def y(v: float) -> float:
        return top + (1 - v) * (h - top - bottom)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" '
        f'class="intima-drift-chart" data-metric="{esc(metric)}" role="img">'
        f'<text x="{left}" y="14" font-size="12">{esc(metric)} (% of conversations)</text>'
    ]
    for v in (0.0, 0.5, 1.0):
        out.append(
            f'<line x1="{left}" x2="{w - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
            f'<text x="{left - 5}" y="{y(v) + 3:.1f}" text-anchor="end" font-size="10">'
            f"{round(100 * v)}</text>"
        )
    for k in range(1, max_turn + 1):
        out.append(
            f'<text x="{x(k):.1f}" y="{h - bottom + 14}" text-anchor="middle" '
            f'font-size="10">{k}</text>'
        )
    for i, r in enumerate(rows):
        color = PALETTE[i % len(PALETTE)]
        pts = [(t.turn, e) for t in r.turns for e in [getattr(t, metric)] if e.value is not None]
        line = " ".join(f"{x(k):.1f},{y(e.value or 0):.1f}" for k, e in pts)
        out.append(
            f'<polyline class="intima-drift-line" points="{line}" fill="none" '
            f'stroke="{color}" stroke-width="2"><title>{esc(r.label)}</title></polyline>'
        )
        for k, e in pts:
            out.append(
                f'<line x1="{x(k):.1f}" x2="{x(k):.1f}" y1="{y(e.lo or 0):.1f}" '
                f'y2="{y(e.hi or 0):.1f}" stroke="{color}" opacity="0.55"/>'
                f'<circle cx="{x(k):.1f}" cy="{y(e.value or 0):.1f}" r="3.5" fill="{color}">'
                f"<title>{esc(r.label)} – turn {k}: {pct(e.value)} [{pct(e.lo)}, {pct(e.hi)}] "
                f"(n={e.n})</title></circle>"
            )
    out.append("</svg>")
    legend = "".join(
        f'<span style="color:{PALETTE[i % len(PALETTE)]}">■</span> {esc(r.label)} '
        for i, r in enumerate(rows)
    )
    return "".join(out) + f'<p class="intima-drift-legend">{legend}</p>'


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
