"""Issue 20: a results bundle is hostile input. Rows that passed every import check and then
broke the board, the Space or `intima judge` are refused, each with one line naming the table
and line, and the store is left as it was: JSON columns that do not match their schema,
numbers out of range, and rows that refer to another bundle's runs."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
from fake_openai import FakeOpenAI, FaultPlan
from full_bundle import full_store, refused_by_cli, rewrite
from intima.bundles.publish import publish
from intima.store import Store

Edit = Callable[[list[dict[str, Any]]], Any]


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(a bundle with rows in every published table, the store it was published from)."""
    root = tmp_path_factory.mktemp("full")
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    try:
        db = full_store(root / "source.db", server)
        with Store.open(db) as store:  # every run, the validation set's too
            publish(
                store, str(root / "bundle"), [r[0] for r in store.query("SELECT run_id FROM runs")]
            )
    finally:
        server.stop()
    yield root / "bundle", db


def _set(column: str, value: Any, where: Callable[[Any], bool] = lambda v: True) -> Edit:
    def edit(rows: list[dict[str, Any]]) -> None:
        next(r for r in rows if where(r.get(column)))[column] = value

    return edit


def _foreign_response(rows: list[dict[str, Any]]) -> None:
    rows[0]["response_id"] = "0" * 32  # a response some other bundle may hold


def _foreign_content(rows: list[dict[str, Any]]) -> None:
    rows[0]["content_hash"] = "f" * 64


def _drop_first(rows: list[dict[str, Any]]) -> None:
    del rows[0]


def _stop_past_the_end(rows: list[dict[str, Any]]) -> None:
    rows[0]["after_turn"] = 7  # the conversation has 2 turns


def _stop_one_past_the_end(rows: list[dict[str, Any]]) -> None:
    rows[0]["after_turn"] = 3  # the boundary: turn 2 is the last, so 3 is past it


CASES: list[tuple[str, str, Edit, str]] = [
    ("report_json []", "validation_reports", _set("report_json", "[]"),
     "validation_reports.jsonl line 1: report_json does not match its schema"),
    ("report_json groups []", "validation_reports",
     _set("report_json", json.dumps({"n": 3, "groups": []})), "report_json does not match"),
    ("details_json []", "affect_scores", _set("details_json", "[]"),
     "affect_scores.jsonl line 1: details_json does not match its schema"),
    ("context_json object", "prompts",
     _set("context_json", json.dumps({"role": "user", "content": "hi"}), lambda v: v is not None),
     "context_json does not match its schema"),
    ("context_json role", "prompts",
     _set("context_json", json.dumps([{"role": "god", "content": "hi"}]), lambda v: v is not None),
     "context_json does not match its schema"),
    ("turn 10**12", "conversation_turns", _set("turn", 10**12),
     "conversation_turns.jsonl line 1: turn 1000000000000 is outside 1..50"),
    ("turns 10**6", "conversation_runs", _set("turns", 10**6), "turns 1000000 is outside 1..50"),
    ("after_turn past the end", "simulated_user_messages", _stop_past_the_end,
     "after_turn 7 is past its conversation's 2 turns"),
    ("after_turn one past the end", "simulated_user_messages", _stop_one_past_the_end,
     "after_turn 3 is past its conversation's 2 turns"),
    ("negative tokens", "responses", _set("completion_tokens", -5), "completion_tokens -5"),
    ("affect factor 7", "affect_scores", _set("sp", 7.0), "sp 7.0 is outside 0..1"),
    ("validation groups_json list", "validation_labels", _set("groups_json", "[1]"),
     "groups_json does not match its schema"),
    ("ratings_json level", "judgments",
     _set("ratings_json", json.dumps({"anthropomorphism": "extreme"}), lambda v: v is not None),
     "ratings_json must map behaviours to levels"),
    ("judge config a list", "judgments", _set("judge_config_json", "[]"),
     "judge_config_json must be a JSON object"),
    ("run config system_prompt 5", "runs", _set("config_json", json.dumps({"system_prompt": 5})),
     "config_json does not match its schema"),
    ("validation label of another bundle", "validation_labels", _foreign_response,
     "names no response of this bundle"),
    ("affect score of another bundle", "affect_scores", _foreign_response,
     "names no response of this bundle"),
    ("affect score lacking a category", "affect_scores", _drop_first,
     "(a score has one row per category)"),
    ("judgment of other content", "judgments", _foreign_content,
     "content_hash 'ffff"),
    # Issue 38: names had no length limit; a 100,000-character label made `board build --from`
    # spend minutes wrapping it. 1,201 is one past the limit.
    ("run label 100k", "runs", _set("label", "L" * 100_000),
     "runs.jsonl line 1: label is 100,000 characters; a name holds at most 1,200"),
    ("run label 1,201", "runs", _set("label", "L" * 1_201), "label is 1,201 characters"),
    ("model name 100k", "runs", _set("model_name", "m" * 100_000), "model_name is 100,000"),
    ("judge label 100k", "judgments", _set("judge_label", "J" * 100_000),
     "judgments.jsonl line 1: judge_label is 100,000 characters"),
    ("validation scorer 100k", "validation_reports", _set("scorer", "s" * 100_000),
     "scorer is 100,000 characters"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "table", "edit", "needle"), CASES, ids=[c[0] for c in CASES])
def test_a_crafted_row_is_refused_naming_it(
    full: tuple[Path, Path], tmp_path: Path, what: str, table: str, edit: Edit, needle: str
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(full[0], bundle)
    rewrite(bundle, table, edit)
    db = tmp_path / "s.db"
    Store.open(db).close()
    refused_by_cli(bundle, db, needle)


def test_the_full_bundle_imports_and_the_doctor_finds_it_sound(
    full: tuple[Path, Path], tmp_path: Path
) -> None:
    """The rules refuse nothing intima itself writes."""
    db = tmp_path / "s.db"
    res = invoke_cli("import", str(full[0]), "--store", str(db))
    assert res.returncode == 0, res.stderr
    doctor = invoke_cli("doctor", "--store", str(db))
    assert doctor.returncode == 0 and "no problems found" in doctor.stdout, doctor.stdout
    source = invoke_cli("doctor", "--store", str(full[1]))
    assert source.returncode == 0, source.stdout


def _split(full: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, str]:
    """Two bundles of one store: A holds a single-prompt run, B the conversation run; and
    the single-prompt run's id."""
    with sqlite3.connect(full[1]) as conn:
        conv = conn.execute("SELECT run_id FROM conversation_runs").fetchone()[0]
        plain = conn.execute(
            "SELECT run_id FROM runs WHERE run_id NOT IN (SELECT run_id FROM "
            "conversation_runs) AND config_json NOT LIKE '%validation_set%' ORDER BY created_at"
        ).fetchone()[0]
    with Store.open(full[1]) as store:
        publish(store, str(tmp_path / "a"), [plain])
        publish(store, str(tmp_path / "b"), [conv])
    return tmp_path / "a", tmp_path / "b", plain


@pytest.mark.parametrize("with_run_row", [False, True])
def test_a_bundle_cannot_mark_another_bundles_run_as_a_conversation(
    full: tuple[Path, Path], tmp_path: Path, with_run_row: bool
) -> None:
    """Bundle B names bundle A's single-prompt run in ``conversation_runs``, which took that
    run off the board; with ``with_run_row`` B also carries a faithful copy of A's run row,
    so the reference is to a run of its own bundle, but that run is no conversation."""
    from intima.results.data import load_board

    a, b, plain = _split(full, tmp_path)

    def hide(rows: list[dict[str, Any]]) -> None:
        rows.append({**rows[0], "run_id": plain})

    rewrite(b, "conversation_runs", hide)
    needle = "names no run of this bundle"
    if with_run_row:
        a_run = json.loads((a / "runs.jsonl").read_text().splitlines()[0])
        rewrite(b, "runs", lambda rows: rows.append(a_run))
        needle = "is not a conversation of these turns"
    db = tmp_path / "s.db"
    assert invoke_cli("import", str(a), "--store", str(db)).returncode == 0
    refused_by_cli(b, db, needle)
    with Store.open(db) as store:
        assert [r.run_id for r in load_board(store).runs] == [plain]
