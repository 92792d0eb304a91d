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
