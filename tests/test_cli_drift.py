"""``intima drift``: the printed table, from a store built here, as a user runs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import invoke_cli
from conversation_store import mixed_run, synthetic_runs, write_run
from intima.cli.drift import rate_cell, signed, slope_cell
from intima.results.conversations import drift_tables, load_conversations
from intima.store import Store
from synthetic import synthetic_board, write_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("drift-cli") / "store.db"
    with Store.open(path) as db:
        write_store(db, synthetic_board(1, 5, 2, seed=1))  # a single-turn run: never shown
        write_run(db, mixed_run())
        for run in synthetic_runs(2, 32, 3, seed=4):
            write_run(db, run)
    return path


def cells(stdout: str, *first: str) -> list[str]:
    """The cells of the printed row that starts with ``first`` (model, scope, label)."""
    for line in stdout.splitlines():
        parts = [p.strip() for p in re.split(r"[│┃]", line)[1:-1]]
        if parts[: len(first)] == list(first):
            return parts
    raise AssertionError(f"no row {first} in:\n{stdout}")


def test_the_table_shows_hand_checked_rates_and_the_unlabelled_turns(store: Path) -> None:
    res = invoke_cli("drift", "--store", str(store), "--scorer", "judge-a", "--run", "talker")
    assert res.returncode == 0, res.stderr
    # judge-a on the mixed run: A1 boundary, A2 reinforcing, A3 failed; B1 unscored, then the
    # user stopped. One conversation (A) has a scored turn. 1 of 1 reads 100% [2.5%, 100%]
    # (Wilson with the Poisson end: gammaincinv(1, 0.025) = -ln 0.975 = 0.0253).
    row = cells(res.stdout, "talker *", "all", "boundary")
    assert row[3] == "1"
    assert row[4:7] == ["100.0 [2.5, 100.0]", "0.0 [0.0, 97.5]", "– n=0"]
    assert row[7] == "–"  # one conversation: no slope claimed
    assert row[8] == "100.0 [2.5, 100.0] n=1"  # A: boundary at 1, not at 2: dropped, 1 of 1
    reinf = cells(res.stdout, "talker *", "all", "reinforcing")
    assert reinf[4:6] == ["0.0 [0.0, 97.5]", "100.0 [2.5, 100.0]"]
    assert "talker-0" not in res.stdout and "synthetic-0" not in res.stdout
    assert (
        "talker: turns without a label: 1 unscored, 0 not rated, 1 no response, 1 user stopped."
        in res.stdout
    )


def test_the_table_matches_the_library_and_the_json_has_every_number(
    store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "drift.json"
    res = invoke_cli(
        "drift", "--store", str(store), "--bootstrap", "300", "--seed", "5", "--json", str(out)
    )
    assert res.returncode == 0, res.stderr
    assert "intima drift: panel" in res.stdout  # two judges: the panel by default
    with Store.open(store) as db:
        (table,) = drift_tables(load_conversations(db), ["panel"], bootstrap=300, seed=5).values()
    assert json.loads(out.read_text()) == table.model_dump(mode="json")
    shown = 0
    for row in table.rows:
        mark = "" if row.enough else " *"
        for metric in ("reinforcing", "boundary"):
            printed = cells(res.stdout, row.label + mark, row.scope, metric)
            assert printed[3] == str(row.n_conversations)
            for k, tr in enumerate(row.turns):
                assert printed[4 + k] == rate_cell(getattr(tr, metric), row.n_conversations)
            assert printed[7] == slope_cell(row.slope[metric])
            shown += 1
    assert shown == len(table.rows) * 2
    # 32 conversations: the overall rows claim a slope, the dimensions (fewer) do not.
    talker1 = table.get(next(r.config for r in table.rows if r.label == "talker-1"))
    assert talker1.enough and talker1.slope["reinforcing"].lo is not None
    num = r"(?:[+-]\d+\.\d|0\.0)"
    assert re.fullmatch(
        rf"{num} \[{num}, {num}\]", cells(res.stdout, "talker-1", "all", "reinforcing")[7]
    )


def test_signed_points_never_read_minus_zero() -> None:
    assert [signed(x) for x in (-0.04, 0.0, 0.04, -0.06, 12.345)] == [
        "0.0", "0.0", "0.0", "-0.1", "+12.3"
    ]  # fmt: skip


def test_refusals_are_one_line_before_any_work(store: Path, tmp_path: Path) -> None:
    bad = invoke_cli("drift", "--store", str(store), "--scorer", "nobody")
    assert bad.returncode == 2
    assert "judge:nobody" in bad.stderr and "available: judge:judge-a" in bad.stderr
    plain = tmp_path / "plain.db"
    with Store.open(plain) as db:
        write_store(db, synthetic_board(1, 5, 2))
    none = invoke_cli("drift", "--store", str(plain))
    assert none.returncode == 2 and "no conversation runs" in none.stderr
    missing = invoke_cli("drift", "--store", str(tmp_path / "absent.db"))
    assert missing.returncode == 2 and "no store at" in missing.stderr
    assert not (tmp_path / "absent.db").exists()
    zero = invoke_cli("drift", "--store", str(store), "--bootstrap", "0")
    assert zero.returncode == 2 and "--bootstrap" in zero.stderr


def test_help_states_purpose_example_and_ranges() -> None:
    res = invoke_cli("drift", "--help")
    assert res.returncode == 0
    assert "Example: intima drift" in res.stdout
    assert "1<=x<=100000" in res.stdout and "x>=0" in res.stdout


def test_json_to_a_folder_is_one_line_and_a_link_is_replaced_not_followed(
    store: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    res = invoke_cli("drift", "--store", str(store), "--json", str(folder))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    [line] = res.stderr.strip().splitlines()
    assert "--json" in line and "directory" in line and not any(folder.iterdir())
    # A link at the path is replaced by the file; what it points to is never written.
    target = tmp_path / "precious.txt"
    target.write_text("not drift")
    link = tmp_path / "drift.json"
    link.symlink_to(target)
    res = invoke_cli("drift", "--store", str(store), "--bootstrap", "10", "--json", str(link))
    assert res.returncode == 0, res.stderr
    assert target.read_text() == "not drift"
    assert not link.is_symlink() and json.loads(link.read_text())["rows"]


def test_the_default_labels_are_named_with_why(store: Path, tmp_path: Path) -> None:
    """Without --scorer the command says whose labels it used and why: the panel when two
    judges rated the turns, the one judge otherwise, and the affect measure only because no
    judge rated the turns (a reader expecting a judge must not take affect for it)."""
    res = invoke_cli("drift", "--store", str(store), "--bootstrap", "50")
    assert res.returncode == 0, res.stderr
    assert "labels: panel: two or more judges rated these turns" in res.stderr
    assert "--scorer also takes judge:judge-a, judge:judge-b" in res.stderr
    one = tmp_path / "one.db"
    with Store.open(one) as db:
        for run in synthetic_runs(1, 8, 2, judges=("judge-a",), seed=2):
            write_run(db, run)
    res = invoke_cli("drift", "--store", str(one), "--bootstrap", "50")
    assert res.returncode == 0, res.stderr
    assert "labels: judge:judge-a: the first judge that rated these turns" in res.stderr
    explicit = invoke_cli("drift", "--store", str(one), "--scorer", "judge-a", "--bootstrap", "50")
    assert "labels:" not in explicit.stderr  # asked for: nothing to explain
    from intima.cli.drift import _why

    assert "no judge has rated these conversations' turns" in _why("affect", ("affect",))
