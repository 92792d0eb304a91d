"""Every view of the board is declared once (``leaderboard.views.VIEWS``) and the three pages
take that one list: the static site writes each, the app places each, the Space's refresh
redraws each. Each view reads of the board only what it declares."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conversation_store import synthetic_runs, write_run
from intima.leaderboard.app import build_app
from intima.leaderboard.chunks import read_chunk
from intima.leaderboard.page import MENU_AXES
from intima.leaderboard.site import build_site
from intima.leaderboard.space import LiveBoard, SpaceSettings
from intima.leaderboard.views import AXES, VIEWS, Pick, View, choices
from intima.results.board import BoardView, assemble_board
from intima.results.conversations import load_conversations
from intima.results.data import load_board
from intima.store import Store
from synthetic import synthetic_board, write_store

#: The board's views, by hand: the leaderboard's eight, the drift view's two, the methodology.
NAMES = [
    "board-prediction", "board-card", "board-scores", "board-means", "board-bars",
    "board-heatmap", "board-radar", "board-models", "drift-charts", "drift-numbers",
    "methodology",
]  # fmt: skip


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BoardView]:
    """Two scored configurations and two conversation configurations, in one store."""
    path = tmp_path_factory.mktemp("views") / "store.db"
    with Store.open(path) as store:
        write_store(store, synthetic_board(2, 24, 1, seed=3))
        for run in synthetic_runs(2, 4, 2, judges=("judge-a",), seed=1):
            write_run(store, run)
        data, conv = load_board(store), load_conversations(store)
    return path, assemble_board(data, bootstrap=20, seed=0, conversations=conv)


def test_the_views_are_declared_once() -> None:
    assert [v.name for v in VIEWS] == NAMES
    assert len({v.name for v in VIEWS}) == len(VIEWS) == 11
    # Every choice a view changes with has a menu in the app, and every menu sets one.
    assert {a for v in VIEWS for a in v.varies} <= set(AXES) == set(MENU_AXES.values())
    for v in VIEWS:  # the site varies only what the view varies; a view is kept somewhere
        assert set(v.site.vary) <= set(v.varies), v.name
        assert (v.site.template is None) != (v.site.key is None), v.name


class _Reads:
    """A board that records which of its attributes a view reads."""

    def __init__(self, view: BoardView) -> None:
        self._view, self.read = view, set[str]()

    def __getattr__(self, name: str) -> Any:
        self.read.add(name)
        return getattr(self._view, name)


def test_each_view_reads_only_what_it_declares(board: tuple[Path, BoardView]) -> None:
    _, view = board
    for v in VIEWS:
        reads = _Reads(view)
        for pick in _picks(view, v):
            v.render(reads, pick)  # type: ignore[arg-type]
        assert reads.read <= set(v.needs), (v.name, reads.read - set(v.needs))
        assert reads.read, v.name  # a view of the board reads the board


def _picks(view: BoardView, v: View) -> list[Pick]:
    """Each value of each choice the view varies with, the others at their first value."""
    first = {a: (choices(view, a) or [None])[0] for a in v.varies}
    return [Pick(**{**first, a: value}) for a in v.varies for value in choices(view, a)] or [Pick()]


def test_the_site_the_app_and_the_space_take_every_view(
    board: tuple[Path, BoardView], tmp_path: Path
) -> None:
    path, view = board
    # The site: every template view once per choice it offers, every data-file view in each
    # scorer-and-scope file.
    with Store.open(path) as store:
        data, conv = load_board(store), load_conversations(store)
    site = build_site(data, tmp_path / "site", bootstrap=20, seed=0, conversations=conv)
    page = site.index.read_text()
    n_scorers, n_scopes = len(view.table.scorers), len(view.scopes)
    n_drift = len(view.drift) * len(choices(view, "drift_scope"))
    assert (n_scorers, n_scopes) == (1, 4) and n_drift >= 2  # overall + 3 dimensions
    templates = {
        "chart-bars": n_scorers, "chart-heatmap": n_scorers, "chart-radar": n_scorers,
        "models-view": 1, "methodology": 1, "drift-charts": n_drift, "drift-table": n_drift,
        "prediction": 0,  # no judged sample on this board: no section
    }  # fmt: skip
    for prefix, n in templates.items():
        found = re.findall(rf'<template id="{prefix}(?:-\d+)*">', page)
        assert len(found) == n, (prefix, len(found))
    chunk = read_chunk(tmp_path / "site" / "data" / "t0_0.js")
    for key in ("card", "table", "means"):
        assert key in chunk
    # The app: one element a view, each once.
    demo = build_app(view)
    ids = [b.elem_id for b in demo.blocks.values() if b.elem_id in NAMES]
    assert sorted(ids) == sorted(NAMES)
    # The Space: its refresh writes every view's element.
    live = LiveBoard(SpaceSettings(results="hf://datasets/org/results", bootstrap=5), tmp_path)
    space = build_app(view, live=live, title="t")
    written = {o.elem_id for o in _tick(space).outputs}
    assert set(NAMES) <= written


def _tick(demo: Any) -> Any:
    """The Space's redraw, as the page's timer calls it."""
    return next(f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "tick")
