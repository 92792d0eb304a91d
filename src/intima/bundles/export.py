"""Writing stored responses out as JSONL and Parquet, with a manifest of what produced them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from intima.core.errors import IntimaError
from intima.core.taxonomy import TAXONOMY_VERSION
from intima.core.version import __version__
from intima.store import Store, now

EXPORT_FORMAT_VERSION = "1"


class FileEntry(BaseModel):
    name: str
    sha256: str
    rows: int


class Manifest(BaseModel):
    format_version: str = EXPORT_FORMAT_VERSION
    kind: str = "responses"
    package_version: str = __version__
    taxonomy_version: str = TAXONOMY_VERSION
    created_at: str
    runs: list[dict[str, Any]]
    files: list[FileEntry]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_table(rows: Sequence[dict[str, Any]], out_dir: Path, stem: str) -> list[FileEntry]:
    """``stem.jsonl`` and ``stem.parquet`` with the same rows; nested values become JSON text
    in Parquet so that every column has one type."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl = out_dir / f"{stem}.jsonl"
    with jsonl.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    flat = [
        {
            k: json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v
            for k, v in r.items()
        }
        for r in rows
    ]
    parquet = out_dir / f"{stem}.parquet"
    pq.write_table(pa.Table.from_pylist(flat), parquet)
    return [FileEntry(name=p.name, sha256=sha256_file(p), rows=len(rows)) for p in (jsonl, parquet)]


#: The files an export writes: a folder holding only these may be written over with ``force``.
EXPORT_FILES = frozenset({"responses.jsonl", "responses.parquet", "manifest.json"})


def export_responses(
    store: Store, run_ids: Sequence[str], out_dir: Path, *, force: bool = False
) -> Manifest:
    """Every prompt of the given runs (all runs if empty) with its response or its error.

    A folder that is not empty is refused (as ``publish`` refuses one), unless ``force`` and it
    holds nothing but an earlier export's files: other files are never overwritten or mixed in.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise IntimaError(f"{out_dir} is a file; export into a folder")
    present = {p.name for p in out_dir.iterdir()} if out_dir.is_dir() else set()
    if present and not (force and present <= EXPORT_FILES):
        hint = (
            "--force replaces an earlier export"
            if present <= EXPORT_FILES
            else "it holds other files; export into a new or empty folder"
        )
        raise IntimaError(f"{out_dir} is not empty ({hint})")
    ids = store.resolve_runs(list(run_ids) or None)
    for name in present:  # an earlier export's files go first: a link is removed, never followed
        (out_dir / name).unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [row for run_id in ids for row in store.run_rows(run_id)]
    files = write_table(rows, out_dir, "responses")
    manifest = Manifest(created_at=now(), runs=[store.run_provenance(i) for i in ids], files=files)
    (out_dir / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    return manifest
