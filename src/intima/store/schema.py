"""The schema, owned by the subsystems: each declares its tables' migrations in its own
``tables`` module; this module only collects them, in dependency order.

The store sits below the subsystems, so it names their table modules as strings and imports
them when a store is opened, never at import time.
"""

from __future__ import annotations

import importlib
import sqlite3
from functools import cache

from pydantic import BaseModel, ConfigDict

#: Table modules in dependency order: a module's tables may reference those of earlier ones.
SCHEMA_MODULES = (
    "intima.store.tables",
    "intima.service.tables",
    "intima.judges.tables",
    "intima.affect.tables",
    "intima.validate.tables",
    "intima.converse.tables",
    "intima.generate.tables",
)


class Migration(BaseModel):
    """One append-only step of the schema, named ``<subsystem>_<NNNN>_<what>``."""

    model_config = ConfigDict(frozen=True)

    name: str
    sql: str
    #: the name this migration had before the subsystems owned their tables (older stores)
    replaces: str | None = None
    #: tables holding this machine's working state (claims, the local queue): never published
    operational: tuple[str, ...] = ()


@cache
def migrations() -> tuple[Migration, ...]:
    out: list[Migration] = []
    for module in SCHEMA_MODULES:
        out.extend(importlib.import_module(module).MIGRATIONS)
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise RuntimeError(f"duplicate migration names in {SCHEMA_MODULES}")
    return tuple(out)


def operational_tables() -> frozenset[str]:
    """Tables that never leave the machine, plus the migration ledger itself."""
    return frozenset({"_migrations", *(t for m in migrations() for t in m.operational)})


def statements(sql: str) -> list[str]:
    """Split a migration into statements; a trigger's ``BEGIN ... END`` stays whole."""
    out: list[str] = []
    current = ""
    for part in sql.split(";"):
        current += part + ";"
        if sqlite3.complete_statement(current):
            if current.strip(" \n;"):
                out.append(current.strip())
            current = ""
    if current.strip(" \n;"):
        out.append(current.strip())
    return out


def strict_rebuild(table: str, body: str, after: str = "") -> str:
    """The SQL that rebuilds ``table`` as a STRICT table declared by ``body`` (each column
    starts a line with its name; table constraints and continued lines start otherwise),
    keeping every row and its rowid, then runs ``after`` (the indexes and triggers the old
    table took with it).

    SQLite cannot make a table STRICT in place. Applied migrations are frozen: never change
    what this returns; a later rebuild gets a function of its own."""
    constraints = {"PRIMARY", "UNIQUE", "CHECK", "CONSTRAINT", "FOREIGN"}
    words = [line.split()[0] for line in body.strip().splitlines() if line.strip()]
    # a line that goes on with the one before it starts with no column name
    names = [w for w in words if w.isidentifier() and w.upper() not in constraints]
    cols = ", ".join(names)
    return (
        f"CREATE TABLE {table}_strict ({body.strip().rstrip(',')}) STRICT;\n"
        f"INSERT INTO {table}_strict (rowid, {cols}) SELECT rowid, {cols} FROM {table} "
        "ORDER BY rowid;\n"
        f"DROP TABLE {table};\n"
        f"ALTER TABLE {table}_strict RENAME TO {table};\n{after}"
    )
