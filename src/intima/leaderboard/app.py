"""The interactive leaderboard in Gradio (``intima board serve``).

Same numbers and the same views as the static site (one
:class:`~intima.results.board.BoardView`; every view of it declared once in
:data:`intima.leaderboard.views.VIEWS`, which the app places tab by tab and redraws when a menu
changes: :mod:`.page`), plus filters by scorer, dimension and code, a side-by-side comparison
of two configurations on one prompt, the methodology, and a form that queues a model request.
All store text is escaped in :mod:`intima.leaderboard.render` before it reaches a ``gr.HTML``.

Why HTML and not the Hub leaderboards' ``gradio_leaderboard`` component: its latest release
(0.0.14) requires ``gradio<6`` and intima runs on Gradio 6; and a cell here holds a rate, its
interval and a rank mark, escaped in one place, which a plain ``gr.Dataframe`` cannot show
without stringifying the numbers (and losing numeric sort). Revisit when the component supports
Gradio 6.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from markupsafe import Markup

from intima.leaderboard import drift_render, method_view, render, wording
from intima.leaderboard.models_view import hide_css, model_rows
from intima.leaderboard.page import (
    ALL_CODES,
    MENU_AXES,
    BoardIndex,
    Explorers,
    Menus,
    Page,
    first_pick,
    menu_choices,
    pick,
    views_of,
)
from intima.leaderboard.request_tab import request_tab
from intima.leaderboard.views import VIEWS, Pick, View
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.results.board import BoardView, assemble_board
from intima.results.table import METRICS

if TYPE_CHECKING:
    import gradio as gr

    from intima.leaderboard.stored import StoredBoard

#: The form's backend: (spec, requester, session) -> the answer as escaped HTML.
RequestFn = Callable[[str, str, str], str]


class LiveSource(Protocol):
    """Data that changes while the app runs (the Space, :mod:`intima.leaderboard.space`): the
    callbacks read the current index through it, and it wires its own updates into the page."""

    def index(self) -> BoardIndex: ...

    def wire(self, page: Page) -> None: ...


def header_html(view: BoardView, title: str) -> Markup:
    """The title, and under it what the board measures on which prompts, and how much of them
    its configurations answered (a Space redraws it as results arrive)."""
    runs = view.data.runs
    subtitle = wording.board_subtitle([r.dataset_id for r in runs], [r.coverage for r in runs])
    return Markup(
        '<h1 id="board-title">{}</h1><p id="board-subtitle">{} See Methodology.</p>'
    ).format(title, subtitle)


def methodology_html(view: BoardView) -> Markup:
    """The board's methodology (:mod:`.method_view`, the site's too)."""
    return method_view.methodology_html(view.data.methodology, view.bootstrap, view.seed)


Current = Callable[[], BoardIndex]
#: A box's views read as one fragment, as on the site (an empty one takes no room).
_BOX_CSS = Markup("#board-table { gap: 0; }")


def build_app(
    view: BoardView,
    store_path: Path | None = None,
    *,
    live: LiveSource | None = None,
    submit: RequestFn | None = None,
    closed: str | None = None,
    title: str | None = None,
) -> gr.Blocks:
    """The app, rendering ``view`` (:func:`intima.results.board.assemble_board`, its drift
    from the conversations it was given). ``live`` swaps the board while it runs; ``submit``
    replaces the local queue as the form's backend; ``closed`` makes the form read-only,
    saying why."""
    import gradio as gr

    idx = BoardIndex(view)
    cur: Current = live.index if live is not None else lambda: idx
    runs = view.data.runs
    title = title or wording.board_title([r.dataset_id for r in runs], [r.coverage for r in runs])
    start = first_pick(idx)
    now = pick(idx, *start)
    with gr.Blocks(title=title) as demo:
        gr.HTML(Markup("<style>{}{}</style>").format(render.CSS, _BOX_CSS), visible=True)
        header = gr.HTML(header_html(view, title))
        notice = gr.HTML("", elem_id="board-notice") if live is not None else None
        with gr.Tab("Leaderboard"):
            board_menus = _board_menus(idx, start, cur)
            shown = _place(view, now, "Leaderboard")
        with gr.Tab("Responses"):
            responses = _responses_tab(idx, cur)
        with gr.Tab("Compare"):
            compare = _compare_tab(idx, cur)
        has_turns = view.conversations is not None and bool(view.conversations.turns)
        with gr.Tab("Drift", visible=has_turns) as drift_tab:
            drift_menus, drift_views, transcripts = _drift_tab(idx, start, now, cur)
        shown |= drift_views
        with gr.Tab("Methodology"):
            shown |= _place(view, now, "Methodology")
        with gr.Tab("Request a model"):
            request_tab(store_path, closed, submit)
        menus = Menus(*board_menus, *drift_menus)
        _redraw_on_change(menus, shown, cur)
        page = Page(
            demo,
            header,
            notice,
            menus,
            shown,
            drift_tab,
            Explorers(*responses, *compare, *transcripts),
        )
        if live is not None:
            live.wire(page)
    return demo


def _place(view: BoardView, now: Pick, tab: str) -> dict[str, gr.HTML]:
    """Every view of ``tab`` in :data:`VIEWS`' order, under its heading, neighbours of one box
    inside one element (the score table's: ``#board-table``)."""
    import gradio as gr

    placed = {}
    for box, group in itertools.groupby((v for v in VIEWS if v.tab == tab), lambda v: v.box):
        with gr.Column(elem_id=box) if box else contextlib.nullcontext():
            for v in group:
                if v.heading:
                    gr.Markdown(f"### {v.heading}")
                placed[v.name] = gr.HTML(v.render(view, now), elem_id=v.name)
    return placed


def _redraw_on_change(menus: Menus, shown: dict[str, gr.HTML], cur: Current) -> None:
    """Each menu redraws the views that change with it, from the current board."""
    every = menus.all()
    missing = {v.name for v in VIEWS} - set(shown)
    if missing:  # a view the app does not place: the Space's refresh would fail on it
        raise AssertionError(f"views placed on no tab: {sorted(missing)}")

    def draw(views: list[View], *values: Any) -> list[str]:
        ix = cur()
        now = pick(ix, *values)
        return [v.render(ix.view, now) for v in views]

    for name, menu in zip(MENU_AXES, every, strict=True):
        views = views_of(name)
        menu.change(functools.partial(draw, views), every, [shown[v.name] for v in views])


def _board_menus(ix: BoardIndex, start: list[Any], cur: Current) -> list[gr.Dropdown]:
    """The leaderboard's menus, and the search over models that hides the tables' rows."""
    import gradio as gr

    offered = menu_choices(ix)
    with gr.Row():
        menus = [
            gr.Dropdown(offered[i], value=start[i], label=label, elem_id=elem_id)
            for i, (label, elem_id) in enumerate(
                (("Scorer", "f-scorer"), ("Dimension", "f-dimension"), ("Code", "f-code"),
                 ("Rank by", "f-sort"))
            )
        ]  # fmt: skip
    search = gr.Textbox(
        label="Search models", placeholder="name, size, type, licence", elem_id="f-model-search"
    )
    hide = gr.HTML("", elem_id="board-model-filter")
    search.change(
        lambda query: hide_css(model_rows(cur().data, cur().table.configs), query), [search], hide
    )
    return menus


def _responses_tab(ix: BoardIndex, cur: Current) -> list[Any]:
    """A configuration's response to a prompt, with every rating: ex_config, ex_code,
    ex_prompt and the detail."""
    import gradio as gr

    configs = ix.config_choices()
    c0 = configs[0][1] if configs else None
    with gr.Row():
        config = gr.Dropdown(configs, value=c0, label="Model", elem_id="ex-config")
        code = gr.Dropdown([ALL_CODES, *ix.codes], value=ALL_CODES, label="Code", elem_id="ex-code")
    prompts = ix.prompt_choices(c0)
    p0 = prompts[0][1] if prompts else None
    prompt = gr.Dropdown(prompts, value=p0, label="Prompt", elem_id="ex-prompt")
    detail = gr.HTML(ix.detail(c0, p0), elem_id="ex-detail")

    def refilter(run_id: str, code_: str) -> Any:
        choices = cur().prompt_choices(run_id, code_)
        return gr.update(choices=choices, value=choices[0][1] if choices else None)

    for ctl in (config, code):
        ctl.change(refilter, [config, code], prompt)
    for ctl in (prompt, config):
        ctl.change(lambda r, p: cur().detail(r, p), [config, prompt], detail)
    return [config, code, prompt, detail]


def _compare_tab(ix: BoardIndex, cur: Current) -> list[Any]:
    """Two configurations on one prompt, and their numbers side by side."""
    import gradio as gr

    configs = ix.config_choices()
    c0 = configs[0][1] if configs else None
    c1 = configs[1][1] if len(configs) > 1 else c0
    prompts = ix.prompt_choices()
    p0 = prompts[0][1] if prompts else None
    prompt = gr.Dropdown(prompts, value=p0, label="Prompt", elem_id="cmp-prompt")
    with gr.Row():
        with gr.Column(min_width=320):
            a = gr.Dropdown(configs, value=c0, label="Model A", elem_id="cmp-a")
            a_html = gr.HTML(ix.detail(c0, p0), elem_id="cmp-a-detail")
        with gr.Column(min_width=320):
            b = gr.Dropdown(configs, value=c1, label="Model B", elem_id="cmp-b")
            b_html = gr.HTML(ix.detail(c1, p0), elem_id="cmp-b-detail")
    scorers = list(ix.table.scorers)
    first = scorers[0] if scorers else None
    with gr.Row():
        scorer = gr.Dropdown(scorers, value=first, label="Scorer", elem_id="cmp-scorer")
        metric = gr.Dropdown(
            list(METRICS), value="reinforcing", label="Rate of", elem_id="cmp-metric"
        )
    numbers = gr.HTML(ix.compare(first, "reinforcing", c0, c1), elem_id="cmp-scores")
    chosen = [scorer, metric, a, b]
    for ctl in chosen:
        ctl.change(lambda *v: cur().compare(*v), chosen, numbers)
    for side, html in ((a, a_html), (b, b_html)):
        for ctl in (prompt, side):
            ctl.change(lambda r, p: cur().detail(r, p), [side, prompt], html)
    return [prompt, a, b, a_html, b_html, scorer, metric, numbers]


def _drift_tab(
    ix: BoardIndex, start: list[Any], now: Pick, cur: Current
) -> tuple[list[gr.Dropdown], dict[str, gr.HTML], list[Any]]:
    """The site's drift section: its menus, its views (rates by turn, the table) and the
    transcript explorer, the same fragments chosen with dropdowns."""
    import gradio as gr

    offered = menu_choices(ix)
    with gr.Column(elem_classes="intima-drift"):
        gr.HTML(
            Markup('<style>{}</style><p class="drift-note">{}</p>').format(
                drift_render.APP_CSS, drift_render.INTRO
            )
        )
        with gr.Row():
            scorer = gr.Dropdown(offered[4], value=start[4], label="Scorer", elem_id="drift-scorer")
            scope = gr.Dropdown(
                offered[5], value=start[5], label="Dimension", elem_id="drift-scope"
            )
        views = _place(ix.view, now, "Drift")
        gr.Markdown("### Transcript explorer")
        runs = ix.drift_runs()
        r0 = runs[0][1] if runs else None
        convs = ix.conversation_choices(r0)
        c0 = convs[0][1] if convs else None
        with gr.Row():
            model = gr.Dropdown(runs, value=r0, label="Model", elem_id="drift-config")
            chosen = gr.Dropdown(convs, value=c0, label="Conversation", elem_id="drift-conv")
        html = gr.HTML(ix.transcript(r0, c0), elem_id="drift-transcript")

    def refilter(run_id: str) -> Any:
        new = cur().conversation_choices(run_id)
        return gr.update(choices=new, value=new[0][1] if new else None)

    model.change(refilter, [model], chosen)
    chosen.change(lambda r, c: cur().transcript(r, c), [model, chosen], html)
    return [scorer, scope], views, [model, chosen, html]


def serve(
    store_path: Path,
    board: StoredBoard | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 7860,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    block: bool = True,
) -> Any:
    """Score the store's board (``board``: :func:`~intima.leaderboard.stored.load_stored`'s,
    by default of this machine's trust set) and serve the app until interrupted (or, with
    ``block=False``, from a thread: the app is returned, ``close()`` stops it); the request
    form writes to the store itself."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    if board is None:
        from intima.bundles.trust import default_trust
        from intima.leaderboard.stored import load_stored

        board = load_stored(store_path, default_trust())
    view = assemble_board(
        board.data, bootstrap=bootstrap, seed=seed, conversations=board.conversations
    )
    demo = build_app(view, store_path)
    from intima.leaderboard.no_uploads import launch_kwargs

    # `--host 0.0.0.0` makes this a public page like the Space: it takes no files either.
    demo.launch(
        server_name=host,
        server_port=port,
        show_error=False,
        quiet=True,
        theme=render.theme(),
        prevent_thread_lock=not block,
        **launch_kwargs(),
    )
    return demo
