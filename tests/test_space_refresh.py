"""The Space's refresh loop against the fake Hub, in process: a bad bundle is skipped with its
reason and the refresh goes on, a good bundle published next shows, a refresh that fails
keeps the board shown before, and no refresh leaves a store behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fake_hub import RESULTS, FakeHub, point_hf_at, push_bundle
from full_bundle import rewrite, small_bundles
from intima.leaderboard.space import LiveBoard, SpaceSettings
from intima.store import Store


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two bundles of one run each: ``good``, and ``bad``, whose one validation report is
    ``report_json = "[]"`` (it used to import, then break every load of the board). Made once
    for the module: no test changes them."""
    tmp_path = tmp_path_factory.mktemp("bundles")
    made = small_bundles(tmp_path, ("model-good", "model-bad"))
    out = {"good": made["model-good"], "bad": made["model-bad"]}
    report = {
        "set_sha256": "0" * 64, "set_name": "set.jsonl", "scorer": "keyword",
        "scorer_version": "keyword-1", "by_columns": "", "n": 3, "report_json": "[]",
        "package_version": "0.1.0", "created_at": "2026-01-01T00:00:00Z", "set_key": "",
        "options": "",
    }  # fmt: skip
    # the columns this intima's validation_reports has
    with Store.open(tmp_path / "source.db") as store:
        report = {c.name: report[c.name] for c in store.columns("validation_reports")}
    rewrite(out["bad"], "validation_reports", lambda rows: rows.append(report))
    return out


def _live(tmp_path: Path) -> tuple[LiveBoard, Path]:
    """The Space's board on the results repo, and its (empty) work folder."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    return LiveBoard(
        SpaceSettings(results=f"hf://datasets/{RESULTS}", bootstrap=5), workdir
    ), workdir


def _labels(live: LiveBoard) -> set[str]:
    return {r.label for r in live.current().index.data.runs}


def test_a_bad_bundle_is_skipped_and_a_good_one_published_next_shows(
    results_hub: FakeHub, bundles: dict[str, Path], tmp_path: Path
) -> None:
    live, workdir = _live(tmp_path)
    push_bundle(results_hub, bundles["bad"], "bundles/1-bad")
    assert live.refresh() is True
    board = live.current()
    assert [name for name, _ in board.refused] == ["1-bad"]
    assert "report_json does not match its schema" in board.refused[0][1]
    assert "1-bad" in board.notice and board.problem is None
    assert list(workdir.iterdir()) == []  # no store, no scratch copy
    push_bundle(results_hub, bundles["good"], "bundles/2-good")
    assert live.refresh() is True
    assert _labels(live) == {"model-good"}
    assert [name for name, _ in live.current().refused] == ["1-bad"]
    assert list(workdir.iterdir()) == []


def test_a_refresh_that_fails_keeps_the_board_and_leaves_no_store(
    results_hub: FakeHub, bundles: dict[str, Path], tmp_path: Path
) -> None:
    live, workdir = _live(tmp_path)
    push_bundle(results_hub, bundles["good"], "bundles/1-good")
    assert live.refresh() is True and _labels(live) == {"model-good"}
    push_bundle(results_hub, bundles["bad"], "bundles/2-bad")
    results_hub.fail_downloads = 500  # the repo moved, its files cannot be fetched
    assert live.refresh() is False
    assert live.current().problem is not None and "retrying" in live.current().problem
    assert _labels(live) == {"model-good"}
    assert list(workdir.iterdir()) == []
    results_hub.fail_downloads = None  # the Hub is back: the next refresh reads the new commit
    assert live.refresh() is True
    assert live.current().problem is None and _labels(live) == {"model-good"}
    assert [name for name, _ in live.current().refused] == ["2-bad"]
    assert list(workdir.iterdir()) == []


def test_a_commit_whose_bundles_cannot_be_shown_is_not_read_again_until_the_repo_moves(
    results_hub: FakeHub, bundles: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever escapes the checks: the refresh says so once, keeps the old board, removes its
    store, and waits for the next commit instead of failing the same way every minute."""
    import intima.leaderboard.space as space

    calls: list[int] = []

    def broken(store: Any, settings: Any) -> Any:
        calls.append(1)
        raise MemoryError

    live, workdir = _live(tmp_path)
    push_bundle(results_hub, bundles["good"], "bundles/1-good")
    monkeypatch.setattr(space, "_scored", broken)
    assert live.refresh() is False and live.refresh() is False
    assert len(calls) == 1 and "could not be shown (MemoryError)" in str(live.current().problem)
    assert list(workdir.iterdir()) == []
    monkeypatch.undo()
    point_hf_at(results_hub, tmp_path / "hf-cache", tmp_path, monkeypatch)
    push_bundle(results_hub, bundles["bad"], "bundles/2-bad")
    assert live.refresh() is True and _labels(live) == {"model-good"}


def test_a_forged_copy_of_a_bundle_is_not_shown_whatever_its_name(
    results_hub: FakeHub, bundles: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 30: a copy of a real bundle with the same ids and other texts, in a folder that
    sorts first, used to be shown and the real one refused. Both are refused and named, each
    with the other; when the forgery is removed the real one shows."""
    import shutil

    forged = tmp_path / "forged"
    shutil.copytree(bundles["good"], forged)
    rewrite(forged, "responses", lambda rows: [r.update(text="forged") for r in rows])
    live, workdir = _live(tmp_path)
    push_bundle(results_hub, bundles["good"], "bundles/2-good")
    push_bundle(results_hub, forged, "bundles/1-forged")
    assert live.refresh() is True
    board = live.current()
    assert _labels(live) == set()
    assert sorted(name for name, _ in board.refused) == ["1-forged", "2-good"]
    assert all("bundles '1-forged', '2-good'" in why for _, why in board.refused)
    assert list(workdir.iterdir()) == []
    files = {k: v for k, v in results_hub.repo(RESULTS).head().items() if "1-forged" not in k}
    results_hub.repo(RESULTS).add_commit(files, "remove the forgery")
    assert live.refresh() is True
    assert _labels(live) == {"model-good"} and live.current().refused == ()


def test_a_refresh_redraws_every_view_the_models_table_and_drift_included(tmp_path: Path) -> None:
    """Issue 41: after a refresh the models table kept its first rows until someone typed a
    search, and the drift view stayed the one built at start (none, for a Space that started
    without conversations). The timer's redraw now writes every view from the new board."""
    import gradio as gr

    from conversation_store import synthetic_runs, write_run
    from intima.leaderboard.app import BoardIndex, build_app
    from intima.results.board import assemble_board
    from intima.results.conversations import load_conversations
    from intima.results.data import load_board
    from synthetic import synthetic_board, write_store

    live, _ = _live(tmp_path)
    live._swap(index=BoardIndex(assemble_board(synthetic_board(2, 24, 1), bootstrap=5)))
    demo = build_app(live.current().index.view, live=live, title="t")
    tick = next(f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "tick")
    values = [c.value for c in tick.inputs]
    shown = tick.fn(*values)
    before = {o.elem_id: v for o, v in zip(tick.outputs, shown, strict=True) if o.elem_id}
    assert "synthetic-1" in before["board-models"] and "synthetic-2" not in before["board-models"]
    # The results move on: a third configuration, and conversations with rated turns.
    with Store.open(tmp_path / "newer.db") as store:
        write_store(store, synthetic_board(3, 24, 1))
        for run in synthetic_runs(2, 4, 2, judges=("judge-a",), seed=1):
            write_run(store, run)
        view = assemble_board(
            load_board(store), bootstrap=5, conversations=load_conversations(store)
        )
    live._swap(index=BoardIndex(view))
    values[0] = shown[0]  # the version the page shows
    redrawn = tick.fn(*values)
    after = {o.elem_id: v for o, v in zip(tick.outputs, redrawn, strict=True) if o.elem_id}
    assert "synthetic-2" in after["board-models"]
    assert "synthetic-2" in after["board-scores"] and "synthetic-2" in str(after["cmp-b"])
    assert "talker-1" in after["drift-numbers"] and "<svg" in after["drift-charts"]
    assert after["drift-scorer"]["choices"] and "talker-0" in str(after["drift-config"])
    tab = next(v for o, v in zip(tick.outputs, redrawn, strict=True) if isinstance(o, gr.Tab))
    assert tab["visible"] is True  # the drift tab, hidden at start, shows
    from intima.leaderboard.views import VIEWS

    assert {v.name for v in VIEWS} <= set(after)  # and every other view of the list, redrawn
