"""Every view of the board, declared once (:data:`VIEWS`): its name, what it reads of the
:class:`~intima.results.board.BoardView`, which of the reader's choices it changes with, how it
renders, and where the static site keeps it.

The three pages take this one list: the static site (:mod:`.site`) writes every view for every
choice it offers; the app (:mod:`.app`) places every view and redraws the ones a menu changes;
the Space's refresh (:mod:`.page`) redraws every view of the list from the new board. A view
added here is on all three, and a refresh cannot skip it.

The explorers (a response's detail, two configurations side by side, a conversation's
transcript) are chosen by configuration and prompt, not by these choices: they have their own
menus and data files (:mod:`.render`, :mod:`.compare_view`, :mod:`.drift_view`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, get_args

from markupsafe import Markup

from intima.leaderboard import (
    charts,
    drift_render,
    method_view,
    models_view,
    prediction_view,
    render,
    validity_view,
    wording,
)
from intima.results.board import BoardView
from intima.results.table import LABEL_METRICS, OVERALL

#: The reader's choices a view can change with.
Axis = Literal["scorer", "scope", "sort", "drift_scorer", "drift_scope"]
AXES: Final[tuple[Axis, ...]] = get_args(Axis)
#: The drift view's scope that holds every dimension.
DRIFT_ALL: Final = "all"


@dataclass(frozen=True)
class Pick:
    """What the reader chose: a scorer, a scope (overall, a dimension or a code), a ranking
    metric, and the drift view's scorer and scope."""

    scorer: str | None = None
    scope: str = OVERALL
    sort: str = "reinforcing"
    drift_scorer: str | None = None
    drift_scope: str = DRIFT_ALL


def choices(view: BoardView, axis: Axis) -> list[str]:
    """Every value of ``axis`` on ``view``'s board, in the menus' order (the site renders a
    view for each; codes are the app's filter, not the site's)."""
    if axis == "scorer":
        return list(view.table.scorers)
    if axis == "scope":
        return list(view.scopes)
    if axis == "sort":
        return list(LABEL_METRICS)
    if axis == "drift_scorer":
        return list(view.drift)
    first = next(iter(view.drift.values()), None)
    return list(first.scopes) if first else []


@dataclass(frozen=True)
class OnSite:
    """Where the static site keeps a view: with ``template``, one
    ``<template id="<template>-<i>-<j>...">`` per choice of each of ``vary`` (its index in
    :func:`choices`; no suffix without ``vary``), the other choices at their default; without,
    under the view's ``key`` in the data file of each scorer and scope (``data/t<s>_<k>.js``),
    per ranking metric when the view changes with ``sort``."""

    vary: tuple[Axis, ...] = ()
    template: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class View:
    """One view of the board."""

    name: str  #: its element id in the app
    tab: str  #: the app's tab it is on
    needs: tuple[str, ...]  #: what it reads of the BoardView (its attributes)
    varies: tuple[Axis, ...]  #: the choices it changes with
    render: Callable[[BoardView, Pick], Markup]
    site: OnSite
    heading: str = ""  #: the app's heading above it
    box: str = ""  #: the app's element that holds it with its neighbours of the same box
    shown: Callable[[BoardView], bool] = lambda view: True  #: the site leaves it out if not


_NOTHING: Final = Markup()


def _scored(view: BoardView, pick: Pick) -> str | None:
    """The pick's scorer if the board has it (none yet; or "" when a Space's refresh empties
    the menu): a view of no scorer is empty, never a table for a blank one."""
    return pick.scorer if pick.scorer and pick.scorer in view.table.scorers else None


def _scores(view: BoardView, pick: Pick) -> Markup:
    scorer = _scored(view, pick)
    if scorer is None:
        return Markup('<p class="intima-empty">{}</p>').format(wording.NO_RESULTS)
    v = view
    return render.scores_table(v.table, v.paired, scorer, pick.scope, pick.sort, v.titles, v.notes)


def _card(view: BoardView, pick: Pick) -> Markup:
    scorer = _scored(view, pick)
    return Markup() if scorer is None else validity_view.validity_html(view.cards, scorer)


def _means(view: BoardView, pick: Pick) -> Markup:
    scorer = _scored(view, pick)
    if scorer is None:
        return Markup()
    return validity_view.means_html(view.table, view.means, scorer, pick.scope, pick.sort)


def _chart(draw: Callable[..., Markup]) -> Callable[[BoardView, Pick], Markup]:
    def chart(view: BoardView, pick: Pick) -> Markup:
        scorer = _scored(view, pick)
        return Markup() if scorer is None else draw(view, scorer, pick.scope)

    return chart


def _drift(
    draw: Callable[..., Markup], unrated: Markup = _NOTHING
) -> Callable[[BoardView, Pick], Markup]:
    """A drift view of the picked scorer and scope; ``unrated``: what it says when no scorer
    rated a turn (once, above the others)."""

    def drift(view: BoardView, pick: Pick) -> Markup:
        table = view.drift.get(pick.drift_scorer or "")
        if table is None:
            return unrated
        assert view.conversations is not None  # a drift table comes from conversations
        return draw(table, pick.drift_scope, [run_id for run_id, _ in view.conversations.runs])

    return drift


def _has_drift(view: BoardView) -> bool:
    return bool(view.drift)


_BOARD, _SCORES = "Leaderboard", "board-table"
VIEWS: Final[tuple[View, ...]] = (
    View(
        "board-prediction",
        _BOARD,
        ("prediction", "table", "cards"),
        ("scope",),
        lambda v, p: prediction_view.prediction_html(
            v.prediction, v.table.configs, p.scope, v.cards
        ),
        OnSite(("scope",), template="prediction"),
        box=_SCORES,
        shown=lambda v: bool(v.prediction),
    ),
    View(
        "board-card",
        _BOARD,
        ("cards", "table"),
        ("scorer",),
        _card,
        OnSite(key="card"),
        box=_SCORES,
    ),
    View(
        "board-scores",
        _BOARD,
        ("table", "paired", "titles", "notes"),
        ("scorer", "scope", "sort"),
        _scores,
        OnSite(key="table"),
        box=_SCORES,
    ),
    View(
        "board-means",
        _BOARD,
        ("table", "means"),
        ("scorer", "scope", "sort"),
        _means,
        OnSite(key="means"),
        box=_SCORES,
    ),
    View(
        "board-bars",
        _BOARD,
        ("table",),
        ("scorer", "scope"),
        _chart(lambda v, s, scope: charts.stacked_bars(v.table, s, scope)),
        OnSite(("scorer",), template="chart-bars"),
        heading="Primary labels: share of scored responses",
    ),
    View(
        "board-heatmap",
        _BOARD,
        ("table",),
        ("scorer", "scope"),
        _chart(lambda v, s, scope: charts.heatmap(v.table, s, scope)),
        OnSite(("scorer",), template="chart-heatmap"),
        heading="Behaviours and sub-behaviours: % of scored responses rated medium or high",
    ),
    View(
        "board-radar",
        _BOARD,
        ("table", "scopes", "notes"),
        ("scorer",),
        _chart(lambda v, s, _: charts.radars(v.table, s, v.scopes[1:], v.notes)),
        OnSite(("scorer",), template="chart-radar"),
        heading="Reinforcing (red) and boundary (blue): % of scored responses by dimension",
    ),
    View(
        "board-models",
        _BOARD,
        ("data", "table"),
        (),
        lambda v, _: models_view.models_html(models_view.model_rows(v.data, v.table.configs)),
        OnSite(template="models-view"),
        heading="Models: card, size, type, licence, date",
    ),
    View(
        "drift-charts",
        "Drift",
        ("drift", "conversations"),
        ("drift_scorer", "drift_scope"),
        _drift(charts.drift_charts, Markup("<p>{}</p>").format(drift_render.NOT_RATED)),
        OnSite(("drift_scorer", "drift_scope"), template="drift-charts"),
        shown=_has_drift,
    ),
    View(
        "drift-numbers",
        "Drift",
        ("drift", "conversations"),
        ("drift_scorer", "drift_scope"),
        _drift(drift_render.table_html),
        OnSite(("drift_scorer", "drift_scope"), template="drift-table"),
        shown=_has_drift,
    ),
    View(
        "methodology",
        "Methodology",
        ("data", "bootstrap", "seed", "built"),
        (),
        lambda v, _: method_view.methodology_html(v.data.methodology, v.bootstrap, v.seed, v.built),
        OnSite(template="methodology"),
    ),
)
