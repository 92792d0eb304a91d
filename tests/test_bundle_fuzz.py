"""Fuzzing ``intima import`` with crafted bundles (hypothesis, fixed seed).

Each example starts from a real, small, valid bundle, changes its rows or its manifest (wrong
types, missing and unknown keys, duplicate keys, huge and deeply nested values, non-finite
numbers, unicode junk, protocol versions) and states the new files' hashes in the manifest, as
someone crafting a bundle would, so that the change reaches the row checks. The property:

- ``import`` exits 0 and leaves a sound store, or exits 2 with one ``error:`` line and every
  table as it was;
- after an import that succeeded, ``board build``, ``export``, ``publish``, the app's load
  (what ``board serve`` and the Space do before serving: the board, its scores, every detail
  view) and ``intima judge`` all succeed.

The starting bundle has rows in every published table (``full_bundle.TABLES``: the core
tables, judgments, affect scores, a conversation run and a validation set), and every JSON
column is changed both whole and inside its parsed value.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from conftest import invoke_cli
from fake_openai import FakeOpenAI, FaultPlan
from full_bundle import TABLES, full_store
from intima.bundles.doctor import examine
from intima.bundles.export import sha256_file, write_table
from intima.bundles.publish import publish
from intima.results.board import BoardView
from intima.store import Store
from signed import resign


# -- the valid starting point ------------------------------------------------------------------
@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """(a valid bundle with rows in every published table, an empty migrated store, the URL
    of a fake server that judges)."""
    root = tmp_path_factory.mktemp("fuzz")
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    try:
        with Store.open(full_store(root / "source.db", server)) as store:
            runs = [r[0] for r in store.query("SELECT run_id FROM runs")]
            publish(store, str(root / "bundle"), runs)
        Store.open(root / "empty.db").close()
        yield root / "bundle", root / "empty.db", server.base_url
    finally:
        server.stop()


# -- what a crafted bundle may hold ------------------------------------------------------------
_JUNK_TEXT = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()), max_size=40
) | st.sampled_from(["\x00", "\udcff", "\u202e\x1b[31m", "{not json", "[]", "{}", "NaN", "1e999"])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _JUNK_TEXT
)
_NESTED = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_VALUES = (
    _NESTED
    | st.integers(min_value=1, max_value=300).map(lambda n: "[" * n + "]" * n)  # deep JSON text
    | st.integers(min_value=1, max_value=300).map(lambda n: _deep(n))
    | st.just("x" * 300_000)
)


def _deep(n: int) -> Any:
    value: Any = 1
    for _ in range(n):
        value = [value]
    return value


#: Values that broke imports before: lone surrogates, integers past 64 bits, non-finite
#: numbers, a NUL, bidi and escape codes, JSON too deep to store.
_HOSTILE = st.sampled_from(
    ["\udcff", "a\ud800b", 2**64, -(2**63) - 1, float("nan"), float("-inf"), "\x00",
     "\u202e\x1b]0;t\x07", "{not json", "", _deep(70), "[" * 70 + "]" * 70, {"\udcff": 1}]
)  # fmt: skip
#: Every JSON column of the published tables (``grep -rn _json src/intima/*/tables.py``).
_JSON_COLUMNS = (
    "config_json", "context_json", "ratings_json", "repairs_json", "judge_config_json",
    "details_json", "user_config_json", "groups_json", "report_json",
)  # fmt: skip
_COLUMNS = (
    "text", "label", "model_spec", "error", "finish_reason", "served_by", "source_model",
    "dimension", "code", "primary_label", "rationale", "model_name", "dataset_revision",
    "config_key", "status", "prompt_id", "run_id", "response_id", "prompt_tokens", "latency_s",
    "judgment_id", "position", "n_prompts", "cost_usd", "attempts", "content_hash",
    "category", "scorer_version", "sp", "nf", "measure", "level", "via", "turns", "turn",
    "after_turn", "conversation_id", "user_config_key", "set_sha256", "row_id", "scorer", "n",
    "by_columns", "grade", *_JSON_COLUMNS,
)  # fmt: skip
#: JSON that parses but is not the column's shape: what passed every check before issue 20.
_WRONG_SHAPES = st.sampled_from(
    ["[]", "{}", "null", "7", '"x"', '{"role": "user", "content": "hi"}',
     '[{"role": "god", "content": 1}]', '{"groups": []}', '{"n": -1, "groups": {"o": {}}}',
     '{"row": [], "families": {"a": -1}}', '{"conversation": {"turns": 1000000000000}}',
     "[1]", '{"a": {"b": [1e308, -1e308]}}']
)  # fmt: skip
_ROW_KINDS = ("set", "set", "set", "set", "delete", "duplicate", "drop", "not a row", "unknown",
              "inside")  # fmt: skip
_MANIFEST_FIELDS = ("protocol", "protocol key", "bundle_id", "format_version", "kind", "rows",
                    "columns", "runs", "package_version")  # fmt: skip
_PROTOCOL_KEYS = ("taxonomy", "rating_protocol", "bundle_format", "judge_prompt", "affect_scorer")

#: ``("row", table, index, kind, column, value)`` or ``("manifest", field, key, index, value)``
Mutation = tuple[str, str, Any, Any, Any, Any] | tuple[str, str, str, int, Any]
_FREE_TEXT = ("text", "label", "model_spec", "error", "finish_reason", "served_by",
              "source_model", "rationale", "model_name", "dataset_revision")  # fmt: skip
_NUMBERS = st.sampled_from([0, -1, 1, 51, 10**12, -(10**12), 0.5, 1.5, -0.0, 1e308])
_ROW = (
    st.tuples(
        st.just("row"), st.sampled_from(TABLES), st.integers(0, 5), st.sampled_from(_ROW_KINDS),
        st.sampled_from(_COLUMNS), st.one_of(_JUNK_TEXT, _HOSTILE, _VALUES, _NUMBERS),
    )
    | st.tuples(  # text where text belongs: these import, and reach board, export and publish
        st.just("row"), st.sampled_from(TABLES), st.integers(0, 5), st.just("set"),
        st.sampled_from(_FREE_TEXT), _JUNK_TEXT | st.just("x" * 300_000),
    )
    | st.tuples(  # a JSON column replaced whole by JSON of another shape
        st.just("row"), st.sampled_from(TABLES), st.integers(0, 30), st.just("set"),
        st.sampled_from(_JSON_COLUMNS), _WRONG_SHAPES,
    )
    | st.tuples(  # one value inside a JSON column's parsed value, replaced
        st.just("row"), st.sampled_from(TABLES), st.integers(0, 30), st.just("inside"),
        st.sampled_from(_JSON_COLUMNS), st.one_of(_NESTED, _NUMBERS, _WRONG_SHAPES),
    )
)  # fmt: skip
_MANIFEST = st.tuples(
    st.just("manifest"), st.sampled_from(_MANIFEST_FIELDS), st.sampled_from(_PROTOCOL_KEYS),
    st.integers(0, 20), _HOSTILE | _JUNK_TEXT | _NESTED,
)  # fmt: skip
# Three row changes to one manifest change: most manifest changes are refused at once.
_MUTATIONS = st.lists(
    st.integers(0, 3).flatmap(lambda n: _MANIFEST if n == 0 else _ROW), min_size=1, max_size=2
)


def _apply(m: Mutation, rows: dict[str, list[Any]], manifest: dict[str, Any]) -> None:
    if m[0] == "row":
        _change_row(rows[m[1]], *m[2:])
        return
    _, field, key, index, value = m
    entry = manifest["tables"][index % len(manifest["tables"])]
    if field == "protocol":
        manifest["protocol"] = value
    elif field == "protocol key":
        if isinstance(value, str) or value is None:
            manifest["protocol"].pop(key, None)
        else:
            manifest["protocol"][key] = value
    elif field in ("rows", "columns"):
        entry[field] = value
    else:
        manifest[field] = value


def _change_row(target: list[Any], index: int, kind: str, column: str, value: Any) -> None:
    if not target:
        return
    i = index % len(target)
    row = target[i]
    if kind == "not a row":
        target[i] = value
        return
    if not isinstance(row, dict):
        return
    col = column if column in row else next(iter(row))
    if kind == "set":
        row[col] = value
    elif kind == "delete":
        row.pop(col, None)
    elif kind == "duplicate":  # the same key, something else said about it
        target.append({**row, col: value})
    elif kind == "drop":
        del target[i]
    elif kind == "inside":
        _change_inside(row, column, value, index)
    else:
        row[f"x_{column}"] = value


def _change_inside(row: dict[str, Any], column: str, value: Any, index: int) -> None:
    """Replace one value somewhere inside the row's JSON column (the ``index``-th container
    met walking it, one of its keys or items), keeping the rest as it was."""
    if not isinstance(row.get(column), str):
        return
    try:
        parsed = json.loads(row[column])
    except ValueError:
        return
    containers, stack = [], [parsed]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            containers.append(item)
            stack.extend(item.values() if isinstance(item, dict) else item)
    if not containers:
        return
    box = containers[index % len(containers)]
    if isinstance(box, dict) and box:
        box[sorted(box)[index % len(box)]] = value
    elif isinstance(box, list) and box:
        box[index % len(box)] = value
    row[column] = json.dumps(parsed)


# -- writing the crafted bundle ----------------------------------------------------------------
def _craft(
    base: Path, folder: Path, mutations: list[Mutation], parquet: bool, dup_key: str
) -> None:
    shutil.copytree(base, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    rows = {
        t: [json.loads(line) for line in (folder / f"{t}.jsonl").read_text().splitlines()]
        for t in TABLES
    }
    original = json.loads(json.dumps(rows))
    for mutation in mutations:
        _apply(mutation, rows, manifest)
    for table, lines in rows.items():
        if lines == original[table]:
            continue
        path = folder / f"{table}.jsonl"
        # Default json.dumps escapes lone surrogates, so they reach the importer as text.
        text = "".join(_line(r, dup_key) + "\n" for r in lines)
        path.write_text(text, encoding="utf-8")
        names = [f"{table}.jsonl"]
        (folder / f"{table}.parquet").unlink()
        if parquet:
            try:
                write_table(_rows_only(lines), folder / "scratch", table)
            except Exception:
                pass
            else:
                shutil.move(folder / "scratch" / f"{table}.parquet", folder)
                names.append(f"{table}.parquet")
        for entry in manifest["tables"] if isinstance(manifest.get("tables"), list) else []:
            if isinstance(entry, dict) and entry.get("name") == table:
                if isinstance(entry.get("rows"), int) and entry["rows"] == len(original[table]):
                    entry["rows"] = len(lines)
                entry["files"] = [
                    {"name": n, "sha256": sha256_file(folder / n), "rows": len(lines)}
                    for n in names
                ]
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    resign(folder)  # a trusted publisher's crafted bundle: the row checks must refuse it
    shutil.rmtree(folder / "scratch", ignore_errors=True)


def _line(row: Any, dup_key: str) -> str:
    """One JSONL line; ``dup_key`` repeats the row's first key (JSON readers keep the last),
    with the ``same`` value or an ``other`` one."""
    text = json.dumps(row)
    if dup_key != "none" and isinstance(row, dict) and row:
        first = next(iter(row))
        value = row[first] if dup_key == "same" else "second value"
        text = text[:-1] + f", {json.dumps(first)}: {json.dumps(value)}" + "}"
    return text


def _rows_only(lines: list[Any]) -> list[dict[str, Any]]:
    if not all(isinstance(r, dict) for r in lines):
        raise TypeError("not rows")
    return lines


def invoke(*args: str) -> tuple[int, str]:
    res = invoke_cli(*args)
    return res.returncode, res.stderr


def _dump(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(db) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"'))) for t in names}


#: The other arguments of an explicit example: a Parquet twin, no duplicate keys, fresh store.
_PLAIN: dict[str, Any] = {"parquet": True, "dup_key": "none", "twice": False}


#: Bundles drawn besides the explicit examples below, about 0.7 s each: the suite draws 20 (it
#: drew 60, 40 s of its time); ``benchmarks/bench_bundle_fuzz.py`` draws many more. The
#: explicit examples hold every bundle that once broke the property, and every way a bundle
#: arrives (Parquet or JSONL, a key said twice, a store already holding the valid bundle).
EXAMPLES = int(os.environ.get("INTIMA_FUZZ_EXAMPLES", "20"))


@settings(
    derandomize=True,
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)  # fmt: skip
@example(mutations=[("row", "prompts", 0, "set", "text", "\udcff")], **_PLAIN)
@example(mutations=[("row", "responses", 1, "set", "prompt_tokens", 2**64)], **_PLAIN)
@example(mutations=[("row", "responses", 0, "set", "latency_s", float("nan"))], **_PLAIN)
@example(mutations=[("row", "runs", 0, "set", "config_json", "{}")], **_PLAIN)
@example(mutations=[("row", "runs", 1, "set", "label", "\u202e\x1b]0;t\x07")], **_PLAIN)
@example(mutations=[("row", "judgments", 0, "set", "ratings_json", '{"x": [1]}')], **_PLAIN)
@example(mutations=[("row", "prompts", 1, "set", "code", "no such code")], **_PLAIN)
@example(mutations=[("row", "prompts", 2, "set", "dimension", {"a": []})], **_PLAIN)
@example(mutations=[("row", "prompts", 0, "set", "context_json", "[" * 70 + "]" * 70)], **_PLAIN)
@example(mutations=[("row", "responses", 0, "set", "text", "x" * 300_000)], **_PLAIN)
@example(mutations=[("manifest", "protocol key", "judge_prompt", 0, None)], **_PLAIN)
# What passed every check before issue 20 and broke the board, the Space or `intima judge`.
@example(mutations=[("row", "validation_reports", 0, "set", "report_json", "[]")], **_PLAIN)
@example(mutations=[("row", "affect_scores", 0, "set", "details_json", "[]")], **_PLAIN)
@example(mutations=[("row", "prompts", 4, "set", "context_json", '{"role": "user"}')], **_PLAIN)
@example(mutations=[("row", "conversation_turns", 0, "set", "turn", 10**12)], **_PLAIN)
@example(mutations=[("row", "validation_labels", 0, "set", "groups_json", '{"a": 1}')], **_PLAIN)
@example(mutations=[("row", "runs", 2, "inside", "config_json", 10**12)], **_PLAIN)
# A score missing a category (found by this test): the board's load raised KeyError.
@example(mutations=[("row", "affect_scores", 0, "drop", "text", "")], **_PLAIN)
# The other ways a bundle arrives, whatever the draws: a JSONL-only table, a key said twice
# (the same value, another one), into a store that already holds the valid bundle.
@example(mutations=[("row", "runs", 1, "set", "label", "relabelled")], parquet=False,
         dup_key="same", twice=True)  # fmt: skip
@example(mutations=[("row", "responses", 0, "set", "text", "changed")], parquet=False,
         dup_key="other", twice=True)  # fmt: skip
@given(
    mutations=_MUTATIONS,
    parquet=st.booleans(),
    dup_key=st.sampled_from(["none", "none", "same", "other"]),
    twice=st.booleans(),
)
def test_no_crafted_bundle_breaks_import_or_what_follows(
    base: tuple[Path, Path, str],
    mutations: list[Mutation],
    parquet: bool,
    dup_key: str,
    twice: bool,
) -> None:
    bundle, empty, judge_url = base
    with tempfile.TemporaryDirectory(prefix="intima-fuzz-") as tmp:
        work = Path(tmp)
        _craft(bundle, work / "bundle", mutations, parquet, dup_key)
        db = work / "s.db"
        shutil.copy(empty, db)
        if twice:  # a store that already holds the valid bundle's rows
            assert invoke("import", str(bundle), "--store", str(db))[0] == 0
        before = _dump(db)
        code, err = invoke("import", str(work / "bundle"), "--store", str(db))
        lines = [line for line in err.splitlines() if line.strip()]
        assert code in (0, 2) and "Traceback" not in err, err[-2000:]
        event("refused" if code == 2 else "imported")  # --hypothesis-show-statistics
        if code == 2:
            assert len(lines) == 1 and lines[0].startswith("error:"), err[-2000:]
            assert _dump(db) == before
            return
        with Store.open(db) as store:
            checkup = examine(store)
        assert checkup.integrity == "ok" and checkup.problems == [], checkup
        for args in (
            ("board", "build", "--out", str(work / "site"), "--bootstrap", "5"),
            ("export", str(work / "export")),
            ("publish", str(work / "again")),
        ):
            code, err = invoke(*args, "--store", str(db))
            assert code == 0, (args, err[-2000:])
        _load_the_app(db)
        # A judge that answers: every stored response judged (or already judged), no crash.
        code, err = invoke("judge", "-j", f"openai-compat:judge@{judge_url}", "--store", str(db))
        assert code in (0, 1) and "Traceback" not in err, err[-2000:]


def _load_the_app(db: Path) -> None:
    """What ``board serve`` and the Space do before serving, then every view a visitor can
    open: the score tables of every scorer, every response's detail, the drift view."""
    from intima.leaderboard.app import BoardIndex, build_app
    from intima.results.conversations import load_conversations
    from intima.results.data import load_board
    from intima.results.table import OVERALL, score_table

    with Store.open(db) as store:
        data = load_board(store)
        conversations = load_conversations(store)
    table = score_table(data.infos(), data.rating_sets, bootstrap=5, seed=0)
    build_app(BoardView(data, table, conversations=conversations), db)
    index = BoardIndex(BoardView(data, table))
    for scorer in table.scorers:
        index.scores(scorer, OVERALL, "reinforcing")
    for r in data.responses:
        index.detail(r.run_id, r.prompt_id)
