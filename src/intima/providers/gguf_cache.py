"""A GGUF file converted once: the converted model kept on disk, keyed by the file's content.

Reading a GGUF through transformers dequantises every tensor and rebuilds the tokenizer from
the file's vocabulary: for the bundled SmolLM2 (98 MB, Q4_1) about 25 s of every start on this
2-core machine (tokenizer 5.7 s, model 18.8 s), 22-29 CPU-seconds; the same model saved as
safetensors loads in about 0.5 s (tokenizer 0.36 s, model 0.16 s, once transformers has imported
its Llama code, which either way costs about 2.5 CPU-seconds).

An entry lives in ``$INTIMA_CACHE_DIR/gguf/<key>/`` (by default
``${XDG_CACHE_HOME:-~/.cache}/intima/gguf/<key>/``); it is 540 MB for SmolLM2, the weights in
float32, because only float32 holds the dequantised values exactly.

The key is the GGUF's sha256 (hashed streaming on every start: 0.12-0.4 s for SmolLM2, simpler and
safer than trusting a path and a timestamp) and the versions of the packages that do the
conversion, so a different file or a different transformers never reads another's entry.

An entry is written whole into a temporary folder beside it and renamed into place, so readers
see all of it or nothing, and of two processes converting at once the second to finish discards
its copy. Its manifest, written last, records each file's size and modification time: a file
truncated, rewritten or removed since (the ways a finished entry goes wrong) no longer matches,
and the entry is converted again rather than read. Checking sizes and times costs nothing;
hashing the 540 MB again would cost 0.6 s, more than the load it guards.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TypeVar

#: Bumped when what an entry holds, or how it is written, changes.
FORMAT = 1
#: The packages whose versions can change what a conversion produces.
CONVERTERS = ("torch", "transformers", "gguf")
MANIFEST = "intima-cache.json"
#: A temporary folder this old belongs to a process that died mid-write (a write takes seconds).
STALE_S = 3600.0

T = TypeVar("T")


def cache_root() -> Path:
    """The folder holding the entries: ``$INTIMA_CACHE_DIR/gguf``, else the XDG cache's."""
    base = os.environ.get("INTIMA_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        base = str(Path(xdg) / "intima")
    return Path(base).expanduser() / "gguf"


def file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def converter_versions() -> dict[str, str]:
    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "absent"

    return {name: installed(name) for name in CONVERTERS}


def cache_key(gguf_sha256: str, versions: Mapping[str, str]) -> str:
    """The entry's folder name: the file's hash (readable at a glance) and a digest of the
    file's hash, the converters' versions and the format (what decides the converted model)."""
    what = {"gguf_sha256": gguf_sha256, "versions": dict(versions), "format": FORMAT}
    digest = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()
    return f"{gguf_sha256[:16]}-{digest[:16]}"


def _files(folder: Path) -> dict[str, dict[str, int]]:
    """Each file's size and modification time, by its path in ``folder`` (the manifest's own
    record excluded)."""
    found: dict[str, dict[str, int]] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            st = p.stat()
            name = p.relative_to(folder).as_posix()
            found[name] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    return found


def intact(entry: Path, key: str) -> bool:
    """Whether ``entry`` is a whole entry for ``key``, every file as it was written."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
        return (
            isinstance(manifest, dict)
            and manifest.get("key") == key
            and bool(manifest.get("files"))
            and manifest["files"] == _files(entry)
        )
    except (OSError, ValueError):
        return False


def load_or_convert(
    gguf: Path,
    convert: Callable[[], T],
    read: Callable[[Path], T],
    write: Callable[[T, Path], None],
) -> T:
    """The converted model of ``gguf``: ``read`` from its cache entry when that is whole,
    else ``convert``-ed and ``write``-n to a new entry (a failed write is one warning; the
    model converted is still returned)."""
    key = cache_key(file_sha256(gguf), converter_versions())
    root = cache_root()
    entry = root / key
    unreadable = None  # the manifest of a whole-looking entry that failed to load
    if intact(entry, key):
        try:
            return read(entry)
        # Whatever a damaged entry raises (safetensors, JSON, tokenizers each have their own),
        # the answer is the same: convert again, and replace it.
        except Exception:
            unreadable = _manifest_text(entry)
    converted = convert()
    try:
        _store(root, key, lambda folder: write(converted, folder), unreadable)
    # A read-only home, a full disk, a model transformers will not save: slower next time,
    # never wrong, and the model in hand is as good as a cached one.
    except Exception as exc:
        sys.stderr.write(
            f"warning: could not cache the converted {gguf.name} in {root} ({exc}); the next "
            "start converts it again (set INTIMA_CACHE_DIR to a writable folder)\n"
        )
    return converted


def _manifest_text(entry: Path) -> str | None:
    try:
        return (entry / MANIFEST).read_text(encoding="utf-8")
    except OSError:
        return None


def _store(root: Path, key: str, write: Callable[[Path], None], unreadable: str | None) -> None:
    """Write a new entry for ``key`` and rename it into place, unless another process put a
    whole one there meanwhile (``unreadable``: the manifest of the one that failed to load,
    which is replaced even though it looks whole)."""
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale(root)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", suffix=".tmp", dir=root))
    try:
        write(tmp)
        for name in _files(tmp):
            _fsync(tmp / name)
        manifest = {"key": key, "format": FORMAT, "files": _files(tmp)}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        _fsync(tmp / MANIFEST)
        entry = root / key
        if entry.exists():
            if intact(entry, key) and _manifest_text(entry) != unreadable:
                return  # another process finished first: its entry stands, ours goes
            _discard(entry, root, key)
        try:
            tmp.rename(entry)
        except OSError:
            if not entry.exists():
                raise
            # Another process renamed its entry into place first; ours goes.
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _discard(entry: Path, root: Path, key: str) -> None:
    """Move a damaged entry aside before removing it, so nobody reads it half removed."""
    aside = Path(tempfile.mkdtemp(prefix=f".{key}.", suffix=".old", dir=root))
    try:
        entry.rename(aside / "entry")
    except FileNotFoundError:
        pass  # another process moved it first
    shutil.rmtree(aside, ignore_errors=True)


def _remove_stale(root: Path) -> None:
    """Temporary folders left by a process killed mid-write (each up to the entry's size)."""
    now = time.time()
    for leftover in root.glob(".*"):
        try:
            if now - leftover.stat().st_mtime > STALE_S:
                shutil.rmtree(leftover, ignore_errors=True)
        except OSError:
            continue


def _fsync(path: Path) -> None:
    # The rename must not become durable before the data: after a crash a file would be there
    # at its recorded size but hold zeros.
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
