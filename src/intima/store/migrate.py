"""Applying the subsystems' missing migrations to a store, inside the caller's transaction."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from intima.core.errors import StoreError
from intima.store.schema import migrations, statements


def apply_pending(conn: sqlite3.Connection, path: Path, stamp: str) -> None:
    """Apply what is missing; what is applied is read inside the caller's (immediate)
    transaction, so two processes never both apply one. The caller turns foreign keys off
    (a migration may rebuild a table others refer to); this checks them instead: a migration
    that leaves a row referring to nothing is refused, and nothing is changed."""
    steps = migrations()
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    for step in steps:  # stores written before the subsystems owned their tables
        if step.replaces and step.replaces != step.name:
            conn.execute(
                "UPDATE _migrations SET name = ? WHERE name = ?", (step.name, step.replaces)
            )
    applied = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
    if unknown := applied - {step.name for step in steps}:
        raise StoreError(
            f"{path} was written by a newer intima (migrations {sorted(unknown)}); "
            "upgrade intima to read it"
        )
    pending = [step for step in steps if step.name not in applied]
    if not pending:
        return
    dangling = _dangling(conn)
    for step in pending:
        try:
            for statement in statements(step.sql):
                conn.execute(statement)
        except sqlite3.IntegrityError as exc:
            # A row of the wrong type, or outside a closed set, that an old import let in.
            # (a rebuilt table is named <table>_strict until its rows are in: say <table>)
            said = " ".join(str(exc).split()).replace("_strict.", ".")
            raise StoreError(
                f"{path}: cannot upgrade the schema ({step.name}): a row breaks its rules "
                f"({said}); nothing was changed. Remove that row with `intima doctor --fix` of "
                "the intima that wrote the store"
            ) from exc
        conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (step.name, stamp))
    if broken := _dangling(conn) - dangling:
        table, _rowid, parent = sorted(broken, key=str)[0]
        raise StoreError(
            f"{path}: upgrading the schema left {len(broken)} row(s) of {table} referring to "
            f"missing rows of {parent}; nothing was changed"
        )


def _dangling(conn: sqlite3.Connection) -> set[tuple[str, int, str]]:
    """Rows whose foreign key names a row that is not there: (table, rowid, parent)."""
    return {(r[0], r[1], r[2]) for r in conn.execute("PRAGMA foreign_key_check")}
