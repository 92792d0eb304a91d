"""What a table looks like in the file itself (``PRAGMA table_info``): one reader for the
doctor, bundle export, bundle checks and import, which all look at tables they did not create."""

from __future__ import annotations

import sqlite3
from typing import Any, NamedTuple


class ColumnInfo(NamedTuple):
    name: str
    #: The declared type, upper-cased ("" when the column has none).
    type: str
    notnull: bool
    default: Any
    #: 1-based position in the primary key; 0 when not part of it.
    pk: int

    @property
    def required(self) -> bool:
        """Must be given on insert: part of the key, or NOT NULL with no default."""
        return bool(self.pk) or (self.notnull and self.default is None)


def table_info(conn: sqlite3.Connection, table: str) -> list[ColumnInfo]:
    """``table``'s columns in declaration order (empty for a table that does not exist)."""
    rows = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    return [ColumnInfo(r[1], str(r[2] or "").upper(), bool(r[3]), r[4], int(r[5])) for r in rows]


def primary_key(conn: sqlite3.Connection, table: str) -> list[str]:
    """The primary key's columns in key order."""
    return [c.name for c in sorted(table_info(conn, table), key=lambda c: c.pk) if c.pk]
