"""Finding (and, when asked, removing) rows a store should not hold: infinite numbers, JSON
columns that do not parse or do not match their schema, numbers outside their range (the rules
of :mod:`intima.bundles.rules`), affect scores lacking a category, responses of no run,
rows that refer to a row the store does not hold (SQLite's ``foreign_key_check``), claims
left by other machines, random samples whose members are not what their seed and design
give (:mod:`intima.bundles.membership`), and rows whose publisher may not speak for them (a
scorer's row published by another than the scorer's publisher; model facts of a run published
by another than the run's publisher: :mod:`intima.bundles.owners`). :func:`publishers` lists
who published the rows of each table. Rows like these came in through imports from before every
row was checked (:mod:`intima.bundles.checks`); this is how a damaged store is repaired. A value
of the wrong type or outside a closed set is not looked for: the tables are STRICT, with CHECKs,
so SQLite refuses it (a store holding one is not upgraded to them; see
:mod:`intima.store.migrate`).
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel

from intima.bundles.membership import store_problems
from intima.bundles.owners import SCORER_KEYS
from intima.bundles.publish import exported_tables
from intima.bundles.rules import partial_scores, row_problem, ruled_columns, score_key
from intima.bundles.signing import local_publisher
from intima.core.ids import publisher_of_key
from intima.store import Store
from intima.store.claims import HOST
from intima.store.provenance import LOCAL, MADE_HERE, names, recorded, shown

_CLAIMS: Final = ("response_claims", "judgment_claims")


class Problem(BaseModel):
    table: str
    rowid: int
    what: str


class Checkup(BaseModel):
    integrity: str  # "ok", or what SQLite's integrity check reported
    problems: list[Problem]
    removed: int = 0


def examine(store: Store) -> Checkup:
    """Every problem found; changes nothing."""
    integrity = "; ".join(r[0] for r in store.query("PRAGMA integrity_check"))
    problems: list[Problem] = []
    for table in exported_tables(store):
        problems += _typed(store, table)
        problems += _ruled(store, table)
    problems += _partial_scores(store)
    problems += _orphans(store)
    problems += _dangling(store)
    problems += _foreign_claims(store)
    problems += _spoken_for(store)
    problems += [
        Problem(table="judgment_samples", rowid=rowid, what=what)
        for rowid, what in store_problems(store)
    ]
    return Checkup(integrity=integrity, problems=problems)


def repair(store: Store) -> Checkup:
    """Remove every row :func:`examine` finds, and the rows that only hang off them (a removed
    run's prompt list, a removed response's scores), in one transaction."""
    found = examine(store)
    removed, problems = 0, found.problems
    # Removing a run can leave its responses with no run: repeat until nothing is left.
    while problems:
        with store.transaction() as conn:
            conn.execute("PRAGMA defer_foreign_keys = ON")
            for p in problems:
                sql = f'DELETE FROM "{p.table}" WHERE rowid = ?'
                removed += conn.execute(sql, (p.rowid,)).rowcount
            while dangling := conn.execute("PRAGMA foreign_key_check").fetchall():
                for table, rowid, _parent, _fk in dangling:
                    sql = f'DELETE FROM "{table}" WHERE rowid = ?'
                    removed += conn.execute(sql, (rowid,)).rowcount
        problems = examine(store).problems
    return found.model_copy(update={"removed": removed})


def _typed(store: Store, table: str) -> list[Problem]:
    """What a STRICT table still lets in: an infinite REAL, a ``*_json`` text that is not JSON.
    (A value of the wrong type, a missing one or one outside a closed set SQLite refuses.)"""
    out = []
    for col in store.columns(table):
        name = col.name
        if col.type == "REAL":
            for r in store.query(
                f'SELECT rowid FROM "{table}" WHERE abs("{name}") > 1.7976931348623157e308'
            ):
                out.append(Problem(table=table, rowid=r[0], what=f"{name} is infinite"))
        if name.endswith("_json"):
            for r in store.query(
                f'SELECT rowid FROM "{table}" WHERE "{name}" IS NOT NULL '
                f'AND NOT json_valid("{name}")'
            ):
                out.append(Problem(table=table, rowid=r[0], what=f"{name} is not JSON"))
    return out


def _ruled(store: Store, table: str) -> list[Problem]:
    """Rows of the right types that break a bundle rule (a JSON schema, a range)."""
    names = ruled_columns(table, [c.name for c in store.columns(table)])
    if not names:
        return []
    picked = ", ".join(f'"{n}"' for n in names)
    out = []
    for r in store.query(f'SELECT rowid, {picked} FROM "{table}"'):
        if problem := row_problem(table, dict(zip(names, tuple(r)[1:], strict=True))):
            out.append(Problem(table=table, rowid=r[0], what=problem))
    return out


def _dangling(store: Store) -> list[Problem]:
    """Rows whose foreign key names a row that is not there (an import from before the
    bundle's references were checked, or a store written with foreign keys off)."""
    found: dict[tuple[str, int], list[str]] = {}
    for table, rowid, parent, _fk in store.query("PRAGMA foreign_key_check"):
        if rowid is not None:  # one problem per row, however many of its keys dangle
            found.setdefault((table, rowid), []).append(parent)
    return [
        Problem(table=table, rowid=rowid, what=f"refers to missing rows of {', '.join(parents)}")
        for (table, rowid), parents in found.items()
    ]


def _partial_scores(store: Store) -> list[Problem]:
    """Every row of an affect score that lacks a category (the rule of
    :func:`~intima.bundles.rules.partial_scores`): removing them leaves the response
    unscored, so ``intima score`` scores it whole again."""
    rows = [
        dict(r)
        for r in store.query(
            "SELECT rowid, response_id, scorer_version, config_key, category FROM affect_scores"
        )
    ]
    partial = partial_scores(rows)
    what = "part of an affect score that has no row for some categories"
    return [
        Problem(table="affect_scores", rowid=r["rowid"], what=what)
        for r in rows
        if score_key(r) in partial
    ]


def _orphans(store: Store) -> list[Problem]:
    rows = store.query(
        "SELECT rowid FROM responses WHERE config_key NOT IN (SELECT config_key FROM runs)"
    )
    return [Problem(table="responses", rowid=r[0], what="belongs to no run") for r in rows]


def _foreign_claims(store: Store) -> list[Problem]:
    """Claims are this machine's working state: one from another host came in by mistake, and
    its lease (however far it says) must not make this machine wait."""
    out = []
    for table in _CLAIMS:
        for r in store.query(f'SELECT rowid, host FROM "{table}" WHERE host != ?', (HOST,)):
            out.append(Problem(table=table, rowid=r[0], what=f"a claim of another host ({r[1]})"))
    return out


def publishers(store: Store) -> list[tuple[str, str, int]]:
    """(table, who published them, rows) for every exported table with rows: each bundle's
    verified signer (:mod:`intima.store.provenance`), and the rows made in this store."""
    known = names(store)
    out = []
    for table in exported_tables(store):
        total = store.query(f'SELECT COUNT(*) FROM "{table}"')[0][0]
        if not total:
            continue
        counted = (
            store.query(
                "SELECT publisher, COUNT(*) FROM row_publishers WHERE table_name = ? "
                "GROUP BY publisher ORDER BY publisher",
                (table,),
            )
            if recorded(store)
            else []
        )
        by: dict[str, int] = {}
        for fp, n in counted:  # (rows made here: counted once under LOCAL, see MADE_HERE)
            who = known.get(fp, shown("", fp))
            by[who] = by.get(who, 0) + n
        if total > (covered := _covered(store, table)):
            by[LOCAL] = by.get(LOCAL, 0) + total - covered
        out += [(table, who, n) for who, n in by.items()]
    return out


def _covered(store: Store, table: str) -> int:
    """Rows of ``table`` that some bundle's publisher published."""
    if not recorded(store):
        return 0
    return int(
        store.query(
            "SELECT COUNT(DISTINCT row_key) FROM row_publishers WHERE table_name = ?", (table,)
        )[0][0]
    )


def _spoken_for(store: Store) -> list[Problem]:
    """Rows whose publisher may not speak for them."""
    if not recorded(store):
        return []
    known = names(store)
    me = local_publisher()
    here = None if me is None else me.fingerprint
    out = []
    for table, column in SCORER_KEYS.items():
        for rowid, key, fp in _scorer_rows(store, table, column):
            owner = publisher_of_key(key)[1]
            if fp == MADE_HERE and owner is None:
                continue  # this store's scorer, made here (and carried by a bundle too)
            if fp != (owner or here):  # (an unmarked scorer is this machine's publisher's)
                who = LOCAL if owner is None else known.get(owner, shown("", owner))
                what = f"published by {known.get(fp, shown('', fp))} for the scorer of {who}"
                out.append(Problem(table=table, rowid=rowid, what=what))
    for rowid, fp in store.query(
        "SELECT m.rowid, p.publisher FROM run_models m JOIN row_publishers p "
        "ON p.table_name = 'run_models' AND p.row_key = json_array(m.run_id) "
        "WHERE p.publisher NOT IN (SELECT publisher FROM row_publishers WHERE "
        "table_name = 'runs' AND row_key = json_array(m.run_id))"
    ):
        what = f"model facts published by {known.get(fp, shown('', fp))}, not the run's publisher"
        out.append(Problem(table="run_models", rowid=rowid, what=what))
    return out


def _scorer_rows(store: Store, table: str, column: str) -> list[tuple[int, str, str]]:
    """(rowid, scorer key, publisher) of each row of ``table`` some bundle's publisher
    published (joined by the row's primary key, as :func:`intima.bundles.owners.record`
    wrote it)."""
    key = store.primary_key(table)
    if not key:
        return []
    array = ", ".join(f't."{k}"' for k in key)
    return [
        (r[0], r[1], r[2])
        for r in store.query(
            f'SELECT t.rowid, t."{column}", p.publisher FROM "{table}" t JOIN row_publishers p '
            f"ON p.table_name = ? AND p.row_key = json_array({array})",
            (table,),
        )
    ]
