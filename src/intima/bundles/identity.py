"""What a bundle's row is, and when two rows are the same row: a bundle's identity.

Ids name a place, not content: a run's id comes from its configuration and prompts, a
response's from its run configuration and prompt (so a run resumes where it stopped, on any
machine), and anyone who can write to a results repo can write rows under any ids. So a row is
known by its keys (its table's primary key and every UNIQUE key), and two rows under one key
must be the same row: equal in every column but bookkeeping (when and by which intima it was
written, how many attempts, seconds, tokens and dollars it took, a run's progress, a judge's
words on the way to its verdict: :data:`BOOKKEEPING`, :data:`NOT_CONTENT`). Of two rows that
agree, the first imported is kept. A row still in progress (a failed
response, an unscored judgment, a simulated user's failed message) is not yet content: a
settled row under the same keys takes its place, as in the runner.

Two rows under one key that differ are a **conflict**, and a conflict is never settled by
order (a folder name that sorts first, or the bundle imported first):

- among the bundles of one import (a results repo read by the Space or ``board build --from``,
  or one ``intima import`` of a folder of bundles), every bundle on either side is refused,
  naming the others and the ids (:class:`Ledger`);
- against a row already in the store, the bundle is refused, naming the run that holds the row
  (:mod:`intima.bundles.checks`).

Bundles that agree (the same bundle published twice, or republished after more work) are
accepted as one.

All of this is within one publisher (:mod:`intima.bundles.owners`). Between two publishers,
a row under one key must agree on everything that is shown, its words and progress too
(:data:`SHARED_FREE` aside): another publisher's rationale, model facts or settled row never
stand in for the owner's.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

from intima.store import Store

Rows = Mapping[str, Sequence[Mapping[str, Any]]]

#: Columns that say how and when a row was written, not what it says: two copies of one row
#: may differ here (a republish after an upgrade, a retry counted again), and so may two
#: honest measurements of one thing (the same answer or verdict reached on two machines, at
#: another speed and price). None of them is shown on the board.
BOOKKEEPING: Final = frozenset(
    {"created_at", "updated_at", "package_version", "attempts", "error"}
    | {"latency_s", "cost_usd", "priced_by", "prompt_tokens", "completion_tokens", "served_by"}
    | {"usage_source"}
)
#: Per table, what else may differ: a run's progress (a run published while running and again
#: when complete is one run) and its dataset's recorded size; a judgment's own words and
#: settings on the way to its verdict (a judge's rationale differs from one call to the next;
#: the verdict is what is compared).
NOT_CONTENT: Final[Mapping[str, frozenset[str]]] = {
    # dataset_size: a copy stored before it was recorded holds NULL; it follows from the
    # dataset's id, revision and hash, which are compared.
    "runs": frozenset({"status", "dataset_size"}),
    "judgments": frozenset(
        {"rationale", "raw_reply", "reason", "repairs_json", "judge_config_json"}
    ),
    # The digest of the answers a sample was drawn from: NULL in a copy stored before it was
    # recorded (judges_0007); the answers it names are recomputed on import, not believed
    # (intima.bundles.membership), and its size and count are compared.
    "judgment_samples": frozenset({"population_sha256", "size"}),
    # What the Hub said of a run's model when it was last asked (`intima models refresh`): a
    # republish after a refresh is the same run, not a conflict; the first imported is shown.
    "run_models": frozenset(
        {"source", "hub_id", "parameters", "kind", "license", "model_date", "detail", "checked_at"}
    ),
}
#: Rows that grow, by the column that grows: of two rows of one publisher under one key that
#: agree on the rest, the larger stays, whichever was imported first. A sample published at
#: 60 and again at 120 (``intima judge --sample 120`` extends it: its first 60 members are the
#: earlier sample's, which their own keys hold to) is one sample of 120, and the import's
#: recomputation checks the grown one (:mod:`intima.bundles.membership`).
GROWS: Final[Mapping[str, str]] = {"judgment_samples": "size"}
#: Of :data:`NOT_CONTENT`, what two publishers carrying one run may still differ on: how far
#: the run had got, and when its model facts were read (neither is shown).
SHARED_FREE: Final[Mapping[str, frozenset[str]]] = {
    "runs": frozenset({"status"}),
    "run_models": frozenset({"checked_at"}),
}
#: Rows that are not content yet, by their status: a later settled row replaces them.
UNSETTLED: Final[Mapping[str, str]] = {
    "responses": "error",
    "judgments": "unscored",
    "simulated_user_messages": "error",
}


@dataclass(frozen=True)
class Shape:
    """One table's keys and what its rows say, as this store declares them."""

    table: str
    #: Every key a row is known by: the primary key and each UNIQUE constraint.
    keys: tuple[tuple[str, ...], ...]
    #: The columns two settled rows under one key must agree on.
    identity: tuple[str, ...]
    #: The columns two rows of different publishers under one key must agree on.
    shown: tuple[str, ...]
    #: Column -> the value a row that omits it is stored with.
    defaults: Mapping[str, Any]

    @cached_property
    def key_columns(self) -> tuple[str, ...]:
        """The columns of every key: what rows in progress must agree on (else the insert
        would break a UNIQUE constraint, and which row stays would depend on order)."""
        return tuple(dict.fromkeys(c for key in self.keys for c in key))

    def settled(self, row: Mapping[str, Any]) -> bool:
        unsettled = UNSETTLED.get(self.table)
        return unsettled is None or row.get("status") != unsettled

    def value(self, row: Mapping[str, Any], column: str) -> Any:
        return row[column] if column in row else self.defaults.get(column)

    def differ(
        self, a: Mapping[str, Any], b: Mapping[str, Any], *, same_publisher: bool = True
    ) -> list[str]:
        """The columns on which two rows under one key disagree (empty: the same row); rows
        of two publishers are compared on all they show, settled or not."""
        if not same_publisher:
            compared = self.shown
        elif self.settled(a) and self.settled(b):
            compared = self.identity
        else:
            compared = self.key_columns
        return [c for c in compared if self.value(a, c) != self.value(b, c)]

    def fingerprint(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        """Equal for two copies of one row: all it shows if settled, else only its keys."""
        settled = self.settled(row)
        compared = self.shown if settled else self.key_columns
        return (settled, *(repr(self.value(row, c)) for c in compared))


def shape(store: Store, table: str) -> Shape | None:
    """``table``'s shape, or None for a table without a key (nothing to collide on)."""
    columns = store.columns(table)
    keys: list[tuple[str, ...]] = []
    if pk := tuple(store.primary_key(table)):
        keys.append(pk)
    for index in store.query(f'PRAGMA index_list("{table}")'):
        if index["unique"] and not index["partial"]:
            cols = tuple(r["name"] for r in store.query(f'PRAGMA index_info("{index["name"]}")'))
            if cols and None not in cols and cols not in keys:
                keys.append(cols)
    if not keys:
        return None
    skip = BOOKKEEPING | NOT_CONTENT.get(table, frozenset())
    free = BOOKKEEPING | SHARED_FREE.get(table, frozenset())
    return Shape(
        table=table,
        keys=tuple(keys),
        identity=tuple(c.name for c in columns if c.name not in skip),
        shown=tuple(c.name for c in columns if c.name not in free),
        defaults={c.name: _literal(c.default) for c in columns},
    )


def _literal(default: Any) -> Any:
    """A column's declared DEFAULT (SQL text) as the value SQLite stores: '' for ``''``."""
    if not isinstance(default, str) or default.upper() == "NULL":
        return None
    if quoted := re.fullmatch(r"'(.*)'", default, re.DOTALL):
        return quoted[1].replace("''", "'")
    for kind in (int, float):
        try:
            return kind(default)
        except ValueError:
            pass
    return default


def key_of(row: Mapping[str, Any], key: Sequence[str]) -> tuple[Any, ...]:
    return tuple(row.get(k) for k in key)


@dataclass
class Conflict:
    """Rows under one key that differ, and every bundle holding any of them."""

    table: str
    key: tuple[str, ...]
    value: tuple[Any, ...]
    bundles: tuple[str, ...]
    columns: list[str]
    more: int = 0  # further keys the same bundles disagree on, in the same table

    def message(self) -> str:
        ids = "/".join(_short(v) for v in self.value)
        also = f" and {self.more} more" if self.more else ""
        names = ", ".join(map(repr, self.bundles))
        return (
            f"{self.table} rows under the same {'/'.join(self.key)} {ids}{also} differ between "
            f"bundles {names} ({', '.join(self.columns)} differ); every bundle in a conflict "
            "is refused, none wins by its name or order: remove the wrong one"
        )


def _short(value: Any) -> str:
    return repr(str(value)[:40])


@dataclass
class _Variant:
    """One distinct row under a key, and the bundles holding it."""

    row: Mapping[str, Any]
    bundles: list[str] = field(default_factory=list)
    publishers: set[str] = field(default_factory=set)


class Ledger:
    """The rows of several bundles by key, to find the conflicts among them (one import)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._shapes: dict[str, Shape | None] = {}
        #: (table, key index, key value) -> the distinct rows under it, each with its bundles.
        self._rows: dict[tuple[str, int, tuple[Any, ...]], dict[tuple[Any, ...], _Variant]] = {}

    def _shape(self, table: str) -> Shape | None:
        if table not in self._shapes:
            self._shapes[table] = shape(self._store, table)
        return self._shapes[table]

    def add(self, name: str, data: Rows, publisher: str = "") -> None:
        """Add bundle ``name``'s rows, published by ``publisher`` (a key fingerprint)."""
        for table, rows in data.items():
            if (s := self._shape(table)) is None:
                continue
            for row in rows:
                fp = s.fingerprint(row)
                for i, key in enumerate(s.keys):
                    variants = self._rows.setdefault((table, i, key_of(row, key)), {})
                    same = variants.setdefault(fp, _Variant(row))
                    if name not in same.bundles:
                        same.bundles.append(name)
                    same.publishers.add(publisher)

    def conflicts(self) -> list[Conflict]:
        """One conflict per table and set of bundles involved (the first key, and how many
        more), in a stable order."""
        found: dict[tuple[str, tuple[str, ...]], Conflict] = {}
        for (table, i, value), variants in sorted(self._rows.items(), key=_order):
            s = self._shapes[table]
            assert s is not None  # (a table without a shape adds no rows)
            for holders, columns in _clashes(s, list(variants.values())):
                names = tuple(sorted(holders))
                if (table, names) not in found:
                    found[table, names] = Conflict(table, s.keys[i], value, names, columns)
                elif found[table, names].key == s.keys[i]:  # (not the same rows by another key)
                    found[table, names].more += 1
        return list(found.values())

    def refused(self) -> dict[str, str]:
        """Each bundle in a conflict -> why it is refused (its first conflict)."""
        why: dict[str, str] = {}
        for conflict in self.conflicts():
            for name in conflict.bundles:
                why.setdefault(name, conflict.message())
        return why


def _clashes(s: Shape, variants: Sequence[_Variant]) -> Iterator[tuple[set[str], list[str]]]:
    """The bundles on every side of a disagreement among ``variants`` (the distinct rows under
    one key), with what differs between the first two rows that disagree."""
    holders: set[str] = set()
    columns: list[str] = []
    for n, a in enumerate(variants):
        for b in variants[n + 1 :]:
            one = len(a.publishers | b.publishers) == 1
            if differ := s.differ(a.row, b.row, same_publisher=one):
                holders.update(a.bundles, b.bundles)
                columns = columns or differ
    if len(holders) > 1:  # (two rows of one bundle: refused by its own row checks)
        yield holders, columns


def _order(item: tuple[tuple[str, int, tuple[Any, ...]], Any]) -> tuple[str, int, str]:
    (table, i, value), _ = item
    return table, i, repr(value)


def insert_row(
    conn: sqlite3.Connection, table: str, keys: Sequence[str], row: Mapping[str, Any]
) -> None:
    """Store an imported row that the checks admitted: under a key already stored, the row
    stays unless the new one settles it (:data:`UNSETTLED`) or grows it (:data:`GROWS`), so
    the order of bundles never decides which copy stays."""
    cols = list(row)
    names = ",".join(f'"{c}"' for c in cols)
    marks = ",".join("?" * len(cols))
    values = [json.dumps(v) if isinstance(v, dict | list) else v for v in row.values()]
    target = ",".join(f'"{k}"' for k in keys)
    insert = f'INSERT INTO "{table}" ({names}) VALUES ({marks}) '
    update = ", ".join(f'"{c}"=excluded."{c}"' for c in cols if c not in keys)
    if grows := GROWS.get(table):
        when, args = f'excluded."{grows}" > "{table}"."{grows}"', []
    elif unsettled := UNSETTLED.get(table):
        # as in the runner: a row in progress gives way to a settled one, never the reverse
        when, args = f'"{table}".status = ? AND excluded.status != ?', [unsettled, unsettled]
    else:
        # Only a row already stored under the same key is skipped (a re-import): OR IGNORE
        # would also drop, silently, a row breaking a NOT NULL, UNIQUE or CHECK constraint.
        skip = f"ON CONFLICT({target}) DO NOTHING" if keys else ""
        conn.execute(insert + skip, values)
        return
    conn.execute(
        f"{insert}ON CONFLICT({target}) DO UPDATE SET {update} WHERE {when}", values + args
    )
