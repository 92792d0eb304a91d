"""Claims: each piece of work (a response, a judgment) is requested by one process at a time.

A claim is live while its lease lasts and, on this host, while its process is alive: a process
killed with SIGKILL leaves claims that the next one takes over at once.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

HOST = socket.gethostname()

ClaimState = Literal["claimed", "done", "busy"]


class ClaimKind(BaseModel):
    """A claims table, and the query listing the keys whose work is stored for good."""

    table: str
    key: str
    finished: str


RESPONSE_CLAIMS = ClaimKind(
    table="response_claims",
    key="response_id",
    finished="SELECT response_id FROM responses WHERE status = 'ok'",
)
JUDGMENT_CLAIMS = ClaimKind(
    table="judgment_claims",
    key="judgment_id",
    finished="SELECT judgment_id FROM judgments WHERE status = 'scored'",
)


def claim_owner() -> str:
    """A fresh owner id for one run of one process."""
    return f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _claim_live(row: sqlite3.Row) -> bool:
    if row["expires"] <= time.time():
        return False
    return row["host"] != HOST or _pid_alive(int(row["pid"]))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def claim(
    conn: sqlite3.Connection, kind: ClaimKind, keys: Sequence[str], owner: str, lease_s: float
) -> list[ClaimState]:
    """Claim several pieces of work inside the caller's transaction; each is claimed, done
    (stored for good), or busy (another owner's claim is live)."""
    states: list[ClaimState] = []
    expires = time.time() + lease_s
    done_sql = f"SELECT 1 FROM ({kind.finished}) AS f WHERE f.{kind.key} = ?"
    for key in keys:
        if conn.execute(done_sql, (key,)).fetchone():
            states.append("done")
            continue
        row = conn.execute(
            f"SELECT owner, host, pid, expires FROM {kind.table} WHERE {kind.key} = ?", (key,)
        ).fetchone()
        if row is not None and row["owner"] != owner and _claim_live(row):
            states.append("busy")
            continue
        conn.execute(
            f"INSERT OR REPLACE INTO {kind.table} ({kind.key}, owner, host, pid, expires) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, owner, HOST, os.getpid(), expires),
        )
        states.append("claimed")
    return states
