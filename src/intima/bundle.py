"""Results bundles: publish a store's results, and merge bundles from other machines.

A bundle is a folder: each exported table as ``TABLE.jsonl`` and ``TABLE.parquet`` (the same
rows), plus ``manifest.json`` with the sha256 and row count of every file, the package version
and the protocol versions that give the numbers their meaning. Import reads the JSONL files;
the Parquet files are for everyone else (pandas, DuckDB, the Hub's viewer).

Which tables: the core tables (runs, prompts, run_prompts, responses) and every other result
table in the store, discovered from the store itself, so tables added by judging or scoring
travel without this module knowing their schema. Operational tables (the request queue,
migrations) stay local. Rows are limited to the chosen runs when a table has a ``run_id``,
``response_id`` or ``config_key`` column.

On the Hub (``hf://datasets/OWNER/NAME``), each publish goes to its own folder
``bundles/<bundle_id>/`` so that several machines can publish to one repo without overwriting
each other; importing the repo merges every bundle in it.
"""

from __future__ import annotations

import json
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from intima import __version__
from intima.errors import IntimaError
from intima.export import FileEntry, sha256_file, write_table
from intima.store import Store, now

BUNDLE_FORMAT_VERSION = "1"
BUNDLE_KIND = "intima-results-bundle"
HF_PREFIX = "hf://"
CORE_TABLES = ("prompts", "runs", "run_prompts", "responses")
#: Operational state, never published: who asked for what, worker leases, migration log.
LOCAL_TABLES = frozenset({"_migrations", "requests", "request_events", "response_claims"})
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}$")
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_MAX_MANIFEST_BYTES = 10_000_000

Uploader = Callable[[Path, str, str, str, str], None]
"""``uploader(folder, repo_id, repo_type, path_in_repo, commit_message)``."""


class BundleError(IntimaError):
    """A bundle cannot be written or is refused on import; the store is left unchanged."""


class TableEntry(BaseModel):
    name: str
    rows: int
    columns: list[str]
    files: list[FileEntry]


class BundleManifest(BaseModel):
    kind: str = BUNDLE_KIND
    format_version: str = BUNDLE_FORMAT_VERSION
    bundle_id: str
    package_version: str = __version__
    protocol: dict[str, str]
    created_at: str
    runs: list[dict[str, Any]]
    tables: list[TableEntry]

    @property
    def files(self) -> list[FileEntry]:
        return [f for t in self.tables for f in t.files]


class ImportReport(BaseModel):
    bundle_id: str
    source: str
    rows_in_bundle: dict[str, int]
    rows_added: dict[str, int]


# -- protocol versions --------------------------------------------------------------------------
def protocol_versions() -> dict[str, str]:
    """What the stored numbers mean: bundles that differ here are not comparable."""
    from intima.ratings import RATING_PROTOCOL_VERSION
    from intima.taxonomy import TAXONOMY_VERSION

    versions = {
        "taxonomy": TAXONOMY_VERSION,
        "rating_protocol": RATING_PROTOCOL_VERSION,
        "bundle_format": BUNDLE_FORMAT_VERSION,
    }
    # Optional subsystems: present only when installed, so a partial install still publishes.
    for key, module, name in (
        ("judge_prompt", "intima.judges.prompt", "JUDGE_PROMPT_VERSION"),
        ("affect_scorer", "intima.affect", "SCORER_VERSION"),
    ):
        value = _optional_constant(module, name)
        if value is not None:
            versions[key] = value
    return versions


def _optional_constant(module: str, name: str) -> str | None:
    import importlib

    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    value = getattr(mod, name, None)
    return str(value) if value is not None else None


# -- publish ------------------------------------------------------------------------------------
def publish(
    store: Store,
    dest: str,
    run_ids: Sequence[str] | None = None,
    *,
    repo_type: str = "dataset",
    uploader: Uploader | None = None,
) -> BundleManifest:
    """Write a bundle of the given runs (all if none) to a folder or a Hub repo."""
    if dest.startswith(HF_PREFIX):
        repo_id, kind = _hub_repo(dest, repo_type)
        with tempfile.TemporaryDirectory(prefix="intima-bundle-") as tmp:
            manifest = write_bundle(store, Path(tmp), run_ids)
            (uploader or _hf_upload)(
                Path(tmp), repo_id, kind, f"bundles/{manifest.bundle_id}",
                f"intima bundle {manifest.bundle_id} ({len(manifest.runs)} runs)",
            )  # fmt: skip
        return manifest
    return write_bundle(store, Path(dest), run_ids)


def write_bundle(
    store: Store, out_dir: Path, run_ids: Sequence[str] | None = None
) -> BundleManifest:
    if out_dir.exists() and any(out_dir.iterdir()):
        raise BundleError(f"{out_dir} is not empty; publish into a new or empty folder")
    ids = store.resolve_runs(run_ids or None)
    if not ids:
        raise BundleError(f"no runs in {store.path} to publish; run `intima run` first")
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = []
    for name in _exported_tables(store):
        columns, rows = _table_rows(store, name, ids)
        files = write_table(rows, out_dir, name) if rows else []
        tables.append(TableEntry(name=name, rows=len(rows), columns=columns, files=files))
    runs = [
        {k: r[k] for k in ("run_id", "label", "model_spec", "dataset_id", "n_prompts")}
        for r in store.query(
            f"SELECT * FROM runs WHERE run_id IN ({','.join('?' * len(ids))})", ids
        )
    ]
    created = now()
    manifest = BundleManifest(
        bundle_id=_bundle_id(created, ids), protocol=protocol_versions(), created_at=created,
        runs=runs, tables=tables,
    )  # fmt: skip
    (out_dir / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    return manifest


def _bundle_id(created: str, run_ids: Sequence[str]) -> str:
    import hashlib

    digest = hashlib.sha256("\x00".join([created, *sorted(run_ids)]).encode()).hexdigest()[:8]
    return re.sub(r"[^0-9]", "", created)[:14] + "-" + digest


def _exported_tables(store: Store) -> list[str]:
    names = [
        r[0]
        for r in store.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
    ]
    extra = [
        n for n in names if n not in CORE_TABLES and n not in LOCAL_TABLES and _TABLE_NAME.match(n)
    ]
    return [*CORE_TABLES, *extra]


def _columns(store: Store, table: str) -> list[str]:
    return [r["name"] for r in store.query(f'PRAGMA table_info("{table}")')]


def _table_rows(
    store: Store, table: str, run_ids: Sequence[str]
) -> tuple[list[str], list[dict[str, Any]]]:
    columns = _columns(store, table)
    marks = ",".join("?" * len(run_ids))
    in_runs_keys = f"SELECT config_key FROM runs WHERE run_id IN ({marks})"
    in_runs_prompts = f"SELECT prompt_id FROM run_prompts WHERE run_id IN ({marks})"
    sql = f'SELECT * FROM "{table}"'
    params: list[str] = []
    if "run_id" in columns:
        sql += f" WHERE run_id IN ({marks})"
        params = list(run_ids)
    elif "response_id" in columns:
        sql += (
            " WHERE response_id IN (SELECT response_id FROM responses WHERE config_key IN "
            f"({in_runs_keys}) AND prompt_id IN ({in_runs_prompts}))"
        )
        params = [*run_ids, *run_ids]
    elif "config_key" in columns and "prompt_id" in columns:
        sql += f" WHERE config_key IN ({in_runs_keys}) AND prompt_id IN ({in_runs_prompts})"
        params = [*run_ids, *run_ids]
    elif table == "prompts":
        sql += f" WHERE prompt_id IN ({in_runs_prompts})"
        params = list(run_ids)
    sql += " ORDER BY rowid" if _has_rowid(store, table) else ""
    rows = [dict(r) for r in store.query(sql, params)]
    if "content_hash" in columns and not params:
        # Judgments are keyed by what was judged (prompt + response text), not by run.
        hashes = _content_hashes(store, run_ids)
        rows = [r for r in rows if r["content_hash"] in hashes]
    return columns, rows


def _content_hashes(store: Store, run_ids: Sequence[str]) -> set[str]:
    from intima.judges.prompt import content_hash

    return {
        content_hash(r["prompt"], r["response"])
        for run_id in run_ids
        for r in store.run_rows(run_id)
        if r["response"] is not None
    }


def _has_rowid(store: Store, table: str) -> bool:
    try:
        store.query(f'SELECT rowid FROM "{table}" LIMIT 1')
    except sqlite3.OperationalError:
        return False
    return True


def _hub_repo(dest: str, repo_type: str) -> tuple[str, str]:
    rest = dest[len(HF_PREFIX) :]
    kind = repo_type
    for plural, singular in (("datasets/", "dataset"), ("spaces/", "space"), ("models/", "model")):
        if rest.startswith(plural):
            rest, kind = rest[len(plural) :], singular
    rest, _, revision = rest.partition("@")
    parts = rest.strip("/").split("/")
    if len(parts) != 2 or not all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", p) for p in parts):
        raise BundleError(f"{dest[:200]!r} is not a Hub repo; expected hf://datasets/OWNER/NAME")
    if revision:
        raise BundleError("publishing to a Hub revision is not supported; drop the '@REVISION'")
    return "/".join(parts), kind


def _hf_upload(folder: Path, repo_id: str, repo_type: str, path_in_repo: str, message: str) -> None:
    """Upload with the token huggingface_hub finds itself (HF_TOKEN or `hf auth login`)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    try:
        HfApi().upload_folder(
            folder_path=str(folder), repo_id=repo_id, repo_type=repo_type,
            path_in_repo=path_in_repo, commit_message=message,
        )  # fmt: skip
    except (HfHubHTTPError, OSError) as exc:
        raise BundleError(
            f"could not upload to {repo_type} {repo_id} on the Hub ({type(exc).__name__}); check "
            "the network, that the repo exists, and that you are logged in (HF_TOKEN)"
        ) from exc


# -- import -------------------------------------------------------------------------------------
def import_bundle(
    store: Store, src: str, *, allow_protocol_mismatch: bool = False
) -> list[ImportReport]:
    """Merge one bundle folder, a folder of bundles, or a Hub repo of bundles into the store.

    Every bundle is checked (hashes, file names, protocol versions, tables and columns) before
    anything is written; all rows go in one transaction, so a refused bundle changes nothing.
    Importing the same bundle again adds nothing.
    """
    with _source_folder(src) as folder:
        bundles = _bundle_folders(folder)
        checked = [
            _checked_bundle(store, b, allow_protocol_mismatch=allow_protocol_mismatch,
                            partial=src.startswith(HF_PREFIX))
            for b in bundles
        ]  # fmt: skip
        # Read every row before writing any, so a bad line anywhere refuses the whole import.
        loaded = [(b, m, _bundle_rows(b, m)) for b, m in checked]
        return [_merge(store, b, m, data, src) for b, m, data in loaded]


@contextmanager
def _source_folder(src: str) -> Iterator[Path]:
    if not src.startswith(HF_PREFIX):
        path = Path(src)
        if not path.is_dir():
            raise BundleError(f"{src[:200]} is not a folder holding a bundle (manifest.json)")
        yield path
        return
    repo_id, kind = _hub_repo(src.split("@", 1)[0], "dataset")
    revision = src.split("@", 1)[1] if "@" in src else None
    yield _hf_snapshot(repo_id, kind, revision)


def _hf_snapshot(repo_id: str, repo_type: str, revision: str | None) -> Path:
    """Cached download; honours HF_HUB_OFFLINE and HF_HUB_CACHE like every Hub read."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(
            snapshot_download(
                repo_id=repo_id, repo_type=repo_type, revision=revision,
                allow_patterns=["manifest.json", "*.jsonl", "bundles/*/manifest.json",
                                "bundles/*/*.jsonl"],
            )
        )  # fmt: skip
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as exc:
        raise BundleError(
            f"could not get {repo_type} {repo_id} from the Hugging Face Hub "
            f"({type(exc).__name__}); check the network, or import a local copy of the bundle"
        ) from exc


def _bundle_folders(folder: Path) -> list[Path]:
    if (folder / "manifest.json").is_file():
        return [folder]
    nested = sorted(p.parent for p in (folder / "bundles").glob("*/manifest.json"))
    if not nested:
        raise BundleError(f"{folder}: no manifest.json (and no bundles/*/manifest.json) found")
    return nested


def _read_manifest(folder: Path) -> BundleManifest:
    path = folder / "manifest.json"
    if path.stat().st_size > _MAX_MANIFEST_BYTES:
        raise BundleError(f"{path}: manifest is larger than {_MAX_MANIFEST_BYTES:,} bytes")
    try:
        manifest = BundleManifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise BundleError(
            f"{path}: not an intima bundle manifest ({exc.errors()[0]['msg']})"
        ) from exc
    if manifest.kind != BUNDLE_KIND:
        raise BundleError(f"{path}: kind {manifest.kind[:50]!r} is not {BUNDLE_KIND!r}")
    if manifest.format_version != BUNDLE_FORMAT_VERSION:
        raise BundleError(
            f"{path}: bundle format {manifest.format_version[:20]!r}; this intima reads "
            f"{BUNDLE_FORMAT_VERSION!r} (upgrade intima)"
        )
    return manifest


def _checked_bundle(
    store: Store, folder: Path, *, allow_protocol_mismatch: bool, partial: bool
) -> tuple[Path, BundleManifest]:
    manifest = _read_manifest(folder)
    _check_protocol(folder, manifest, allow_protocol_mismatch)
    store_tables = set(_exported_tables(store))
    for table in manifest.tables:
        if not _TABLE_NAME.match(table.name) or table.name in LOCAL_TABLES:
            raise BundleError(f"{folder}: refusing table name {table.name[:80]!r}")
        if table.name not in store_tables:
            raise BundleError(
                f"{folder}: table {table.name!r} is not in this store; upgrade intima to import it"
            )
        unknown = set(table.columns) - set(_columns(store, table.name))
        if unknown:
            raise BundleError(
                f"{folder}: table {table.name!r} has columns this store lacks "
                f"({', '.join(sorted(c[:40] for c in unknown))}); upgrade intima"
            )
        for entry in table.files:
            _check_file(folder, table, entry, partial=partial)
        if table.rows and f"{table.name}.jsonl" not in {f.name for f in table.files}:
            raise BundleError(f"{folder}: table {table.name!r} has rows but no hashed JSONL file")
    return folder, manifest


def _check_protocol(folder: Path, manifest: BundleManifest, allow: bool) -> None:
    ours = protocol_versions()
    differ = {
        k: (manifest.protocol.get(k), ours.get(k))
        for k in sorted(set(ours) | set(manifest.protocol))
        if manifest.protocol.get(k) != ours.get(k) and k in ours and k in manifest.protocol
    }
    if differ and not allow:
        what = "; ".join(f"{k}: bundle {b!r}, here {o!r}" for k, (b, o) in differ.items())
        raise BundleError(
            f"{folder}: protocol versions differ ({what}); results would not be comparable. "
            "Pass --allow-protocol-mismatch to import anyway"
        )


def _check_file(folder: Path, table: TableEntry, entry: FileEntry, *, partial: bool) -> None:
    name = entry.name
    if (
        not _SAFE_NAME.match(name)
        or ".." in name
        or name not in (f"{table.name}.jsonl", f"{table.name}.parquet")
    ):
        raise BundleError(
            f"{folder}: refusing file name {name[:80]!r} (bundle files are TABLE.jsonl or "
            "TABLE.parquet in the bundle folder itself)"
        )
    path = folder / name
    if partial and name.endswith(".parquet") and not path.exists():
        return  # Hub imports fetch only the JSONL; the Parquet twin is for other readers
    if not path.is_file():
        raise BundleError(f"{folder}: {name} is listed in the manifest but missing")
    if not _inside(path, folder):
        raise BundleError(f"{folder}: {name} is a link to a file outside the bundle; refused")
    if sha256_file(path) != entry.sha256:
        raise BundleError(
            f"{folder}: {name} does not match the manifest's sha256; the bundle was changed or "
            "damaged after publishing"
        )


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _read_rows(path: Path, table: TableEntry) -> list[dict[str, Any]]:
    rows = []
    allowed = set(table.columns)
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BundleError(f"{path}: line {n} is not JSON ({exc.msg})") from exc
            if not isinstance(row, dict) or not set(row) <= allowed:
                raise BundleError(f"{path}: line {n} does not match the manifest's columns")
            rows.append(row)
    if len(rows) != table.rows:
        raise BundleError(f"{path}: {len(rows)} rows, the manifest says {table.rows}")
    return rows


def _bundle_rows(folder: Path, manifest: BundleManifest) -> dict[str, list[dict[str, Any]]]:
    return {t.name: _read_rows(folder / f"{t.name}.jsonl", t) for t in manifest.tables if t.rows}


def _merge(
    store: Store,
    folder: Path,
    manifest: BundleManifest,
    data: dict[str, list[dict[str, Any]]],
    src: str,
) -> ImportReport:
    added: dict[str, int] = {}
    with store.transaction() as conn:
        # Rows may refer to tables later in the bundle; check all references once at the end.
        conn.execute("PRAGMA defer_foreign_keys = ON")
        for table in manifest.tables:
            before = conn.total_changes
            for row in data.get(table.name, []):
                _insert(conn, table.name, row)
            added[table.name] = conn.total_changes - before
        broken = conn.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise BundleError(
                f"{folder}: {len(broken)} rows refer to rows missing from the bundle and the store "
                f"(first in table {broken[0][0]!r}); nothing was imported"
            )
    return ImportReport(
        bundle_id=manifest.bundle_id, source=f"{src}:{folder.name}",
        rows_in_bundle={t.name: t.rows for t in manifest.tables}, rows_added=added,
    )  # fmt: skip


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    cols = list(row)
    names = ",".join(f'"{c}"' for c in cols)
    marks = ",".join("?" * len(cols))
    values = [json.dumps(v) if isinstance(v, dict | list) else v for v in row.values()]
    if table == "responses":
        # A stored error gives way to an imported answer, never the reverse (as in the runner).
        conn.execute(
            f"INSERT INTO responses ({names}) VALUES ({marks}) "
            "ON CONFLICT(response_id) DO UPDATE SET "
            + ", ".join(f'"{c}"=excluded."{c}"' for c in cols if c != "response_id")
            + " WHERE responses.status != 'ok' AND excluded.status = 'ok'",
            values,
        )
        return
    conn.execute(f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({marks})', values)
