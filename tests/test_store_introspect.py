"""One reader of a table's shape, on a real SQLite file."""

import sqlite3
from pathlib import Path

from intima.store import Store
from intima.store.introspect import primary_key, table_info


def test_columns_types_requirement_and_key_order(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "t.db")
    conn.execute(
        "CREATE TABLE t (b TEXT NOT NULL, a integer, c REAL NOT NULL DEFAULT 0, d, "
        "PRIMARY KEY (a, b))"
    )
    cols = table_info(conn, "t")
    assert [c.name for c in cols] == ["b", "a", "c", "d"]
    assert [c.type for c in cols] == ["TEXT", "INTEGER", "REAL", ""]
    # a is nullable but in the key; c is NOT NULL but has a default; d is neither.
    assert [c.required for c in cols] == [True, True, False, False]
    assert primary_key(conn, "t") == ["a", "b"]  # key order, not declaration order
    assert table_info(conn, "missing") == [] and primary_key(conn, "missing") == []


def test_the_store_answers_for_its_own_tables(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        assert store.primary_key("responses") == ["response_id"]
        names = [c.name for c in store.columns("responses")]
        assert names[:3] == ["response_id", "config_key", "prompt_id"] and "served_by" in names
