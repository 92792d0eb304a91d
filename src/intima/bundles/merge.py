"""Importing result bundles: verify every file, hash and row, then merge in one transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from intima.bundles.checks import check_protocol, check_rows, check_twin, integrity_error
from intima.bundles.export import FileEntry, sha256_file
from intima.bundles.identity import Ledger, insert_row
from intima.bundles.membership import unseeded
from intima.bundles.owners import foreign_key_problem, keep_made_here, own, record
from intima.bundles.publish import (
    BUNDLE_FORMAT_VERSION,
    BUNDLE_KIND,
    HF_PREFIX,
    MAX_MANIFEST_BYTES,
    SAFE_NAME,
    TABLE_NAME,
    BundleError,
    BundleManifest,
    ImportReport,
    TableEntry,
    exported_tables,
    hub_repo,
    protocol_versions,
    table_columns,
)
from intima.bundles.signing import Publisher, local_publisher, verify
from intima.bundles.trust import TrustSet, default_trust
from intima.dataset.hub import snapshot
from intima.store import Store
from intima.store.introspect import primary_key
from intima.store.schema import operational_tables


# -- import -------------------------------------------------------------------------------------
def import_bundle(
    store: Store,
    src: str,
    *,
    allow_protocol_mismatch: bool = False,
    dry_run: bool = False,
    trust: TrustSet | None = None,
) -> list[ImportReport]:
    """Merge one bundle folder, a folder of bundles, or a Hub repo of bundles into the store.

    Every bundle is checked (its signature and that its publisher is in ``trust``, by default
    this machine's publisher alone; hashes, file names, protocol versions, tables, columns and
    every row, and the bundles against each other: see :mod:`intima.bundles.identity`; every
    random sample recomputed over all of them: :mod:`intima.bundles.membership`) before
    anything is written; each bundle's rows go in one transaction, so a refused bundle changes
    nothing. Importing the same bundle again adds nothing. ``dry_run`` reports what each bundle
    would add (as if imported alone) and rolls back.
    """
    trust = default_trust() if trust is None else trust
    with _source_folder(src) as (folder, links_within):
        loaded = [
            load_bundle(
                store,
                b,
                allow_protocol_mismatch=allow_protocol_mismatch,
                partial=src.startswith(HF_PREFIX),
                links_within=links_within,
                trust=trust,
                name=_name(folder, b, src),
            )
            for b in _bundle_folders(folder)
        ]
        names = [_name(folder, b.folder, src) for b in loaded]
        refuse_conflicts(store, loaded, names)
        if forged := unseeded(store, [(n, b.data) for n, b in zip(names, loaded, strict=True)]):
            name, why = next(iter(forged.items()))
            raise BundleError(f"{name}: {why}; nothing was imported")
        return [merge_bundle(store, b, src, dry_run=dry_run) for b in loaded]


def _name(source: Path, folder: Path, src: str) -> str:
    """A bundle as its import names it: ``bundles/NAME``, or the source for a bundle at its
    root."""
    rel = folder.relative_to(source).as_posix()
    return src[:200] if rel == "." else rel


@dataclass(frozen=True)
class Loaded:
    """A bundle whose files, manifest and every row passed the checks against a store."""

    folder: Path
    manifest: BundleManifest
    data: dict[str, list[dict[str, Any]]]
    #: its verified signer; None: unattributed (refused wherever a trust set applies)
    publisher: Publisher | None = None

    @property
    def fingerprint(self) -> str:
        return "" if self.publisher is None else self.publisher.fingerprint


def load_bundle(
    store: Store,
    folder: Path,
    *,
    allow_protocol_mismatch: bool = False,
    partial: bool = False,
    links_within: Path | None = None,
    trust: TrustSet | None = None,
    name: str | None = None,
) -> Loaded:
    """Read one bundle folder and check it (its signature, its publisher against ``trust``
    when given, hashes, names, protocol versions, tables, columns, every row, against
    ``store`` too); a BundleError naming the first problem. Read-only. Another publisher's
    scorer keys are marked with its fingerprint (:mod:`intima.bundles.owners`)."""
    _, manifest = _checked_bundle(
        store,
        folder,
        allow_protocol_mismatch=allow_protocol_mismatch,
        partial=partial,
        links_within=links_within,
    )
    publisher = manifest.publisher
    if trust is not None:
        admit(publisher, trust, name or str(folder))
    data = _bundle_rows(folder, manifest)
    if problem := foreign_key_problem(data):
        raise BundleError(f"{folder}: {problem}; nothing was imported")
    local = local_publisher()
    here = None if local is None else local.fingerprint
    if publisher is not None and publisher.fingerprint != here:
        own(data, publisher.fingerprint)
    check_rows(store, folder, data, "" if publisher is None else publisher.fingerprint, here)
    return Loaded(folder, manifest, data, publisher)


def admit(publisher: Publisher | None, trust: TrustSet, name: str) -> None:
    """Refuse a bundle whose publisher is unknown (unsigned) or not in ``trust``."""
    if publisher is None:
        raise BundleError(
            f"{name}: unattributed (no signature, so no known publisher: published before "
            "bundles were signed, or its manifest was stripped); only signed bundles of "
            "trusted publishers are taken. Its publisher re-signs it by publishing again "
            "from the store it came from (`intima publish --store STORE DEST`; to a results "
            "repo, then delete this folder from it) and sends the lines `intima publisher` "
            "prints for the trust file; nothing was imported"
        )
    if not trust.trusts(publisher.fingerprint):
        raise BundleError(
            f"{name}: published by {publisher.shown()} (name as claimed), who is not in "
            f"{trust.source}; to take its bundles, add its key to a --trust file "
            "(docs/requests-and-bundles.md, Publishers); nothing was imported"
        )


def refuse_conflicts(store: Store, bundles: Sequence[Loaded], names: Sequence[str]) -> None:
    """Refuse bundles of one import that hold different rows under the same ids: every side
    is named, none wins by its name or order (:mod:`intima.bundles.identity`)."""
    ledger = Ledger(store)
    for b, name in zip(bundles, names, strict=True):
        ledger.add(name, b.data, b.fingerprint)
    if found := ledger.conflicts():
        raise BundleError(f"{found[0].message()}; nothing was imported")


def merge_bundle(store: Store, bundle: Loaded, src: str, *, dry_run: bool = False) -> ImportReport:
    """Write a loaded bundle's rows in one transaction (``dry_run``: roll it back)."""
    return _merge(store, bundle, src, dry_run=dry_run)


@contextmanager
def _source_folder(src: str) -> Iterator[tuple[Path, Path | None]]:
    """The folder to read, and where its files may link to: nowhere for a local folder (None:
    each bundle's own folder), the cache's repo folder for a Hub snapshot, whose files are
    links into ``blobs/`` beside ``snapshots/``."""
    if not src.startswith(HF_PREFIX):
        path = Path(src)
        if not path.is_dir():
            raise BundleError(f"{src[:200]} is not a folder holding a bundle (manifest.json)")
        yield path, None
        return
    repo_id, kind = hub_repo(src.split("@", 1)[0], "dataset")
    revision = src.split("@", 1)[1] if "@" in src else None
    snapshot_dir = _hf_snapshot(repo_id, kind, revision)
    yield snapshot_dir, snapshot_dir.parent.parent  # <repo folder>/snapshots/<commit>


def _hf_snapshot(repo_id: str, repo_type: str, revision: str | None) -> Path:
    return snapshot(
        repo_id,
        repo_type=repo_type,
        revision=revision,
        allow_patterns=["manifest.json", "*.jsonl", "bundles/*/manifest.json", "bundles/*/*.jsonl"],
        error=BundleError,
        hint="import a local copy of the bundle",
    )


def _bundle_folders(folder: Path) -> list[Path]:
    """The folder itself if it holds a manifest.json, and every ``bundles/*/`` that does: a
    repo with both is read whole, never just its root."""
    root = [folder] if (folder / "manifest.json").exists() else []
    nested = sorted(p.parent for p in (folder / "bundles").glob("*/manifest.json"))
    if not root and not nested:
        raise BundleError(f"{folder}: no manifest.json (and no bundles/*/manifest.json) found")
    return [*root, *nested]


def _read_manifest(folder: Path) -> BundleManifest:
    path = folder / "manifest.json"
    if not path.is_file():  # a folder (or a dangling link) of that name
        raise BundleError(f"{path}: not a file; a bundle's manifest.json must be a file")
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise BundleError(f"{path}: manifest is larger than {MAX_MANIFEST_BYTES:,} bytes")
    try:
        raw = json.loads(path.read_bytes())
        manifest = BundleManifest.model_validate(raw)
    except ValidationError as exc:
        raise BundleError(
            f"{path}: not an intima bundle manifest ({exc.errors()[0]['msg']})"
        ) from exc
    except (ValueError, RecursionError) as exc:  # (not JSON, or nested too deep to read)
        raise BundleError(f"{path}: not an intima bundle manifest (not JSON)") from exc
    if manifest.kind != BUNDLE_KIND:
        raise BundleError(f"{path}: kind {manifest.kind[:50]!r} is not {BUNDLE_KIND!r}")
    if manifest.format_version != BUNDLE_FORMAT_VERSION:
        raise BundleError(
            f"{path}: bundle format {manifest.format_version[:20]!r}; this intima reads "
            f"{BUNDLE_FORMAT_VERSION!r} (upgrade intima)"
        )
    signer, signature = manifest.publisher, manifest.signature
    if (signer is None) != (signature is None) or (
        signer is not None
        and signature is not None
        and not verify(raw, signer, signature)  # the file as written, every field of it
    ):
        raise BundleError(
            f"{path}: its signature does not verify (the manifest was changed after it was "
            "signed, or signed by another key than the one it names); refused"
        )
    return manifest


def _checked_bundle(
    store: Store,
    folder: Path,
    *,
    allow_protocol_mismatch: bool,
    partial: bool,
    links_within: Path | None = None,
) -> tuple[Path, BundleManifest]:
    manifest = _read_manifest(folder)
    _check_protocol(folder, manifest, allow_protocol_mismatch)
    store_tables = set(exported_tables(store))
    operational = operational_tables()
    for table in manifest.tables:
        if not TABLE_NAME.match(table.name):
            raise BundleError(f"{folder}: refusing table name {table.name[:80]!r}")
        if table.name in operational:
            continue  # another machine's claims or queue: never imported (see _bundle_rows)
        if table.name not in store_tables:
            raise BundleError(
                f"{folder}: table {table.name!r} is not in this store; upgrade intima to import it"
            )
        unknown = set(table.columns) - set(table_columns(store, table.name))
        if unknown:
            raise BundleError(
                f"{folder}: table {table.name!r} has columns this store lacks "
                f"({', '.join(sorted(c[:40] for c in unknown))}); upgrade intima"
            )
        for entry in table.files:
            _check_file(folder, table, entry, partial=partial, root=links_within or folder)
        if table.rows and f"{table.name}.jsonl" not in {f.name for f in table.files}:
            raise BundleError(f"{folder}: table {table.name!r} has rows but no hashed JSONL file")
    return folder, manifest


def _check_protocol(folder: Path, manifest: BundleManifest, allow: bool) -> None:
    ours = protocol_versions()
    check_protocol(folder, manifest.protocol, ours)
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


def _check_file(
    folder: Path, table: TableEntry, entry: FileEntry, *, partial: bool, root: Path
) -> None:
    name = entry.name
    if (
        not SAFE_NAME.match(name)
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
    if not _inside(path, root):
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
            except RecursionError as exc:  # a line nested thousands of levels deep
                raise BundleError(f"{path}: line {n} nests too deep to be a row") from exc
            if not isinstance(row, dict) or not set(row) <= allowed:
                raise BundleError(f"{path}: line {n} does not match the manifest's columns")
            rows.append(row)
    if len(rows) != table.rows:
        raise BundleError(f"{path}: {len(rows)} rows, the manifest says {table.rows}")
    return rows


def _bundle_rows(folder: Path, manifest: BundleManifest) -> dict[str, list[dict[str, Any]]]:
    operational = operational_tables()
    data = {}
    for t in manifest.tables:
        if not t.rows or t.name in operational:
            continue
        rows = data[t.name] = _read_rows(folder / f"{t.name}.jsonl", t)
        # A Hub import fetches no Parquet (see _check_file); a local bundle's twin is compared.
        if (
            f"{t.name}.parquet" in {f.name for f in t.files}
            and (folder / f"{t.name}.parquet").is_file()
        ):
            check_twin(folder, t.name, rows)
    return data


def _merge(store: Store, bundle: Loaded, src: str, *, dry_run: bool = False) -> ImportReport:
    added: dict[str, int] = {}
    try:
        return _write(store, bundle, src, added, dry_run)
    except _RolledBack as done:
        return done.report
    except sqlite3.IntegrityError as exc:
        raise integrity_error(bundle.folder, exc) from exc


class _RolledBack(Exception):
    """Leaves a dry run's transaction by rolling it back, carrying what it would have done."""

    def __init__(self, report: ImportReport) -> None:
        self.report = report


def _write(
    store: Store, bundle: Loaded, src: str, added: dict[str, int], dry_run: bool
) -> ImportReport:
    folder, manifest, data = bundle.folder, bundle.manifest, bundle.data
    with store.transaction() as conn:
        # Rows may refer to tables later in the bundle; check all references once at the end.
        conn.execute("PRAGMA defer_foreign_keys = ON")
        for table in manifest.tables:
            keys = primary_key(conn, table.name)
            if bundle.publisher is not None:  # (not counted as rows added)
                keep_made_here(conn, table.name, keys, data.get(table.name, []))
            before = conn.total_changes
            for row in data.get(table.name, []):
                insert_row(conn, table.name, keys, row)
            added[table.name] = conn.total_changes - before
            if bundle.publisher is not None:  # (not counted as rows added)
                record(conn, bundle.publisher, table.name, keys, data.get(table.name, []))
        broken = conn.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise BundleError(
                f"{folder}: {len(broken)} rows refer to rows missing from the bundle and the store "
                f"(first in table {broken[0][0]!r}); nothing was imported"
            )
        report = ImportReport(
            bundle_id=manifest.bundle_id,
            source=f"{src}:{folder.name}",
            rows_in_bundle={t.name: t.rows for t in manifest.tables},
            rows_added=added,
            publisher=None if bundle.publisher is None else bundle.publisher.shown(),
        )
        if dry_run:
            raise _RolledBack(report)
    return report
