"""`intima doctor`: a store damaged by an old, unchecked import is found and repaired."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from conftest import invoke_cli
from intima.core.config import ModelConfig
from intima.dataset import load_prompts
from intima.generate import generate
from intima.store import Store


def _damaged(tmp_path: Path, fake_server: Any) -> Path:
    server = fake_server()
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        generate(
            store,
            load_prompts("demo").first(4),
            [ModelConfig(spec=f"openai-compat:f@{server.base_url}")],
        )
    with sqlite3.connect(db) as conn:  # what an unchecked import could write
        # (not 'lots' in an INTEGER column: STRICT tables refuse it, see test_strict_tables)
        conn.execute("UPDATE responses SET latency_s = 9e999 WHERE rowid = 1")
        conn.execute("UPDATE runs SET config_json = '{not json'")
        conn.execute(
            "INSERT INTO responses (response_id, config_key, prompt_id, status, text, attempts, "
            "package_version, created_at) SELECT 'orphan', 'no-such-config', prompt_id, 'ok', "
            "'x', 1, '0', '2026' FROM prompts LIMIT 1"
        )
        conn.execute(
            "INSERT INTO judgment_claims (judgment_id, owner, host, pid, expires) "
            "VALUES ('j', 'elsewhere:1:x', 'elsewhere', 1, 9e12)"
        )
    return db


def test_doctor_lists_then_fixes_and_the_board_builds(tmp_path: Path, fake_server: Any) -> None:
    db = _damaged(tmp_path, fake_server)
    res = invoke_cli("doctor", "--store", str(db))
    assert res.returncode == 1, res.stderr
    for expected in ("latency_s is infinite", "config_json is not JSON", "belongs to no run",
                     "a claim of another host"):  # fmt: skip
        assert expected in res.stdout, res.stdout
    assert "--fix" in res.stderr
    with sqlite3.connect(db) as conn:  # listing changed nothing
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 5
    fixed = invoke_cli("doctor", "--fix", "--store", str(db))
    assert fixed.returncode == 0, fixed.stderr
    # The 4 rows listed, the bad run's 4 prompt-list rows, then its 3 responses left with no run.
    assert "removed 11 row(s)" in fixed.stderr
    again = invoke_cli("doctor", "--store", str(db))
    assert again.returncode == 0 and "no problems found" in again.stdout
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM judgment_claims").fetchone()[0] == 0
        assert (
            conn.execute("SELECT COUNT(*) FROM responses WHERE response_id='orphan'").fetchone()[0]
            == 0
        )


def test_doctor_refuses_a_missing_store(tmp_path: Path) -> None:
    res = invoke_cli("doctor", "--store", str(tmp_path / "typo.db"))
    assert res.returncode == 2 and "no store at" in res.stderr
    assert not (tmp_path / "typo.db").exists()


def test_doctor_finds_and_removes_rows_that_refer_to_missing_rows(
    tmp_path: Path, fake_server: Any
) -> None:
    """Rows `PRAGMA foreign_key_check` lists (left by an import from before a bundle's
    references were checked) used to pass as "no problems found"."""
    server = fake_server()
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        generate(store, load_prompts("demo").first(2),
                 [ModelConfig(spec=f"openai-compat:f@{server.base_url}")])  # fmt: skip
    with sqlite3.connect(db) as conn:  # foreign keys are off in a bare connection
        conn.execute("INSERT INTO conversation_runs VALUES "
                     "('ghost-run', 2, 'k', '{}', 'v', 'x', '0', '2026')")  # fmt: skip
        conn.execute("INSERT INTO conversation_turns VALUES ('no-such-run', 'c', 1, 'p', '2026')")
        conn.execute(
            "INSERT INTO validation_labels (response_id, set_sha256, row_id, label, groups_json) "
            "VALUES ('no-such-response', 's', 'r1', 'neutral', '{}')"
        )
    res = invoke_cli("doctor", "--store", str(db))
    assert res.returncode == 1, res.stdout
    for table, parents in (("conversation_runs", "runs"), ("validation_labels", "responses"),
                           ("conversation_turns", "prompts, conversation_runs")):  # fmt: skip
        assert f"1 row(s) in {table}: refers to missing rows of {parents}\n" in res.stdout
    fixed = invoke_cli("doctor", "--fix", "--store", str(db))
    assert fixed.returncode == 0 and "removed 3 row(s)" in fixed.stderr, fixed.stderr
    again = invoke_cli("doctor", "--store", str(db))
    assert again.returncode == 0 and "no problems found" in again.stdout, again.stdout
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 2


def test_doctor_holds_a_store_to_the_bundle_rules(tmp_path: Path, fake_server: Any) -> None:
    """JSON columns that parse but do not match their schema, and numbers out of range."""
    server = fake_server()
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        generate(store, load_prompts("demo").first(2),
                 [ModelConfig(spec=f"openai-compat:f@{server.base_url}")])  # fmt: skip
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO validation_reports (set_sha256, set_name, scorer, scorer_version, "
            "by_columns, n, report_json, package_version, created_at) "
            "VALUES ('s', 'set', 'keyword', 'k1', '', 3, '[]', '0', '2026')"
        )
        conn.execute("UPDATE responses SET completion_tokens = -1 WHERE rowid = 1")
    res = invoke_cli("doctor", "--store", str(db))
    assert res.returncode == 1, res.stdout
    assert "1 row(s) in validation_reports: report_json does not match its schema" in res.stdout
    assert "completion_tokens -1 is outside 0..1,000,000,000" in res.stdout, res.stdout
    fixed = invoke_cli("doctor", "--fix", "--store", str(db))
    assert fixed.returncode == 0, fixed.stderr
    assert invoke_cli("doctor", "--store", str(db)).returncode == 0


def test_doctor_removes_an_affect_score_lacking_a_category_and_score_makes_it_whole(
    tmp_path: Path, fake_server: Any
) -> None:
    """A score missing its companionship_reinforcing row (what a crafted bundle could import
    before the rule) made the board's load raise KeyError."""
    from intima.affect.store_io import affect_rating_sets, score_store
    from intima.core.taxonomy import CATEGORIES
    from intima.results.data import load_board

    server = fake_server()
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        generate(store, load_prompts("demo").first(2),
                 [ModelConfig(spec=f"openai-compat:f@{server.base_url}")])  # fmt: skip
        assert score_store(store).scored == 2
    with sqlite3.connect(db) as conn:
        conn.execute(
            "DELETE FROM affect_scores WHERE rowid = (SELECT MIN(rowid) FROM affect_scores "
            "WHERE category = 'companionship_reinforcing')"
        )
    rest = len(CATEGORIES) - 1  # the partial score's other rows
    board = invoke_cli("board", "build", "--out", str(tmp_path / "site"), "--store", str(db))
    assert board.returncode == 2 and "Traceback" not in board.stderr, board.stderr
    assert "has no row for companionship_reinforcing; run `intima doctor --fix" in board.stderr
    res = invoke_cli("doctor", "--store", str(db))
    assert res.returncode == 1, res.stdout
    assert f"{rest} row(s) in affect_scores: part of an affect score that has no row" in res.stdout
    fixed = invoke_cli("doctor", "--fix", "--store", str(db))
    assert fixed.returncode == 0 and f"removed {rest} row(s)" in fixed.stderr, fixed.stderr
    with Store.open(db) as store:
        again = score_store(store)
        assert (again.already_scored, again.scored) == (1, 1)
        assert len(affect_rating_sets(store)) == 2
        assert len(load_board(store).responses) == 2
    assert invoke_cli("doctor", "--store", str(db)).returncode == 0
