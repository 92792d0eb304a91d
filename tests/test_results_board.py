"""The board in one trip (issue 34): ``results.board.assemble_board`` computes the scores,
ranks, cards, mean scores, prediction-powered shares and paired comparisons once, as one
UI-free view; the static site, the app and the Space only render it."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from intima.results import board as board_mod
from intima.results.board import BoardView, assemble_board
from intima.results.cards import shipped_cards
from intima.results.data import load_board
from intima.results.paired import PairedBoard
from intima.results.sources import affect_version
from intima.results.table import OVERALL, score_table
from intima.store import Store
from synthetic import synthetic_board, write_store

#: What the board is made of, each a walk down into ``results``: called once per board.
STEPS = ("score_table", "PairedBoard", "board_means", "scorer_cards", "prediction_rows")


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("board") / "store.db"
    with Store.open(path) as store:
        write_store(store, synthetic_board(3, 40, 2, seed=4))
    return path


def _counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count every call of each step, where ``results.board`` calls it."""
    calls: Counter[str] = Counter()

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return fn(*args, **kwargs)

        return counted

    for name in STEPS:
        monkeypatch.setattr(board_mod, name, wrap(name, getattr(board_mod, name)))
    return calls


def test_the_view_holds_the_whole_board_computed_once(store_path: Path) -> None:
    with Store.open(store_path) as store:
        data = load_board(store)
    data = dataclasses.replace(
        data,
        methodology=dataclasses.replace(
            data.methodology,
            affect_version=affect_version(),
            cards=tuple(shipped_cards(affect_version())),
        ),
    )
    view = assemble_board(data, bootstrap=60, seed=3)
    # The same numbers as the results layer's own functions, on the same B and seed.
    table = score_table(data.infos(), data.rating_sets, bootstrap=60, seed=3)
    assert view.table.rows == table.rows and (view.bootstrap, view.seed) == (60, 3)
    paired = PairedBoard(data.infos(), data.rating_sets, 60, 3)
    ids = [c for c, _ in table.configs]
    for scorer in table.scorers:
        rows = [table.get(scorer, c, OVERALL, "reinforcing") for c in ids]
        assert view.paired.ranks(scorer, OVERALL, "reinforcing", rows) == paired.ranks(
            scorer, OVERALL, "reinforcing", rows
        )
        mean = view.means.mean(scorer, ids[0], OVERALL)
        assert mean is not None and mean.mean is not None
    assert view.scopes[0] == OVERALL and len(view.scopes) == 5
    assert set(view.titles) == set(ids) and all(view.titles.values())
    assert view.cards == {"affect": list(data.methodology.cards)}  # only the affect card
    assert view.prediction == []  # no judge labelled a random sample here
    # Each part is kept, not computed again.
    assert view.paired is view.paired and view.means is view.means and view.cards is view.cards


def test_build_site_assembles_the_board_once(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from intima.leaderboard import site

    calls = _counted(monkeypatch)
    with Store.open(store_path) as store:
        data = load_board(store)
    site.build_site(data, tmp_path / "out", bootstrap=30, seed=0)
    assert calls == Counter({"score_table": 1, "PairedBoard": 1, "board_means": 1,
                             "scorer_cards": 1})  # fmt: skip
    # No page walks down into results by itself: they only render the view.
    _renders_only()


def test_the_app_assembles_the_board_once_however_many_views_it_shows(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gradio as gr

    from intima.leaderboard import app

    calls = _counted(monkeypatch)
    built: list[Any] = []
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **_: built.append(self))
    app.serve(store_path, bootstrap=30, seed=0)  # the real command, without the server
    # The first page shows the first scorer's ranks (paired), card and mean scores.
    assert len(built) == 1 and calls == Counter(
        {"score_table": 1, "PairedBoard": 1, "board_means": 1, "scorer_cards": 1}
    )
    with Store.open(store_path) as store:
        view = assemble_board(load_board(store), bootstrap=30, seed=0)
    calls.clear()
    ix = app.BoardIndex(view)
    a, b = (c for c, _ in view.table.configs[:2])
    for scorer in view.table.scorers:
        for dim in (OVERALL, "Emotional Investment"):
            for metric in ("reinforcing", "boundary"):
                assert "intima-score-table" in ix.scores(scorer, dim, metric)
                assert "cmp-scores-table" in ix.compare(scorer, metric, a, b)
    assert "Intervals" in app.methodology_html(view)
    # Paired numbers, cards and means on first use, once, whatever is shown after.
    assert calls == Counter({"PairedBoard": 1, "board_means": 1, "scorer_cards": 1})
    _renders_only()


def _renders_only() -> None:
    from intima.leaderboard import app, site, space

    for module in (site, app, space):
        walked = [n for n in STEPS if hasattr(module, n)]
        assert walked == [], f"{module.__name__} imports {walked}: use the BoardView"


def test_an_empty_board_is_a_view_too() -> None:
    view = assemble_board(synthetic_board(0, 0, 0), bootstrap=10)
    assert view.table.scorers == () and view.prediction == [] and view.cards == {}
    assert isinstance(view, BoardView)
