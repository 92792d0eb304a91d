"""The interactive leaderboard in Gradio (``intima board serve``).

Same numbers and the same views as the static site (one
:class:`~intima.results.board.BoardView`, rendered by the same functions), plus
filters by scorer, dimension and code, a side-by-side comparison of two configurations on one
prompt, the methodology, and a form that queues a model request. All store text is escaped in
:mod:`intima.leaderboard.render` before it reaches a ``gr.HTML``.

Why HTML and not the Hub leaderboards' ``gradio_leaderboard`` component: its latest release
(0.0.14) requires ``gradio<6`` and intima runs on Gradio 6; and a cell here holds a rate, its
interval and a rank mark, escaped in one place, which a plain ``gr.Dataframe`` cannot show
without stringifying the numbers (and losing numeric sort). Revisit when the component supports
Gradio 6.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from markupsafe import Markup

from intima.core.ratings import RatingSet
from intima.leaderboard import (
    charts,
    compare_view,
    drift_render,
    method_view,
    models_view,
    prediction_view,
    render,
    validity_view,
    wording,
)
from intima.leaderboard.request_tab import request_tab
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.results.board import BoardView, assemble_board
from intima.results.conversations import ConversationBoard, load_conversations
from intima.results.data import load_board
from intima.results.table import (
    LABEL_METRICS,
    METRICS,
    OVERALL,
    code_scope,
    dims_in,
)
from intima.store import StoredResponse

if TYPE_CHECKING:
    import gradio as gr

ALL_CODES = "(all codes)"
#: The form's backend: (spec, requester, session) -> the answer as escaped HTML.
RequestFn = Callable[[str, str, str], str]
#: The leaderboard tab with nothing scored.
EMPTY_BOARD: tuple[str, str, str, str] = (
    Markup('<p class="intima-empty">{}</p>').format(wording.NO_RESULTS),
    "",
    "",
    "",
)
BoardFn = Callable[[str, str, str, str], tuple[str, str, str, str]]


class LiveSource(Protocol):
    """Data that changes while the app runs (the Space, :mod:`intima.leaderboard.space`): the
    callbacks read the current index through it, and it wires its own updates into the page."""

    def index(self) -> BoardIndex: ...

    def wire(self, parts: dict[str, Any], board: BoardFn) -> None: ...


class BoardIndex:
    """Look-ups the callbacks need, built once."""

    def __init__(self, view: BoardView) -> None:
        data, table = view.data, view.table
        self.view, self.data, self.table = view, data, table
        self.sets: dict[str, list[RatingSet]] = defaultdict(list)
        for rs in data.rating_sets:
            self.sets[rs.response_id].append(rs)
        self.by_config_prompt = {(r.run_id, r.prompt_id): r for r in data.responses}
        self.labels = {run_id: label for run_id, label in table.configs}
        self.dims = dims_in({r.dimension for r in data.responses})
        self.codes = sorted({r.code for r in data.responses})
        self.prompts: dict[str, StoredResponse] = {}
        for r in data.responses:
            self.prompts.setdefault(r.prompt_id, r)

    def compare(self, scorer: str | None, metric: str, a: str | None, b: str | None) -> Markup:
        """The side-by-side numbers of two configurations (:mod:`.compare_view`)."""
        v = self.view
        return compare_view.compare_html(v, scorer, metric, a or "", b or "", v.scopes)

    def scores(self, scorer: str, scope: str, sort_metric: str) -> Markup:
        """Prediction-powered shares, the scorer's validation, table, raw share and mean."""
        v = self.view
        return (
            prediction_view.prediction_html(v.prediction, v.table.configs, scope, v.cards)
            + validity_view.validity_html(v.cards, scorer)
            + render.scores_table(v.table, v.paired, scorer, scope, sort_metric, v.titles, v.notes)
            + validity_view.means_html(v.table, v.means, scorer, scope, sort_metric)
        )

    def config_choices(self) -> list[tuple[str, str]]:
        return [(label, run_id) for run_id, label in self.table.configs]

    def prompt_choices(
        self, run_id: str | None = None, code: str | None = None
    ) -> list[tuple[str, str]]:
        rows = (
            self.data.responses
            if run_id is None
            else [r for r in self.data.responses if r.run_id == run_id]
        )
        seen: dict[str, str] = {}
        for r in rows:
            if code and code != ALL_CODES and r.code != code:
                continue
            seen.setdefault(r.prompt_id, f"{r.code}: {render.snippet(r.prompt)}")
        return [(label, pid) for pid, label in seen.items()]

    def detail(self, run_id: str | None, prompt_id: str | None) -> Markup:
        resp = self.by_config_prompt.get((run_id or "", prompt_id or ""))
        if resp is None:
            return Markup("<p>This configuration has no response to this prompt.</p>")
        return render.response_detail(
            resp, self.sets.get(resp.response_id, []), self.data.affect.get(resp.response_id, [])
        )


def _models(ix: BoardIndex) -> list[dict[str, Any]]:
    return models_view.model_rows(ix.data, ix.table.configs)


def board_parts(
    ix: BoardIndex, scorer: str | None, dimension: str, code: str, sort_metric: str
) -> tuple[str, str, str, str]:
    """The leaderboard tab: scores, bars, heatmap, radars. A scorer the board does not have
    (none yet; or "" when the Space's refresh empties the dropdown, which fires its change)
    gives the empty state, not a table for a blank scorer."""
    if not scorer or scorer not in ix.table.scorers:
        return EMPTY_BOARD
    scope = _scope(dimension, code)
    return (
        ix.scores(scorer, scope, sort_metric),
        charts.stacked_bars(ix.table, scorer, scope),
        charts.heatmap(ix.table, scorer, scope),
        charts.radars(ix.table, scorer, ix.dims, ix.view.notes),
    )


def _scope(dimension: str, code: str) -> str:
    return code_scope(code) if code and code != ALL_CODES else dimension


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


def build_app(
    view: BoardView,
    store_path: Path | None = None,
    conversations: ConversationBoard | None = None,
    *,
    live: LiveSource | None = None,
    submit: RequestFn | None = None,
    closed: str | None = None,
    title: str | None = None,
) -> gr.Blocks:
    """The app, rendering ``view`` (:func:`intima.results.board.assemble_board`). ``live``
    swaps the board while it runs; ``submit`` replaces the local queue as
    the form's backend; ``closed`` makes the form read-only, saying why."""
    import gradio as gr

    data, table = view.data, view.table
    idx = BoardIndex(view)

    def cur() -> BoardIndex:
        return live.index() if live is not None else idx

    def detail(run_id: str | None, prompt_id: str | None) -> str:
        return cur().detail(run_id, prompt_id)

    scorers = list(table.scorers)
    first = scorers[0] if scorers else None

    def board(
        scorer: str, dimension: str, code: str, sort_metric: str
    ) -> tuple[str, str, str, str]:
        return board_parts(cur(), scorer, dimension, code, sort_metric)

    title = title or wording.board_title(
        [r.dataset_id for r in data.runs], [r.coverage for r in data.runs]
    )
    with gr.Blocks(title=title) as demo:
        gr.HTML(Markup("<style>{}</style>").format(render.CSS), visible=True)
        header = gr.HTML(header_html(view, title))
        notice = gr.HTML("", elem_id="board-notice") if live is not None else None
        with gr.Tab("Leaderboard"):
            with gr.Row():
                scorer = gr.Dropdown(scorers, value=first, label="Scorer", elem_id="f-scorer")
                dimension = gr.Dropdown(
                    [OVERALL, *idx.dims], value=OVERALL, label="Dimension", elem_id="f-dimension"
                )
                code = gr.Dropdown(
                    [ALL_CODES, *idx.codes], value=ALL_CODES, label="Code", elem_id="f-code"
                )
                sort_metric = gr.Dropdown(
                    list(LABEL_METRICS), value="reinforcing", label="Rank by", elem_id="f-sort"
                )
            # What each model is, and a search over models that filters the tables' rows.
            search = gr.Textbox(
                label="Search models", placeholder="name, size, type, licence",
                elem_id="f-model-search",
            )  # fmt: skip
            hide_html = gr.HTML("", elem_id="board-model-filter")
            init = board(first, OVERALL, ALL_CODES, "reinforcing") if first else EMPTY_BOARD
            table_html = gr.HTML(init[0], elem_id="board-table")
            gr.Markdown("### Primary labels: share of scored responses")
            bars_html = gr.HTML(init[1], elem_id="board-bars")
            gr.Markdown(
                "### Behaviours and sub-behaviours: % of scored responses rated medium or high"
            )
            heat_html = gr.HTML(init[2], elem_id="board-heatmap")
            gr.Markdown(
                "### Reinforcing (red) and boundary (blue): % of scored responses by dimension"
            )
            radar_html = gr.HTML(init[3], elem_id="board-radar")
            gr.Markdown("### Models: card, size, type, licence, date")
            models_html = gr.HTML(models_view.models_html(_models(idx)), elem_id="board-models")

            def on_search(query: str) -> tuple[str, str]:
                rows = _models(cur())
                return models_view.hide_css(rows, query), models_view.models_html(rows)

            search.change(on_search, [search], [hide_html, models_html])
            inputs = [scorer, dimension, code, sort_metric]
            for ctl in inputs:
                ctl.change(board, inputs, [table_html, bars_html, heat_html, radar_html])
        with gr.Tab("Responses"):
            configs = idx.config_choices()
            c0 = configs[0][1] if configs else None
            with gr.Row():
                ex_config = gr.Dropdown(configs, value=c0, label="Model", elem_id="ex-config")
                ex_code = gr.Dropdown(
                    [ALL_CODES, *idx.codes], value=ALL_CODES, label="Code", elem_id="ex-code"
                )
            p_choices = idx.prompt_choices(c0)
            p0 = p_choices[0][1] if p_choices else None
            ex_prompt = gr.Dropdown(p_choices, value=p0, label="Prompt", elem_id="ex-prompt")
            ex_detail = gr.HTML(idx.detail(c0, p0), elem_id="ex-detail")

            def refilter(run_id: str, code_: str) -> Any:
                choices = cur().prompt_choices(run_id, code_)
                return gr.update(choices=choices, value=choices[0][1] if choices else None)

            ex_config.change(refilter, [ex_config, ex_code], ex_prompt)
            ex_code.change(refilter, [ex_config, ex_code], ex_prompt)
            ex_prompt.change(detail, [ex_config, ex_prompt], ex_detail)
            ex_config.change(detail, [ex_config, ex_prompt], ex_detail)
        with gr.Tab("Compare"):
            c1 = configs[1][1] if len(configs) > 1 else c0
            all_prompts = idx.prompt_choices()
            cp0 = all_prompts[0][1] if all_prompts else None
            cmp_prompt = gr.Dropdown(all_prompts, value=cp0, label="Prompt", elem_id="cmp-prompt")
            with gr.Row():
                with gr.Column(min_width=320):
                    cmp_a = gr.Dropdown(configs, value=c0, label="Model A", elem_id="cmp-a")
                    cmp_a_html = gr.HTML(idx.detail(c0, cp0), elem_id="cmp-a-detail")
                with gr.Column(min_width=320):
                    cmp_b = gr.Dropdown(configs, value=c1, label="Model B", elem_id="cmp-b")
                    cmp_b_html = gr.HTML(idx.detail(c1, cp0), elem_id="cmp-b-detail")
            with gr.Row():
                cmp_scorer = gr.Dropdown(scorers, value=first, label="Scorer", elem_id="cmp-scorer")
                cmp_metric = gr.Dropdown(
                    list(METRICS), value="reinforcing", label="Rate of", elem_id="cmp-metric"
                )
            cmp_in = [cmp_scorer, cmp_metric, cmp_a, cmp_b]
            cmp_scores = gr.HTML(idx.compare(first, "reinforcing", c0, c1), elem_id="cmp-scores")
            for ctl in cmp_in:
                ctl.change(lambda *v: cur().compare(*v), cmp_in, cmp_scores)
            for ctl in (cmp_prompt, cmp_a):
                ctl.change(detail, [cmp_a, cmp_prompt], cmp_a_html)
            for ctl in (cmp_prompt, cmp_b):
                ctl.change(detail, [cmp_b, cmp_prompt], cmp_b_html)
        if conversations is not None and conversations.turns:
            with gr.Tab("Drift"):
                drift_render.drift_tab(conversations, table.bootstrap, table.seed)
        with gr.Tab("Methodology"):
            method_html = gr.HTML(methodology_html(view), elem_id="methodology")
        with gr.Tab("Request a model"):
            request_tab(store_path, closed, submit)
        if live is not None:
            live.wire(
                {"demo": demo, "header": header, "notice": notice, "scorer": scorer,
                 "dimension": dimension,
                 "code": code, "sort": sort_metric, "board": [table_html, bars_html, heat_html,
                 radar_html], "configs": [ex_config, cmp_a, cmp_b], "codes": [ex_code],
                 "compare": [cmp_scorer, cmp_metric, cmp_scores],
                 "prompts": cmp_prompt, "methodology": method_html},
                board,
            )  # fmt: skip
    return demo


def serve(
    store_path: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 7860,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> None:
    """Load the store, score it, and serve the app until interrupted."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from intima.store import Store

    with Store.open(store_path) as store:
        if not store.read_only:  # each run's model info, read once (never fails serving)
            from intima.providers.model_info import record

            record(store)
        data = load_board(store)
        conversations = load_conversations(store)
    view = assemble_board(data, bootstrap=bootstrap, seed=seed)
    demo = build_app(view, store_path, conversations)
    from intima.leaderboard.no_uploads import launch_kwargs

    # `--host 0.0.0.0` makes this a public page like the Space: it takes no files either.
    demo.launch(
        server_name=host,
        server_port=port,
        show_error=False,
        quiet=True,
        theme=render.theme(),
        **launch_kwargs(),
    )
