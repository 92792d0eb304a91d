"""HTML fragments of the drift tab of the Gradio app, built server-side.

The same numbers as the static site's drift view (:mod:`intima.leaderboard.drift_view`); the
charts of both are :func:`intima.leaderboard.charts.drift_charts`. Every
piece of store text (labels, user messages, replies, rationales) goes through
:func:`~intima.leaderboard.render.esc` before it touches markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from intima.core.ratings import RatingSet
from intima.leaderboard import charts
from intima.leaderboard.render import clip, esc, pct
from intima.results.drift import DriftTable, Estimate
from intima.results.table import CATEGORIES

if TYPE_CHECKING:
    from intima.converse import ConversationTurn
    from intima.results.conversations import ConversationBoard


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


def _one_line(text: str) -> str:
    return " ".join(text.split())


def drift_tab(conv: ConversationBoard, bootstrap: int, seed: int) -> None:
    """The app's Drift tab (call inside its Blocks): rates by turn (a line per model), slopes
    and dropped boundaries, and a transcript explorer: the static site's drift view."""
    import gradio as gr

    from intima.leaderboard.drift_view import busiest_scorer
    from intima.results.conversations import drift_tables

    tables = drift_tables(conv, bootstrap=bootstrap, seed=seed)
    s0 = busiest_scorer(conv, list(tables))
    scopes = tables[s0].scopes if s0 else ["all"]

    run_ids = [run_id for run_id, _ in conv.runs]

    def numbers(scorer: str | None, scope: str) -> tuple[str, str]:
        if scorer not in tables:
            return "<p>No turn is rated yet.</p>", ""
        t = tables[str(scorer)]
        return charts.drift_charts(t, scope, run_ids), drift_numbers(t, scope)

    by_conv: dict[tuple[str, str], list[Any]] = {}
    for t in conv.turns:
        by_conv.setdefault((t.run_id, t.conversation_id), []).append(t)

    def choices(run_id: str | None) -> list[tuple[str, str]]:
        return [
            (f"{ts[0].code}: {_one_line(ts[0].user_text)[:70]}", cid)
            for (r, cid), ts in by_conv.items()
            if r == run_id
        ]

    def show(run_id: str | None, cid: str | None) -> str:
        return transcript(by_conv.get((run_id or "", cid or ""), []), conv.rating_sets)

    with gr.Row():
        scorer = gr.Dropdown(list(tables), value=s0, label="Scorer", elem_id="drift-scorer")
        scope = gr.Dropdown(scopes, value="all", label="Dimension", elem_id="drift-scope")
    first = numbers(s0, "all")
    lines = gr.HTML(first[0], elem_id="drift-charts")
    nums = gr.HTML(first[1], elem_id="drift-numbers")
    for ctl in (scorer, scope):
        ctl.change(numbers, [scorer, scope], [lines, nums])
    gr.Markdown("### Transcript explorer")
    runs = [(label, run_id) for run_id, label in conv.runs]
    r0 = runs[0][1] if runs else None
    c_choices = choices(r0)
    c0 = c_choices[0][1] if c_choices else None
    with gr.Row():
        model = gr.Dropdown(runs, value=r0, label="Model", elem_id="drift-config")
        chosen = gr.Dropdown(c_choices, value=c0, label="Conversation", elem_id="drift-conv")
    html = gr.HTML(show(r0, c0), elem_id="drift-transcript")

    def refilter(run_id: str) -> Any:
        new = choices(run_id)
        return gr.update(choices=new, value=new[0][1] if new else None)

    model.change(refilter, [model], chosen)
    chosen.change(show, [model, chosen], html)
