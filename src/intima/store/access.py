"""How a store file is reached: read-write, or read-only where it cannot be written, and what
SQLite's failures mean for a user (busy, damaged, a disk that refuses writes).

A store on a read-only mount is read through SQLite's own read-only open, so the commands that
only read work on it, and the first write says in one line that the store is read-only.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from intima.core.errors import StoreError

T = TypeVar("T")

READ_ONLY_HINT = (
    "copy the store somewhere writable and pass it with --store (commands that only read, "
    "such as `intima runs`, `board build` and `export`, work on it as it is)"
)


def check_openable(path: Path, timeout_s: float, *, create: bool) -> None:
    """Refuse, in one line, a path that cannot be the store asked for: a missing file when only
    reading (``create=False``: a mistyped path must not become a new, empty store), a missing
    folder, a folder, a new file where nothing can be written, a file that is not a store."""
    if not create and not path.is_file():
        raise StoreError(
            f"no store at {path}: check the path (--store or INTIMA_STORE), or create one "
            "with `intima run`"
        )
    if path.parent and not path.parent.exists():
        raise StoreError(f"store folder {path.parent} does not exist")
    if path.is_dir():
        raise StoreError(f"{path} is a folder; --store takes the store's file")
    if not path.exists() and not os.access(path.parent, os.W_OK):
        raise StoreError(f"cannot create a store in {path.parent}: {READ_ONLY_HINT}")
    if path.exists():
        check_is_store(path, timeout_s, new_ok=create)


def while_busy(path: Path, timeout_s: float, attempt: Callable[[], T]) -> T:
    """``attempt()`` (opening the store), tried again while SQLite says the store is busy (the
    steps it will not wait on itself) for up to ``timeout_s``; then the store is busy."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise unreadable(path, exc) from exc
            if time.monotonic() > deadline:
                raise StoreError(
                    f"{path}: busy; another process held its lock for {int(timeout_s)} s ({exc})"
                ) from exc
            time.sleep(0.01 + random.random() * 0.05)  # noqa: S311 (jitter, not security)
        except sqlite3.DatabaseError as exc:
            raise unreadable(path, exc) from exc


def writable(path: Path) -> bool:
    """Whether SQLite can write the store: the file, and the folder that holds its WAL and
    shared-memory files. ``access`` reports a read-only mount even to root."""
    return not path.exists() or (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def read_only_connections(
    path: Path, timeout_s: float, flags_order: tuple[str, ...] = ("mode=ro", "immutable=1")
) -> Iterator[sqlite3.Connection]:
    """SQLite's read-only opens, safest first. A store in WAL mode needs its ``-shm`` file to
    be read safely; when none exists and the folder cannot hold one, the file is read as
    immutable, which is sound because nothing can be writing to a read-only location."""
    target = quote(str(path.resolve()))
    for flags in flags_order:
        conn = sqlite3.connect(
            f"file:{target}?{flags}", uri=True, isolation_level=None, timeout=timeout_s
        )
        conn.row_factory = sqlite3.Row
        yield conn


def check_is_store(path: Path, timeout_s: float, *, new_ok: bool) -> None:
    """Raise unless the file at ``path`` is an intima store, or (``new_ok``, for commands that
    write) a file with nothing in it yet. Looked at through a read-only open, so another
    application's database is refused byte for byte as it was: never migrated into a store."""
    if path.stat().st_size == 0:
        if new_ok:
            return
        raise not_a_store(path, "the file is empty")
    # Nothing writing it (no -wal or -journal beside it): read as immutable, which leaves no
    # -wal or -shm beside another application's WAL database. Else SQLite's locking open.
    in_use = any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-journal"))
    order = ("mode=ro", "immutable=1") if in_use else ("immutable=1", "mode=ro")
    last: sqlite3.DatabaseError | None = None
    for conn in read_only_connections(path, timeout_s, order):
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as exc:
            last = exc
            continue
        finally:
            conn.close()
        # Both: some other tools keep a table of their own called _migrations.
        if {"_migrations", "runs"} <= names or (new_ok and not names):
            return
        raise not_a_store(path, "an SQLite database of something else" if names else "empty")
    assert last is not None
    raise unreadable(path, last) from last


def not_a_store(path: Path, what: str) -> StoreError:
    return StoreError(
        f"{path} is not an intima store ({what}); check --store (or INTIMA_STORE), or give a "
        "new file name to start a store; the file was left as it is"
    )


def unreadable(path: Path, exc: sqlite3.DatabaseError) -> StoreError:
    text = str(exc)
    if "malformed" in text or "not a database" in text:
        return StoreError(
            f"{path} is damaged or not an intima store ({text}); restore it from a copy, or "
            f"see what is left with `sqlite3 {path} 'PRAGMA integrity_check'`"
        )
    return StoreError(f"{path}: not an intima store or unreadable ({text})")


def is_write_failure(exc: sqlite3.OperationalError) -> bool:
    """A write the disk refused: full (or over a file-size limit), failing, or read-only."""
    name = getattr(exc, "sqlite_errorname", "")
    return name.startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY")) or any(
        s in str(exc) for s in ("disk is full", "disk I/O error", "readonly database")
    )


def write_failed(path: Path, exc: sqlite3.OperationalError) -> StoreError:
    return StoreError(
        f"cannot write to the store {path} ({exc}): free disk space (or check the disk), "
        "then run the same command again; finished work is saved"
    )


def is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text
