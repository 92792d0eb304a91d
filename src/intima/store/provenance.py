"""Who published each row of a store (``publishers``, ``row_publishers``: written on import by
:mod:`intima.bundles.owners` from each bundle's verified signature). A row with no entry was
made in this store; so was a row entered as :data:`MADE_HERE` (a row made here that a bundle
later carried too: it stays this store's as well as the bundle publisher's)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from intima.store.db import Store

#: How the rows made in this store are named.
LOCAL: Final = "this store"
#: The publisher entry of a row made in this store that a bundle carried too (a fingerprint is
#: 32 hex digits: this is none).
MADE_HERE: Final = "here"


def shown(name: str, fp: str) -> str:
    """``alice (key 1a2b3c4d)``: a publisher's claimed name and the start of its key."""
    return f"{name or 'unnamed'} (key {fp[:8]})"


def row_key(row: Mapping[str, Any], key: Sequence[str]) -> str:
    """A row by its primary key, as SQLite's ``json_array`` of the key's columns writes it
    (so a query can join a table to its publishers)."""
    return json.dumps([row.get(k) for k in key], separators=(",", ":"), ensure_ascii=False)


def recorded(store: Store) -> bool:
    """Whether the store has the tables (a store opened read-only before its upgrade has
    not: every row of it is taken as made there)."""
    return bool(store.query("SELECT 1 FROM sqlite_master WHERE name = 'row_publishers'"))


def publishers_of(store: Store, table: str, row_id: str) -> frozenset[str]:
    """The fingerprints that published a stored row (empty: made in this store)."""
    if not recorded(store):
        return frozenset()
    found = store.query(
        "SELECT publisher FROM row_publishers WHERE table_name = ? AND row_key = ?",
        (table, row_id),
    )
    return frozenset(r[0] for r in found)


def names(store: Store) -> dict[str, str]:
    """fingerprint -> ``name (key 1a2b3c4d)`` of every publisher this store holds rows of."""
    if not recorded(store):
        return {}
    return {
        r[0]: LOCAL if r[0] == MADE_HERE else shown(r[1], r[0])
        for r in store.query("SELECT fingerprint, name FROM publishers")
    }


def run_publishers(store: Store, table: str = "runs") -> dict[str, tuple[str, ...]]:
    """run_id -> who published its row of ``table`` (runs, or run_models: tables keyed by
    run_id alone), by name, this store's own as :data:`LOCAL` (empty for a store without the
    tables)."""
    if not recorded(store):
        return {}
    assert table in ("runs", "run_models")  # (a name, never a value, in the query below)
    known = names(store)
    out: dict[str, list[str]] = {}
    for r in store.query(
        f'SELECT r.run_id, p.publisher FROM "{table}" r LEFT JOIN row_publishers p '
        "ON p.table_name = ? AND p.row_key = json_array(r.run_id)",
        (table,),
    ):
        who = LOCAL if r[1] is None else known.get(r[1], shown("", r[1]))
        out.setdefault(r[0], []).append(who)
    return {k: tuple(sorted(set(v))) for k, v in out.items()}


def key_publisher(store: Store, fp: str | None) -> str:
    """Who a scorer key's publisher is (:func:`intima.core.ids.publisher_of_key`)."""
    return LOCAL if fp is None else names(store).get(fp, shown("", fp))


def table_publishers(store: Store, table: str) -> set[str]:
    """Who published any row of ``table`` (their names; rows made here are not counted)."""
    if not recorded(store):
        return set()
    known = names(store)
    found = store.query(
        "SELECT DISTINCT publisher FROM row_publishers WHERE table_name = ?", (table,)
    )
    return {known.get(r[0], shown("", r[0])) for r in found}
