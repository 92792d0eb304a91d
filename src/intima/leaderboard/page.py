"""The app's page as typed parts (:class:`Page`), the look-ups its callbacks need
(:class:`BoardIndex`), and how it is redrawn from a board.

:func:`intima.leaderboard.app.build_app` makes the page: a menu for each of the reader's choices
(:class:`Menus`), an element for every view of :data:`~.views.VIEWS`, and the explorers. A
menu's change redraws the views that change with it (:func:`views_of`); the Space's refresh
(:mod:`.space`) calls :meth:`Page.redraw`, which offers the new board's choices (keeping the
reader's where still offered) and redraws every view and explorer, so none keeps the old
board's rows.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Final

from markupsafe import Markup

from intima.core.ratings import RatingSet
from intima.leaderboard import compare_view, drift_render, render
from intima.leaderboard.detail import response_detail
from intima.leaderboard.drift_render import busiest_scorer
from intima.leaderboard.views import DRIFT_ALL, VIEWS, Axis, Pick, View, choices
from intima.results.board import BoardView
from intima.results.table import LABEL_METRICS, OVERALL, code_scope, dims_in
from intima.store import StoredResponse

if TYPE_CHECKING:
    import gradio as gr

ALL_CODES: Final = "(all codes)"
#: Which choice each menu sets (the dimension and the code together make the scope).
MENU_AXES: Final[dict[str, Axis]] = {
    "scorer": "scorer",
    "dimension": "scope",
    "code": "scope",
    "sort": "sort",
    "drift_scorer": "drift_scorer",
    "drift_scope": "drift_scope",
}


@dataclass(frozen=True)
class Menus:
    """The menus of the reader's choices, in :func:`pick`'s order."""

    scorer: gr.Dropdown
    dimension: gr.Dropdown
    code: gr.Dropdown
    sort: gr.Dropdown
    drift_scorer: gr.Dropdown
    drift_scope: gr.Dropdown

    def all(self) -> list[gr.Dropdown]:
        return [getattr(self, f.name) for f in fields(self)]


@dataclass(frozen=True)
class Explorers:
    """What is chosen by configuration and prompt: a response's detail, two configurations
    side by side, a conversation's transcript."""

    ex_config: gr.Dropdown
    ex_code: gr.Dropdown
    ex_prompt: gr.Dropdown
    ex_detail: gr.HTML
    cmp_prompt: gr.Dropdown
    cmp_a: gr.Dropdown
    cmp_b: gr.Dropdown
    cmp_a_detail: gr.HTML
    cmp_b_detail: gr.HTML
    cmp_scorer: gr.Dropdown
    cmp_metric: gr.Dropdown
    cmp_scores: gr.HTML
    drift_config: gr.Dropdown
    drift_conv: gr.Dropdown
    drift_transcript: gr.HTML


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
        """The views above the charts, as the leaderboard tab shows them one after another:
        prediction-powered shares, the scorer's validation, the table, raw share and mean."""
        chosen = Pick(scorer, scope, sort_metric)
        return Markup("").join(v.render(self.view, chosen) for v in VIEWS if v.box == "board-table")

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
        return response_detail(
            resp, self.sets.get(resp.response_id, []), self.data.affect.get(resp.response_id, [])
        )

    @functools.cached_property
    def _conversations(self) -> dict[str, list[drift_render.Conversation]]:
        conv = self.view.conversations
        return {} if conv is None else drift_render.conversations(conv)

    def drift_runs(self) -> list[tuple[str, str]]:
        """The conversation configurations, as the transcript explorer offers them."""
        conv = self.view.conversations
        return [] if conv is None else [(label, run_id) for run_id, label in conv.runs]

    def conversation_choices(self, run_id: str | None) -> list[tuple[str, str]]:
        return [(c.choice, c.id) for c in self._conversations.get(run_id or "", [])]

    def transcript(self, run_id: str | None, cid: str | None) -> Markup:
        conv = self.view.conversations
        chosen = [c for c in self._conversations.get(run_id or "", []) if c.id == cid]
        if conv is None or not chosen:
            return Markup("<p>No conversation.</p>")
        return drift_render.transcript_html(
            chosen[0], drift_render.ratings_by_response(conv.rating_sets)
        )


def pick(
    ix: BoardIndex,
    scorer: str | None,
    dimension: str,
    code: str,
    sort: str,
    drift_scorer: str | None,
    drift_scope: str,
) -> Pick:
    """The menus' values as the views take them."""
    scope = code_scope(code) if code and code != ALL_CODES else dimension
    return Pick(scorer, scope, sort, drift_scorer, drift_scope)


def first_pick(ix: BoardIndex) -> list[Any]:
    """The menus' values on a board first shown, in :class:`Menus`' order."""
    scorers = choices(ix.view, "scorer")
    return [
        scorers[0] if scorers else None,
        OVERALL,
        ALL_CODES,
        "reinforcing",
        _drift_first(ix),
        DRIFT_ALL,
    ]


def _drift_first(ix: BoardIndex) -> str | None:
    conv = ix.view.conversations
    return None if conv is None else busiest_scorer(conv, choices(ix.view, "drift_scorer"))


def views_of(menu: str) -> list[View]:
    """The views a menu's change redraws."""
    return [v for v in VIEWS if MENU_AXES[menu] in v.varies]


def menu_choices(ix: BoardIndex) -> list[list[Any]]:
    """Each menu's choices on ``ix``'s board, in :class:`Menus`' order."""
    view = ix.view
    return [
        choices(view, "scorer"),
        [OVERALL, *ix.dims],
        [ALL_CODES, *ix.codes],
        list(LABEL_METRICS),
        choices(view, "drift_scorer"),
        choices(view, "drift_scope") or [DRIFT_ALL],
    ]


def _keep(value: Any, offered: list[Any], default: Any) -> Any:
    values = [c[1] if isinstance(c, tuple) else c for c in offered]
    return value if value in values else default


@dataclass(frozen=True)
class Page:
    """The app's parts that show the board."""

    demo: gr.Blocks
    header: gr.HTML
    notice: gr.HTML | None  #: what a Space says of its results (refused bundles, a failure)
    menus: Menus
    views: dict[str, gr.HTML]  #: per view of :data:`VIEWS`, its element
    drift_tab: gr.Tab
    explorers: Explorers

    def inputs(self) -> list[Any]:
        """What :meth:`redraw` reads: the menus' and the explorers' values."""
        return [*self.menus.all(), *(getattr(self.explorers, f.name) for f in fields(Explorers))]

    def outputs(self) -> list[Any]:
        """What :meth:`redraw` writes, in its order: every menu, the drift tab, every view,
        every explorer."""
        ex = self.explorers
        return [
            *self.menus.all(),
            self.drift_tab,
            *(self.views[v.name] for v in VIEWS),
            *(getattr(ex, f.name) for f in fields(Explorers)),
        ]

    def redraw(self, ix: BoardIndex, *values: Any) -> list[Any]:
        """:meth:`outputs` for the board ``ix`` (``values``: :meth:`inputs`' values): each
        menu offers the new choices, the reader's kept where still offered."""
        import gradio as gr

        n = len(fields(Menus))
        chosen, ex = (
            values[:n],
            dict(zip((f.name for f in fields(Explorers)), values[n:], strict=True)),
        )
        offered = menu_choices(ix)
        kept = [_keep(v, c, d) for v, c, d in zip(chosen, offered, first_pick(ix), strict=True)]
        now = pick(ix, *kept)
        menus = [gr.update(choices=c, value=v) for c, v in zip(offered, kept, strict=True)]
        shown = [v.render(ix.view, now) for v in VIEWS]
        return [
            *menus,
            gr.update(
                visible=ix.view.conversations is not None and bool(ix.view.conversations.turns)
            ),
            *shown,
            *self._explorers(ix, ex, kept[0]),
        ]

    @staticmethod
    def _explorers(ix: BoardIndex, ex: dict[str, Any], scorer: str | None) -> list[Any]:
        import gradio as gr

        configs = ix.config_choices()
        ids = [c for _, c in configs]
        a, b, shown = (
            _keep(ex[k], configs, ids[0] if ids else None) for k in ("cmp_a", "cmp_b", "ex_config")
        )
        codes = [ALL_CODES, *ix.codes]
        code = _keep(ex["ex_code"], codes, ALL_CODES)
        prompts = ix.prompt_choices(shown, code)
        prompt = _keep(ex["ex_prompt"], prompts, prompts[0][1] if prompts else None)
        every = ix.prompt_choices()
        cmp_prompt = _keep(ex["cmp_prompt"], every, every[0][1] if every else None)
        cmp_scorer = _keep(ex["cmp_scorer"], list(ix.table.scorers), scorer)
        runs = ix.drift_runs()
        run = _keep(ex["drift_config"], runs, runs[0][1] if runs else None)
        convs = ix.conversation_choices(run)
        conv = _keep(ex["drift_conv"], convs, convs[0][1] if convs else None)
        return [
            gr.update(choices=configs, value=shown),
            gr.update(choices=codes, value=code),
            gr.update(choices=prompts, value=prompt),
            ix.detail(shown, prompt),
            gr.update(choices=every, value=cmp_prompt),
            gr.update(choices=configs, value=a),
            gr.update(choices=configs, value=b),
            ix.detail(a, cmp_prompt),
            ix.detail(b, cmp_prompt),
            gr.update(choices=list(ix.table.scorers), value=cmp_scorer),
            gr.update(),
            ix.compare(cmp_scorer, ex["cmp_metric"], a, b),
            gr.update(choices=runs, value=run),
            gr.update(choices=convs, value=conv),
            ix.transcript(run, conv),
        ]
