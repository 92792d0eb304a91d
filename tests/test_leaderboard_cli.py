"""``intima board build``: the real command (its entry point), on a real SQLite store."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from conftest import invoke_cli
from intima.store import Store
from synthetic import synthetic_board, write_store


def board_payload(out: Path) -> dict:
    html = (out / "index.html").read_text()
    m = re.search(r'id="board-data">(.*?)</script>', html, re.S)
    assert m
    return json.loads(m.group(1))


def test_build_from_a_judged_store(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with Store.open(store) as db:
        write_store(db, synthetic_board(2, 31, 2, seed=1))
    out = tmp_path / "site"
    res = invoke_cli(
        "board",
        "build",
        "--out",
        str(out),
        "--store",
        str(store),
        "--bootstrap",
        "100",
        "--seed",
        "4",
    )
    assert res.returncode == 0, res.stderr
    assert "open file://" in res.stderr and "index.html" in res.stderr
    data = board_payload(out)
    assert data["bootstrap"] == 100 and data["seed"] == 4
    assert data["scorers"] == ["judge:synthetic-judge-0", "judge:synthetic-judge-1", "panel"]
    assert [c["label"] for c in data["configs"]] == ["synthetic-0", "synthetic-1"]
    # Same seed, same numbers: the build is reproducible.
    again = tmp_path / "again"
    invoke_cli(
        "board",
        "build",
        "--out",
        str(again),
        "--store",
        str(store),
        "--bootstrap",
        "100",
        "--seed",
        "4",
    )
    files = sorted((out / "data").iterdir())  # every view the page shows, and its numbers
    assert files and [(p.name, p.read_bytes()) for p in files] == [
        (p.name, p.read_bytes()) for p in sorted((again / "data").iterdir())
    ]


def test_build_with_responses_but_no_scores_yet(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    data = synthetic_board(1, 10, 0)
    with Store.open(store) as db:
        write_store(db, data)
    res = invoke_cli("board", "build", "--out", str(tmp_path / "o"), "--store", str(store))
    assert res.returncode == 0, res.stderr
    assert "scorers: none" in res.stderr
    assert board_payload(tmp_path / "o")["scorers"] == []


def test_serve_without_gradio_names_the_extra_before_claiming_to_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo install has no Gradio: `board serve` said "serving the leaderboard on ..." and
    then raised ModuleNotFoundError."""
    store = tmp_path / "s.db"
    with Store.open(store) as db:
        write_store(db, synthetic_board(1, 4, 0))
    monkeypatch.setitem(sys.modules, "gradio", None)  # as if not installed: importing it fails
    res = invoke_cli("board", "serve", "--port", "9", "--store", str(store))
    assert res.returncode == 2, res.stderr
    assert "pip install 'intima[board]'" in res.stderr and "Traceback" not in res.stderr
    assert "serving" not in res.stdout + res.stderr


def test_build_errors_are_one_line_and_name_the_fix(tmp_path: Path) -> None:
    res = invoke_cli(
        "board", "build", "--out", str(tmp_path / "o"), "--store", str(tmp_path / "no.db")
    )
    assert res.returncode == 2 and "no store at" in res.stderr and "intima run" in res.stderr
    Store.open(tmp_path / "empty.db").close()
    res = invoke_cli(
        "board", "build", "--out", str(tmp_path / "o"), "--store", str(tmp_path / "empty.db")
    )
    assert res.returncode == 2 and "has no responses yet" in res.stderr
    res = invoke_cli("board", "build", "--store", str(tmp_path / "empty.db"), "--bootstrap", "0")
    assert res.returncode == 2 and "--bootstrap" in res.stderr
    assert not (tmp_path / "o").exists()


def test_a_run_without_a_single_answer_is_not_on_the_board(tmp_path: Path, fake_server) -> None:
    from intima.core.config import ModelConfig
    from intima.dataset import load_prompts
    from intima.generate import generate
    from intima.results.data import load_board

    good, down = fake_server(), fake_server(rates={"500": 1.0})
    prompts = load_prompts("demo").first(3)
    with Store.open(tmp_path / "s.db") as store:
        [ok] = generate(store, prompts, [ModelConfig(spec=f"openai-compat:fake@{good.base_url}")])
        [bad] = generate(
            store, prompts, [ModelConfig(spec=f"openai-compat:typo@{down.base_url}", max_retries=0)]
        )
        assert bad.generated == 0 and bad.failed == 3
        board = load_board(store)
    assert [r.run_id for r in board.runs] == [ok.run_id]
    assert {r.run_id for r in board.responses} == {ok.run_id}


def test_reading_commands_refuse_a_missing_store(tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    for args in (["board", "build", "--out", str(tmp_path / "site")], ["explain", "abc"],
                 ["score"]):  # fmt: skip
        res = invoke_cli(*args, "--store", str(typo))
        assert res.returncode == 2 and "no store at" in res.stderr, (args, res.stderr)
        assert not typo.exists()


def test_a_truncated_store_gives_one_line_never_a_traceback(tmp_path: Path, fake_server) -> None:
    import sqlite3 as sq

    from intima.core.config import ModelConfig
    from intima.dataset import load_prompts
    from intima.generate import generate

    server = fake_server()
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        generate(
            store, load_prompts("demo"), [ModelConfig(spec=f"openai-compat:f@{server.base_url}")]
        )
    with sq.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = db.stat().st_size
    with db.open("r+b") as f:
        f.truncate(size - 2048)
    for args in (["board", "build", "--out", str(tmp_path / "site")], ["runs"],
                 ["export", str(tmp_path / "out")]):  # fmt: skip
        res = invoke_cli(*args, "--store", str(db))
        assert "Traceback" not in res.stderr, (args, res.stderr)
        assert res.returncode in (0, 2), (args, res.stderr)
        if res.returncode == 2:
            assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_explain_list_prints_the_ids_the_board_shows(tmp_path: Path) -> None:
    """Issue #23: `intima explain RESPONSE_ID` needs an id; `--list` prints them (id, run label,
    code, the response's first words), model text escaped, filtered by --run, cut by --limit."""
    hostile = "[bold red]markup[/] \x1b[31mred\x1b[0m then the rest of the words"
    data = synthetic_board(2, 12, 1, seed=3, extra_response=hostile)
    store = tmp_path / "s.db"
    with Store.open(store) as db:
        write_store(db, data)
    res = invoke_cli(
        "explain", "--list", "--run", "synthetic-0", "--limit", "5", "--store", str(store)
    )
    assert res.returncode == 0, res.stderr
    first = [r for r in data.responses if r.label == "synthetic-0"][:5]
    for r in first:
        assert r.response_id in res.stdout
    assert "synthetic-1" not in res.stdout  # --run keeps one run
    assert "[bold red]markup[/]" in res.stdout and "\x1b" not in res.stdout  # shown, not run
    assert "responses (5 of 12)" in res.stdout and "7 more" in res.stderr
    # Every listed id is one `intima explain` takes.
    rid = first[1].response_id
    assert invoke_cli("explain", rid, "--store", str(store)).returncode == 0
    both = invoke_cli("explain", "--list", rid, "--store", str(store))
    assert both.returncode != 0 and "--list takes no RESPONSE_ID" in both.stderr


def test_build_out_at_a_symbolic_link_is_one_line_and_leaves_the_target(tmp_path: Path) -> None:
    """Issue #30: ``--out`` at a link to a folder (or a dangling link) was a traceback
    (``rmtree`` on a link); the link and what it points to are left as they were."""
    store = tmp_path / "s.db"
    with Store.open(store) as db:
        write_store(db, synthetic_board(1, 10, 0))
    target = tmp_path / "elsewhere"
    invoke_cli("board", "build", "--out", str(target), "--store", str(store), "--bootstrap", "10")
    before = sorted(p.name for p in target.iterdir())
    for link, to in ((tmp_path / "site", target), (tmp_path / "dangling", tmp_path / "nothing")):
        link.symlink_to(to)
        res = invoke_cli("board", "build", "--out", str(link), "--store", str(store))
        assert res.returncode == 2, res.stderr
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
        assert "symbolic link" in res.stderr and str(link) in res.stderr
        assert link.is_symlink()
    assert sorted(p.name for p in target.iterdir()) == before and before
    assert not (tmp_path / "nothing").exists()
