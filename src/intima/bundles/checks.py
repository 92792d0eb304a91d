"""Every row of a bundle checked before the import transaction: a bundle's hashes prove only
that its files are the ones it declares, not that its rows are sound.

Refused, with the table and row named: a value of the wrong type for its column, a missing
required value or one outside a closed set (a status, a level, a label): each row is tried in
an empty copy of its STRICT table, so SQLite itself says what it refuses; a value SQLite never
sees (a JSON true, NaN, a nested value, a lone surrogate) or would store as another type; a
``*_json`` column that is not JSON (or nests deeper than :data:`MAX_JSON_DEPTH`) or does not
match its schema, a number outside its range (:mod:`intima.bundles.rules`), an affect
score without a row for every category, a row that contradicts a row with the same key (in the
store or earlier in the bundle), a row that names a run, response, prompt or judged content of
another bundle, a manifest that does not state every protocol version, and a Parquet file
whose rows are not its JSONL twin's.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, Final

from intima.bundles.identity import Shape, key_of, shape
from intima.bundles.publish import BundleError
from intima.bundles.rules import partial_score_problem, reference_problem, row_problem
from intima.store import Store
from intima.store.provenance import MADE_HERE, publishers_of, row_key

MAX_JSON_DEPTH: Final = 64


def check_protocol(folder: Path, stated: Mapping[str, str], ours: Mapping[str, str]) -> None:
    missing = sorted(set(ours) - set(stated))
    if missing:
        raise BundleError(
            f"{folder}: the manifest states no {', '.join(missing)} protocol version; "
            "a bundle must say what produced its results"
        )


def check_rows(
    store: Store,
    folder: Path,
    data: Mapping[str, Sequence[dict[str, Any]]],
    publisher: str = "",
    local: str | None = None,
) -> None:
    """Raise BundleError on the first unsound row; read-only. ``publisher``: the bundle's
    (a key fingerprint); ``local``: this machine's, whose rows the store's unmarked rows are."""
    with closing(sqlite3.connect(":memory:")) as scratch:
        for table, rows in data.items():
            columns = _columns(store, table)
            _copy_table(store, scratch, table)
            for n, row in enumerate(rows, 1):
                _check_row(scratch, folder, table, n, row, columns)
            _check_conflicts(store, folder, table, rows, (publisher, local))
    if found := reference_problem(data):
        table, n, what = found
        raise BundleError(
            f"{folder}: {table}.jsonl line {n}: {what} (a bundle's rows may refer only to its "
            "own runs); nothing was imported"
        )
    if partial := partial_score_problem(data.get("affect_scores", ())):
        n, what = partial
        raise BundleError(f"{folder}: affect_scores.jsonl line {n}: {what}; nothing was imported")


def json_depth_ok(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests at most ``limit`` levels (iterative: no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


def _columns(store: Store, table: str) -> dict[str, str]:
    """column -> declared type."""
    return {c.name: c.type for c in store.columns(table)}


def _copy_table(store: Store, scratch: sqlite3.Connection, table: str) -> None:
    """``table`` as the store declares it (STRICT, its CHECKs), empty, in a scratch database:
    each row is tried there, so SQLite itself says which value it refuses, before anything
    is written to the store (a bad row in any bundle refuses the whole import)."""
    sql = store.query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    scratch.execute(sql[0][0])


def _check_row(
    scratch: sqlite3.Connection,
    folder: Path,
    table: str,
    n: int,
    row: Mapping[str, Any],
    columns: Mapping[str, str],
) -> None:
    where = f"{folder}: {table}.jsonl line {n}"
    for col, value in row.items():
        if value is not None and not _bindable(value):
            raise BundleError(
                f"{where}: {col} must be {_describe(columns[col])}, not {_show(value)}"
            )
        if col.endswith("_json") and isinstance(value, str):
            _check_json(where, col, value)
    if problem := _stored(scratch, table, row, columns):
        raise BundleError(f"{where}: {problem}")
    if problem := _meaning(table, row) or row_problem(table, row):
        raise BundleError(f"{where}: {problem}")


def _bindable(value: Any) -> bool:
    """What SQLite cannot be asked about, as it never reaches it: a 64-bit integer (not a
    JSON true/false), finite (NaN would be stored as NULL), text that is UTF-8 (JSON may carry
    lone surrogates), and no nested value (publish writes JSON columns as text)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return False
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    if isinstance(value, float):
        return math.isfinite(value)
    return _utf8(value)


def _stored(
    scratch: sqlite3.Connection, table: str, row: Mapping[str, Any], columns: Mapping[str, str]
) -> str | None:
    """What SQLite refuses in ``row`` (a value of the wrong type, a missing value, one outside
    a closed set), or a value it would store as another (STRICT keeps '5' in an INTEGER column
    as 5 and 5 in a TEXT column as '5': a bundle's row must be stored as it is written)."""
    names = ",".join(f'"{c}"' for c in row) or "rowid"
    values = f"({names}) VALUES ({','.join('?' * len(row))})" if row else "DEFAULT VALUES"
    try:
        scratch.execute(f'INSERT INTO "{table}" {values}', list(row.values()))
        stored = scratch.execute(f'SELECT {names} FROM "{table}"').fetchone()
    except sqlite3.IntegrityError as exc:  # (a CHECK is quoted as declared: one line)
        return _said(" ".join(str(exc).split()), row, columns)
    finally:
        scratch.execute(f'DELETE FROM "{table}"')
    for (col, value), kept in zip(row.items(), stored, strict=False):
        if value is not None and (type(kept) is str) != (type(value) is str):
            return f"{col} must be {_describe(columns[col])}, not {_show(value)}"
    return None


def _said(message: str, row: Mapping[str, Any], columns: Mapping[str, str]) -> str:
    """SQLite's refusal in the words of the bundle's row."""
    if typed := re.match(r"cannot store \w+ value in \w+ column \w+\.(\w+)", message):
        col = typed[1]
        return f"{col} must be {_describe(columns[col])}, not {_show(row.get(col))}"
    if missing := re.match(r"NOT NULL constraint failed: \w+\.(\w+)", message):
        return f"{missing[1]} is missing"
    return f"a row breaks a constraint of the store ({message})"


def _meaning(table: str, row: Mapping[str, Any]) -> str | None:
    """What the readers of a row rely on beyond its types (the values the store's writers
    produce): a prompt's code and dimension from the taxonomy. (A judgment's primary label is
    a CHECK of its table; its levels are a schema of :mod:`intima.bundles.rules`.)"""
    from intima.core.taxonomy import ALL_CODES, dimension_of
    from intima.dataset.types import UNKNOWN

    if table == "prompts" and "code" in row:
        code = row["code"]
        if code == UNKNOWN:  # a row of an external labelled set (``intima validate``)
            if row.get("dimension", UNKNOWN) != UNKNOWN:
                return f"dimension {_show(row['dimension'])} is not that of code {code!r}"
            return None
        if not isinstance(code, str) or code not in ALL_CODES:
            return f"code {_show(code)} is not an INTIMA code"
        if "dimension" in row and row["dimension"] != str(dimension_of(code)):
            return f"dimension {_show(row['dimension'])} is not that of code {code!r}"
    return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_json(where: str, col: str, text: str) -> None:
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BundleError(f"{where}: {col} is not JSON") from exc
    if not json_depth_ok(parsed):
        raise BundleError(f"{where}: {col} nests deeper than {MAX_JSON_DEPTH} levels")
    if col == "config_json" and not isinstance(parsed, dict):
        raise BundleError(f"{where}: {col} must be a JSON object")


def _describe(kind: str) -> str:
    if "INT" in kind:
        return "a 64-bit integer"
    if "REAL" in kind or "FLOA" in kind or "DOUB" in kind:
        return "a finite number"
    return "UTF-8 text"


def _show(value: Any) -> str:
    return repr(value)[:40]


def _check_conflicts(
    store: Store,
    folder: Path,
    table: str,
    rows: Sequence[dict[str, Any]],
    who: tuple[str, str | None],
) -> None:
    """A row under a key (any of its table's keys) that another row under it contradicts, in
    the store or earlier in the bundle (:mod:`intima.bundles.identity`): refused,
    whatever the order. ``who``: the bundle's publisher and this machine's (rows of two
    publishers are compared on all they show)."""
    if (s := shape(store, table)) is None:
        return
    seen: dict[tuple[int, tuple[Any, ...]], dict[str, Any]] = {}
    for n, row in enumerate(rows, 1):
        for i, key in enumerate(s.keys):
            value = key_of(row, key)
            for other, origin, same in _same_key(store, s, key, value, seen.get((i, value)), who):
                if differs := s.differ(other, row, same_publisher=same):
                    raise BundleError(
                        f"{folder}: {table}.jsonl line {n} contradicts {origin} with the same "
                        f"{'/'.join(key)} ({', '.join(differs)} differ); a row under one key "
                        "says one thing, so nothing was imported"
                    )
            seen.setdefault((i, value), row)


def _same_key(
    store: Store,
    s: Shape,
    key: Sequence[str],
    value: tuple[Any, ...],
    earlier: Mapping[str, Any] | None,
    who: tuple[str, str | None],
) -> Iterator[tuple[Mapping[str, Any], str, bool]]:
    if earlier is not None:
        yield earlier, "an earlier row of the bundle", True
    where = " AND ".join(f'"{k}" = ?' for k in key)
    publisher, local = who
    for r in store.query(f'SELECT * FROM "{s.table}" WHERE {where}', list(value)):
        stored = publishers_of(store, s.table, row_key(dict(r), s.keys[0]))
        # (a row made here, carried by a bundle too, is this machine's publisher's as well)
        owners = {local if p == MADE_HERE else p for p in stored}
        same = owners == {publisher} if owners else publisher == local
        yield dict(r), f"a row already in the store{_holder(store, dict(r))}", same


def _holder(store: Store, row: Mapping[str, Any]) -> str:
    """' (of run LABEL, RUN_ID)': the run a stored row belongs to, where the row says."""
    if "run_id" in row:
        found = store.query("SELECT label, run_id FROM runs WHERE run_id = ?", (row["run_id"],))
    elif "config_key" in row:
        found = store.query(
            "SELECT label, run_id FROM runs WHERE config_key = ? ORDER BY created_at LIMIT 1",
            (row["config_key"],),
        )
    else:
        return ""
    return f" (of run {found[0][0][:60]!r}, {found[0][1][:40]})" if found else ""


def check_twin(folder: Path, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a Parquet file whose rows are not its JSONL twin's: import reads the JSONL, but
    everyone else reads the Parquet, so a bundle whose two copies disagree is refused whole
    (both files may match the manifest's hashes: a bundle states its own hashes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / f"{table}.parquet"
    try:
        twin = pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise BundleError(f"{path}: not a readable Parquet file ({type(exc).__name__})") from exc
    ours, theirs = Counter(map(_canonical, rows)), Counter(map(_canonical, twin))
    if ours != theirs:
        differ = sum((ours - theirs).values()) + sum((theirs - ours).values())
        raise BundleError(
            f"{path}: its rows differ from {table}.jsonl ({differ} rows in one and not the "
            "other); the bundle's two copies disagree, nothing was imported"
        )


def _canonical(row: Mapping[str, Any]) -> str:
    """A row as publish writes it to Parquet (nested values as JSON text); a missing column
    and a null are the same row, and so are 2 and 2.0 (Arrow widens a column of both)."""
    flat = {k: _flat(v) for k, v in row.items() if v is not None}
    return json.dumps(flat, sort_keys=True, default=repr)


def _flat(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def integrity_error(folder: Path, exc: sqlite3.IntegrityError) -> BundleError:
    """A constraint the checks above did not foresee, as one line."""
    return BundleError(
        f"{folder}: a row breaks a constraint of the store ({exc}); nothing was imported"
    )
