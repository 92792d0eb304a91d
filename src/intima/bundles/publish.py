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

Every bundle is signed by this machine's publisher key (:mod:`intima.bundles.signing`; made on
first use): the manifest names the publisher and holds every file's hash, and the signature
covers the manifest. A bundle carries only what its publisher made: another publisher's
scorer rows imported into this store stay out (:mod:`intima.bundles.owners`).

On the Hub (``hf://datasets/OWNER/NAME``), each publish goes to its own folder
``bundles/<bundle_id>/`` so that several machines can publish to one repo without overwriting
each other; importing the repo merges every bundle in it.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from intima.bundles.export import FileEntry, write_table
from intima.bundles.owners import MARK, SCORER_KEYS
from intima.bundles.signing import Publisher, local_publisher, private_key, sign
from intima.core.errors import IntimaError
from intima.core.ids import content_hash, content_id
from intima.core.version import __version__
from intima.store import Store, now
from intima.store.schema import operational_tables

BUNDLE_FORMAT_VERSION = "1"
BUNDLE_KIND = "intima-results-bundle"
HF_PREFIX = "hf://"
CORE_TABLES = ("prompts", "runs", "run_prompts", "responses")
SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}$")
TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_MANIFEST_BYTES = 10_000_000

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
    #: who signed it; none: unattributed (a bundle from before signatures, or made by hand)
    publisher: Publisher | None = None
    #: ed25519 over every other field (intima.bundles.signing.signed_bytes), base64
    signature: str | None = None

    @property
    def files(self) -> list[FileEntry]:
        return [f for t in self.tables for f in t.files]


class ImportReport(BaseModel):
    bundle_id: str
    source: str
    rows_in_bundle: dict[str, int]
    rows_added: dict[str, int]
    publisher: str | None = None  # "name (key 1a2b3c4d)"


# -- protocol versions --------------------------------------------------------------------------
def protocol_versions() -> dict[str, str]:
    """What the stored numbers mean: bundles that differ here are not comparable."""
    from intima.core.ratings import RATING_PROTOCOL_VERSION
    from intima.core.taxonomy import TAXONOMY_VERSION

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
        repo_id, kind = hub_repo(dest, repo_type)
        if uploader is None:
            check_hub_reachable(dest)
        with tempfile.TemporaryDirectory(prefix="intima-bundle-") as tmp:
            manifest = write_bundle(store, Path(tmp), run_ids)
            (uploader or _hf_upload)(
                Path(tmp),
                repo_id,
                kind,
                f"bundles/{manifest.bundle_id}",
                f"intima bundle {manifest.bundle_id} ({len(manifest.runs)} runs)",
            )
        return manifest
    return write_bundle(store, Path(dest), run_ids)


def check_hub_reachable(target: str) -> None:
    """Say in one line, at once, that the Hugging Face Hub cannot be reached (offline mode, no
    network, nothing at HF_ENDPOINT): huggingface_hub's uploads retry a refused connection for
    about 24 s and then raise a transport error of their own. One request, no retries, through
    huggingface_hub's own session (so its proxies and endpoint apply)."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    if constants.is_offline_mode():
        raise BundleError(
            f"cannot reach the Hugging Face Hub for {target}: HF_HUB_OFFLINE is set; unset it "
            "to upload, or give a folder instead"
        )
    try:
        get_session().head(constants.ENDPOINT, timeout=10)
    except Exception as exc:  # any transport failure: refused, reset, DNS, TLS, timeout
        raise BundleError(
            f"cannot reach the Hugging Face Hub at {constants.ENDPOINT} for {target} "
            f"({type(exc).__name__}); check the network (and HF_ENDPOINT), or give a folder"
        ) from exc


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
    for name in exported_tables(store):
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
    key, publisher = private_key(create=True), local_publisher(create=True)
    assert key is not None and publisher is not None  # (made above when missing)
    manifest = BundleManifest(
        bundle_id=_bundle_id(created, ids),
        protocol=protocol_versions(),
        created_at=created,
        runs=runs,
        tables=tables,
        publisher=publisher,
    )
    signature = sign(manifest.model_dump(mode="json"), key)
    manifest = manifest.model_copy(update={"signature": signature})
    (out_dir / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    return manifest


def _bundle_id(created: str, run_ids: Sequence[str]) -> str:

    digest = content_id(created, *sorted(run_ids), length=8)
    return re.sub(r"[^0-9]", "", created)[:14] + "-" + digest


def exported_tables(store: Store) -> list[str]:
    """Tables a bundle carries: results, never a machine's operational state (each subsystem's
    migrations say which of its tables are operational)."""
    operational = operational_tables()
    names = [
        r[0]
        for r in store.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
    ]
    extra = [
        n for n in names if n not in CORE_TABLES and n not in operational and TABLE_NAME.match(n)
    ]
    return [*CORE_TABLES, *extra]


def table_columns(store: Store, table: str) -> list[str]:
    return [c.name for c in store.columns(table)]


def _table_rows(
    store: Store, table: str, run_ids: Sequence[str]
) -> tuple[list[str], list[dict[str, Any]]]:
    columns = table_columns(store, table)
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
    if (scorer := SCORER_KEYS.get(table)) is not None:  # another publisher's: not ours to sign
        rows = [r for r in rows if MARK not in str(r.get(scorer))]
    if "content_hash" in columns and not params:
        # Judgments are keyed by what was judged (prompt + response text), not by run.
        hashes = _content_hashes(store, run_ids)
        rows = [r for r in rows if r["content_hash"] in hashes]
    return columns, rows


def _content_hashes(store: Store, run_ids: Sequence[str]) -> set[str]:
    return {
        content_hash(r["prompt"], r["response"], r["context"])
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


def hub_repo(dest: str, repo_type: str) -> tuple[str, str]:
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

    try:
        HfApi().upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type=repo_type,
            path_in_repo=path_in_repo,
            commit_message=message,
        )
    except Exception as exc:  # huggingface_hub lets transport (httpx) errors through as they are
        raise BundleError(
            f"could not upload to {repo_type} {repo_id} on the Hub ({type(exc).__name__}); check "
            "the network, that the repo exists, and that you are logged in (HF_TOKEN)"
        ) from exc
