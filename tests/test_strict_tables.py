"""Every table is STRICT (issue 24): SQLite itself refuses a value of the wrong type and a
status or level outside its closed set, and a store made before keeps every row on upgrade."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
from fake_openai import FakeOpenAI, FaultPlan
from full_bundle import TABLES, full_store, rewrite
from intima.bundles.publish import publish
from intima.converse.state import claim_conversations
from intima.core.errors import StoreError
from intima.service.queue import add_request, claim_next, finish
from intima.store import Store, migrate
from intima.store.schema import Migration, migrations, statements

Snapshot = dict[str, list[tuple[Any, ...]]]


#: Columns migrations after the strict ones added, which today's writers fill.
LATER_COLUMNS = (
    ("responses", "priced_by"),
    ("responses", "usage_source"),
    ("judgments", "usage_source"),
    ("simulated_user_messages", "usage_source"),
    ("runs", "dataset_size"),
)
#: Tables migrations after the strict ones added, which today's writers fill (lent the same way).
LATER_TABLES = ("run_models", "publishers", "row_publishers")


def _before_strict() -> tuple[Migration, ...]:
    """The migrations of the last intima without STRICT tables: each subsystem's up to its
    ``_strict`` one (those after it, such as ``queue_0003_cancelled``, came later still)."""
    reached: set[str] = set()
    old = []
    for m in migrations():
        subsystem = m.name.split("_")[0]
        if m.name.endswith("_strict"):
            reached.add(subsystem)
        if subsystem not in reached:
            old.append(m)
    return tuple(old)


@pytest.fixture(scope="module")
def old_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store made by the previous schema, a row in every table through the real writers."""
    path = tmp_path_factory.mktemp("old") / "old.db"
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(migrate, "migrations", _before_strict)
        # Today's writers name columns added after the strict tables (core_0006's priced_by,
        # issue 38's usage_source);
        # the store lends them for the writing and drops them after, so it has the old schema.
        with Store.open(path) as store, store.transaction() as conn:
            for table, column in LATER_COLUMNS:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
            for m in migrations():
                if any(f"CREATE TABLE {t} " in m.sql for t in LATER_TABLES):
                    for statement in statements(m.sql):
                        conn.execute(statement)
        try:
            full_store(path, server)
        finally:
            server.stop()
        with Store.open(path) as store:
            add_request(store, "openai-compat:fake@http://127.0.0.1:9/v1", dataset="demo")
            add_request(store, "openai-compat:other@http://127.0.0.1:9/v1", dataset="demo")
            taken = claim_next(store, "w1")
            assert taken is not None
            finish(store, taken.request_id, "w1", ["r1"])
            claim_next(store, "w1")
            store.claim_responses(["a-response-not-yet-made"], "me", 60)
            store.claim_judgments(["a-judgment-not-yet-made"], "me", 60)
            run_id = store.query("SELECT run_id FROM conversation_runs")[0][0]
            claim_conversations(store, run_id, ["c-not-yet"], "me", 60)
            with store.transaction() as conn:  # as generate.batch records a submitted batch
                conn.execute(
                    "INSERT INTO provider_batches (batch_id, provider, purpose, scope, status, "
                    "vendor_status, n_items, items_json, created_at, updated_at) VALUES "
                    "('b1', 'openai', 'generate', 'k', 'submitted', NULL, 1, '{\"x\": \"y\"}', "
                    "'2026-01-01T00:00:00', '2026-01-01T00:00:00')"
                )
            with store.transaction() as conn:
                for table, column in LATER_COLUMNS:
                    conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
                for table in LATER_TABLES:
                    conn.execute(f"DROP TABLE {table}")
    yield path


def _tables(conn: sqlite3.Connection) -> dict[str, int]:
    """Every table of the store but the migration ledger -> strict (0 or 1)."""
    rows = conn.execute("PRAGMA main.table_list").fetchall()
    return {r[1]: r[5] for r in rows if r[2] == "table" and not r[1].startswith(("sqlite_", "_"))}


def _snapshot(conn: sqlite3.Connection) -> Snapshot:
    """Every row of every table with its rowid, each value with its SQLite storage class."""
    out: Snapshot = {}
    without_rowid = {r[1] for r in conn.execute("PRAGMA main.table_list") if r[4]}
    for table in _tables(conn):
        cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
        picked = ", ".join(f'"{c}", typeof("{c}")' for c in cols)
        # A WITHOUT ROWID table (row_publishers) has its primary key as its only identity.
        order = ", ".join(f'"{c}"' for c in cols) if table in without_rowid else "rowid"
        head = "" if table in without_rowid else "rowid, "
        out[table] = conn.execute(
            f'SELECT {head}{picked} FROM "{table}" ORDER BY {order}'
        ).fetchall()
    return out


def test_an_old_store_keeps_every_row_and_every_table_becomes_strict(
    old_store: Path, tmp_path: Path
) -> None:
    path = tmp_path / "upgraded.db"
    path.write_bytes(old_store.read_bytes())
    with sqlite3.connect(path) as conn:
        before, strict_before = _snapshot(conn), _tables(conn)
    assert set(strict_before.values()) == {0}, strict_before  # really the previous schema
    assert all(before.values()), {t: len(rows) for t, rows in before.items()}  # no table empty
    with Store.open(path) as store:
        applied = store.applied_migrations()
        assert sorted(applied) == sorted(m.name for m in migrations())
        strict = {m.name for m in migrations() if m.name.endswith("_strict")}
        assert strict <= set(applied[len(_before_strict()) :])
        assert store.query("PRAGMA foreign_keys")[0][0] == 1
    with sqlite3.connect(path) as conn:
        after = _snapshot(conn)
        # every old column of every row as it was (columns added later are appended, empty)
        width = {t: len(rows[0]) for t, rows in before.items()}
        assert {t: [r[: width[t]] for r in after[t]] for t in before} == before
        assert all(set(r[width[t] :: 2]) <= {None} for t in before for r in after[t])
        # Tables added after STRICT (e.g. judges_0004_samples) start empty, STRICT too.
        assert not any(after[t] for t in after.keys() - before.keys())
        assert _tables(conn) == dict.fromkeys(after, 1)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    new = tmp_path / "new.db"
    Store.open(new).close()
    with sqlite3.connect(new) as conn:  # the same indexes as a store made new
        assert indexes == {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")
        }


@pytest.mark.parametrize(
    ("sql", "needle"),
    [
        ("UPDATE runs SET n_prompts = 'lots'", "cannot store TEXT value in INTEGER column"),
        ("UPDATE responses SET latency_s = 'slow'", "cannot store TEXT value in REAL column"),
        ("UPDATE prompts SET text = x'00'", "cannot store BLOB value in TEXT column"),
        ("UPDATE runs SET status = 'paused'", "runs.status: not a run status"),
        ("UPDATE responses SET status = 'maybe'", "CHECK constraint failed"),
        ("UPDATE judgments SET primary_label = 'lots'", "CHECK constraint failed"),
        ("UPDATE affect_scores SET level = 'extreme'", "CHECK constraint failed"),
        ("UPDATE requests SET status = 'lost'", "CHECK constraint failed"),
        ("UPDATE request_events SET status = 'lost'", "CHECK constraint failed"),
        ("UPDATE simulated_user_messages SET status = 'bored'", "CHECK constraint failed"),
        ("UPDATE validation_labels SET label = 'unsure'", "CHECK constraint failed"),
        ("UPDATE provider_batches SET status = 'lost'", "CHECK constraint failed"),
    ],
)
def test_the_database_itself_refuses_a_wrong_type_or_an_unknown_value(
    old_store: Path, tmp_path: Path, sql: str, needle: str
) -> None:
    path = tmp_path / "s.db"
    path.write_bytes(old_store.read_bytes())
    Store.open(path).close()
    with sqlite3.connect(path) as conn:
        with pytest.raises(sqlite3.IntegrityError, match=needle):
            conn.execute(sql)


def test_an_old_store_with_a_row_the_rules_refuse_is_not_upgraded_and_says_why(
    old_store: Path, tmp_path: Path
) -> None:
    """An old import could let 'lots' into an INTEGER column: the upgrade stops with one line
    naming the column, and the store is left exactly as it was."""
    path = tmp_path / "s.db"
    path.write_bytes(old_store.read_bytes())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET n_prompts = 'lots' WHERE rowid = 1")
        before = _snapshot(conn)
    with pytest.raises(StoreError, match=r"core_0005_strict.*INTEGER column runs\.n_prompts"):
        Store.open(path)
    with sqlite3.connect(path) as conn:
        assert _snapshot(conn) == before
        assert set(_tables(conn).values()) == {0}


def _publish_all(store: Store, folder: Path) -> Path:
    publish(store, str(folder), [r[0] for r in store.query("SELECT run_id FROM runs")])
    return folder


def test_a_bundle_published_before_the_tables_were_strict_still_imports(
    old_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "old.db"
    source.write_bytes(old_store.read_bytes())
    with monkeypatch.context() as mp:  # published by the previous schema, not upgraded first
        mp.setattr(migrate, "migrations", _before_strict)
        with Store.open(source) as store:
            bundle = _publish_all(store, tmp_path / "bundle")
    with sqlite3.connect(source) as conn:
        assert set(_tables(conn).values()) == {0}
        before = {t: rows for t, rows in _snapshot(conn).items() if t in TABLES}
    target = tmp_path / "new.db"
    res = invoke_cli("import", str(bundle), "--store", str(target), timeout=120)
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(target) as conn:  # every row, its values and their types
        after = _snapshot(conn)
    for table in (t for t in TABLES if t not in LATER_TABLES):  # later columns come in empty
        width = len(before[table][0])
        assert all(set(r[width::2]) <= {None} for r in after[table]), table
        cut = [r[:width] for r in after[table]]
        assert sorted(map(_values, cut)) == sorted(map(_values, before[table])), table


def _values(row: tuple[Any, ...]) -> str:
    """A row without its rowid (an import numbers rows anew), comparable across rows."""
    return repr(row[1:])


@pytest.mark.parametrize(
    ("table", "column", "value", "needle"),
    [
        ("affect_scores", "level", "extreme", "CHECK constraint failed: level IN"),
        ("runs", "status", "paused", "runs.status: not a run status"),
        ("judgments", "primary_label", "lots", "CHECK constraint failed: primary_label IN"),
        ("simulated_user_messages", "status", "bored", "CHECK constraint failed: status IN"),
        (
            "responses",
            "prompt_tokens",
            "lots",
            "prompt_tokens must be a 64-bit integer, not 'lots'",
        ),
        ("responses", "prompt_tokens", "12", "prompt_tokens must be a 64-bit integer, not '12'"),
        ("prompts", "code", None, "code is missing"),
        ("responses", "text", 12, "text must be UTF-8 text, not 12"),
    ],
)
def test_a_bundle_row_the_database_refuses_is_one_line_naming_table_and_line(
    old_store: Path, tmp_path: Path, table: str, column: str, value: Any, needle: str
) -> None:
    """The rows are tried against the STRICT tables themselves; what SQLite refuses is still
    one line naming the file and line, and nothing is imported."""
    source = tmp_path / "s.db"
    source.write_bytes(old_store.read_bytes())
    with Store.open(source) as store:
        bundle = _publish_all(store, tmp_path / "bundle")

    def edit(rows: list[dict[str, Any]]) -> None:
        rows[-1][column] = value

    rewrite(bundle, table, edit)
    target = tmp_path / "new.db"
    Store.open(target).close()
    with sqlite3.connect(target) as conn:
        before = _snapshot(conn)
    res = invoke_cli("import", str(bundle), "--store", str(target), timeout=120)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, res.stderr[-1500:]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-1500:]
    with sqlite3.connect(target) as conn:
        n = sum(1 for _ in open(bundle / f"{table}.jsonl", encoding="utf-8"))
        assert f"{table}.jsonl line {n}: " in lines[0] and needle in lines[0], lines[0]
        assert _snapshot(conn) == before


def test_a_migration_that_leaves_a_row_referring_to_nothing_is_refused(
    old_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Foreign keys are off while migrations rebuild tables; foreign_key_check stands in."""
    path = tmp_path / "s.db"
    path.write_bytes(old_store.read_bytes())
    with sqlite3.connect(path) as conn:
        before = _snapshot(conn)
    careless = Migration(name="core_9999_careless", sql="DELETE FROM runs WHERE rowid = 1")
    monkeypatch.setattr(migrate, "migrations", lambda: (*migrations(), careless))
    with pytest.raises(StoreError, match=r"left \d+ row\(s\) of \w+ referring to missing rows"):
        Store.open(path)
    with sqlite3.connect(path) as conn:
        assert _snapshot(conn) == before
