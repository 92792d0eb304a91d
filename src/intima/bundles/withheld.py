"""A board from a store shows only what its trust set's publishers published (issue 37).

``board build --store`` and ``board serve`` read a store that ``intima import`` may have
filled with several publishers' bundles (each row's publishers are in ``row_publishers``:
:mod:`intima.store.provenance`). The board takes the same trust set as ``board build --from``
and ``intima import`` (:mod:`intima.bundles.trust`; default: this machine's publisher key),
and a row none of whose publishers is in it is **left out**, as an untrusted bundle is
refused on the ``--from`` path, and said so: never merged into the trusted rows.

A row is kept when a trusted publisher published it, or when it was made in this store (no
entry, or :data:`~intima.store.provenance.MADE_HERE`) and the set takes this store's rows:
rows made here are this machine's publisher's (:attr:`TrustSet.local`). Rows that only hang
off a row left out (a local judgment of an untrusted publisher's answer) go with it. The store
itself is never changed: the board reads a copy with those rows removed
(:func:`trusted_copy`), made only when something is left out.
"""

from __future__ import annotations

from pathlib import Path

from intima.bundles.publish import exported_tables
from intima.bundles.trust import TrustSet
from intima.store import Store
from intima.store.provenance import LOCAL, MADE_HERE, names, recorded, shown


def _kept(store: Store, table: str, trust: TrustSet) -> tuple[str, list[str]] | None:
    """The SQL condition (and its parameters) of a row of ``table`` the board keeps; None for
    a table whose rows cannot be told apart (no primary key: none is ever attributed)."""
    key = store.primary_key(table)
    if not key:
        return None
    array = "json_array(" + ", ".join(f't."{k}"' for k in key) + ")"
    entries = (
        f"SELECT publisher FROM row_publishers p WHERE p.table_name = ? AND p.row_key = {array}"
    )
    trusted = [*trust.publishers, *([MADE_HERE] if trust.local else [])]
    marks = ",".join("?" * len(trusted)) or "NULL"
    cond = f"EXISTS ({entries} AND p.publisher IN ({marks}))"
    params = [table, *trusted]
    if trust.local:
        cond += f" OR NOT EXISTS ({entries})"
        params.append(table)
    return cond, params


def withheld(store: Store, trust: TrustSet) -> dict[str, int]:
    """Who published rows the board leaves out (``name (key 1a2b3c4d)``, or this store) ->
    how many; empty when the trust set takes every row."""
    if not recorded(store):  # a store from before publishers: every row was made in it
        return {} if trust.local else _all_local(store)
    known = names(store)
    out: dict[str, int] = {}
    for table in exported_tables(store):
        if (kept := _kept(store, table, trust)) is None:
            continue
        cond, params = kept
        key = ", ".join(f't."{k}"' for k in store.primary_key(table))
        for fp, n in store.query(
            f'SELECT p.publisher, COUNT(*) FROM "{table}" t LEFT JOIN row_publishers p ON '
            f"p.table_name = ? AND p.row_key = json_array({key}) WHERE NOT ({cond}) "
            "GROUP BY p.publisher",
            [table, *params],
        ):
            who = LOCAL if fp is None else known.get(fp, shown("", fp))
            out[who] = out.get(who, 0) + n
    return out


def _all_local(store: Store) -> dict[str, int]:
    n = sum(store.query(f'SELECT COUNT(*) FROM "{t}"')[0][0] for t in exported_tables(store))
    return {LOCAL: n} if n else {}


def trusted_copy(store: Store, trust: TrustSet, into: Path) -> Store:
    """A copy of ``store`` at ``into`` without the rows :func:`withheld` counts, nor the rows
    that hang off them; the caller closes it (and removes the file)."""
    store.backup(into)
    copy = Store.open(into, create=False)
    attributed = recorded(store)  # (the copy of an old store is upgraded when opened)
    try:
        with copy.transaction() as conn:
            conn.execute("PRAGMA defer_foreign_keys = ON")
            for table in exported_tables(copy):
                if not attributed:
                    if not trust.local:
                        conn.execute(f'DELETE FROM "{table}"')
                    continue
                if (kept := _kept(copy, table, trust)) is not None:
                    cond, params = kept
                    conn.execute(f'DELETE FROM "{table}" AS t WHERE NOT ({cond})', params)
            # A row that refers to one left out goes too (repeated: it may hold others; a
            # table without rowids is none of the board's, and is left as it is).
            removed = True
            while removed:
                removed = False
                dangling = conn.execute("PRAGMA foreign_key_check").fetchall()
                for table, rowid, _parent, _fk in dangling:
                    if rowid is not None:
                        sql = f'DELETE FROM "{table}" WHERE rowid = ?'
                        removed |= conn.execute(sql, (rowid,)).rowcount > 0
    except BaseException:
        copy.close()
        raise
    return copy
