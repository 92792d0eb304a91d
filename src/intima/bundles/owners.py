"""A bundle speaks for what it published: every row knows its publisher.

The publisher of an imported row is its bundle's verified signer (:mod:`intima.bundles.signing`),
recorded in ``row_publishers`` by the row's primary key; a row with no entry was made in this
store (this machine's publisher), and stays so, as :data:`~intima.store.provenance.MADE_HERE`,
when a bundle carries it too (:func:`keep_made_here`). Rows are owned in two ways:

- **Scorer rows** (a judge's judgments, its samples, a validation report): the scorer *is*
  its publisher's. On import, another publisher's scorer keys get its fingerprint
  (:data:`MARK`), so its judge of the same run is another scorer, shown under its publisher:
  its judgments, samples and reports never meet this store's, nor a third publisher's, under
  one key (an unscored judgment gives way only to its own publisher's scored one). A bundle
  may not carry keys already marked: it would speak for another publisher's scorer.
- **Run rows** (runs, prompts, responses, model facts, conversations): ids name a place, so
  two publishers carrying one run (the second judged the first's run and carries it along)
  must carry the same rows. Between publishers every column that is shown must agree,
  including a row's progress: an unfinished row of one publisher is never settled by
  another's (:func:`intima.bundles.identity.Shape.differ`).

Nothing is chosen by import order or folder name.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from intima.bundles.signing import Publisher
from intima.core.ids import PUBLISHER_MARK
from intima.store.provenance import LOCAL, MADE_HERE, row_key

#: How another publisher's scorer key ends: ``<key>|publisher:<fingerprint>``.
MARK: Final = PUBLISHER_MARK
#: Tables of scorer rows -> the column naming the scorer.
SCORER_KEYS: Final[Mapping[str, str]] = {
    "judgments": "judge_key",
    "judgment_samples": "judge_key",
    "judgment_sample_members": "judge_key",
    "judgment_sample_strata": "judge_key",
    "validation_reports": "scorer",
}


def marked(key: str, fp: str) -> str:
    return f"{key}{MARK}{fp}"


def foreign_key_problem(data: Mapping[str, Sequence[Mapping[str, Any]]]) -> str | None:
    """A scorer key already marked with a publisher: a bundle speaking for another's scorer."""
    for table, column in SCORER_KEYS.items():
        for n, row in enumerate(data.get(table, ()), 1):
            if MARK in str(row.get(column, "")):
                return (
                    f"{table}.jsonl line {n}: {column} names another publisher's scorer (a "
                    "bundle speaks only for what its publisher made)"
                )
    return None


def own(data: dict[str, list[dict[str, Any]]], fp: str) -> None:
    """Mark the scorer keys of a bundle of publisher ``fp`` (not this machine's), in place."""
    from intima.judges.store_io import judgment_id_for

    for table, column in SCORER_KEYS.items():
        for row in data.get(table, ()):
            if isinstance(row.get(column), str):
                row[column] = marked(row[column], fp)
                if table == "judgments" and isinstance(row.get("content_hash"), str):
                    row["judgment_id"] = judgment_id_for(
                        row["content_hash"], row[column], str(row.get("prompt_version"))
                    )


def keep_made_here(
    conn: sqlite3.Connection, table: str, key: Sequence[str], rows: Iterable[Mapping[str, Any]]
) -> None:
    """Before a bundle's rows of ``table`` go in: each that is already stored with no
    publisher was made in this store, and stays this store's (:data:`MADE_HERE`) once the
    bundle's publisher is recorded beside it. Without this, a run made here and carried along
    by another publisher's bundle would read as that publisher's alone, and a board that does
    not trust it would leave this store's own run out."""
    if not key:
        return
    where = " AND ".join(f'"{k}" IS ?' for k in key)
    found = [
        (table, row_key(r, key))
        for r in rows
        if conn.execute(
            f'SELECT 1 FROM "{table}" WHERE {where}', [r.get(k) for k in key]
        ).fetchone()
    ]
    if not found:
        return
    conn.execute(
        "INSERT INTO publishers (fingerprint, name, public_key) VALUES (?, ?, '') "
        "ON CONFLICT(fingerprint) DO NOTHING",
        (MADE_HERE, LOCAL),
    )
    conn.executemany(
        "INSERT INTO row_publishers SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM "
        "row_publishers WHERE table_name = ?1 AND row_key = ?2)",
        [(t, k, MADE_HERE) for t, k in found],
    )


def record(
    conn: sqlite3.Connection,
    publisher: Publisher,
    table: str,
    key: Sequence[str],
    rows: Iterable[Mapping[str, Any]],
) -> None:
    """Say that ``publisher`` published ``rows`` of ``table`` (inside the import's transaction)."""
    if not key:
        return
    conn.execute(
        "INSERT INTO publishers (fingerprint, name, public_key) VALUES (?, ?, ?) "
        "ON CONFLICT(fingerprint) DO NOTHING",
        (publisher.fingerprint, publisher.name, publisher.key),
    )
    conn.executemany(
        "INSERT INTO row_publishers VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        [(table, row_key(r, key), publisher.fingerprint) for r in rows],
    )
