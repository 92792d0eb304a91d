"""The request queue: models people ask to have benchmarked, and the leases workers hold on them.

A request moves ``pending`` → ``running`` → ``finished`` or ``failed`` (with a reason), or is
``cancelled``; every transition is also written to ``request_events`` with a timestamp and the
worker's id. Which moves are allowed is decided by :mod:`intima.service.lease`, the one state
machine this queue and the Hub's share; this module stores its decisions.

Claiming is atomic: :func:`claim_next` picks and marks a request inside one ``BEGIN IMMEDIATE``
transaction, so two workers can never take the same request. A claim is a *lease*: the worker
renews it (:func:`heartbeat`) while it works; if the worker dies, the lease runs out and the
request becomes claimable again. Generation is resumable, so the next worker only asks for the
answers that are still missing.

De-duplication: two requests for the same model configuration (provider, model, system prompt,
generation settings; *not* the server URLs, which do not change the answers) and the same
dataset are one request. Adding a duplicate of a pending, running or finished request returns
the existing record unchanged, with ``is_new=False``, so a web form can simply say "already
requested". Adding a duplicate of a *failed* request puts it back in the queue; a *cancelled*
one stays cancelled until a maintainer reopens it (:func:`reopen`).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Annotated, Final, Protocol

from pydantic import BaseModel, Field

from intima.core.config import GenerationSettings, ModelConfig, stable_hash
from intima.core.errors import IntimaError
from intima.core.version import __version__
from intima.service import lease
from intima.service.lease import Clock, Move, Status
from intima.service.request_rules import REQUEST_DATASETS as REQUEST_DATASETS
from intima.service.request_rules import QueueError as QueueError
from intima.service.request_rules import check_request as check_request
from intima.store import Store, now

MAX_REASON_CHARS = 2_000
DEFAULT_LEASE_S = 120.0
DEFAULT_MAX_ATTEMPTS = 3
#: Request ids are 16 lower-case hex digits (a hash prefix on the Hub, a uuid4 prefix locally);
#: an id names a file on the Hub, so ``../../evil`` must never pass.
REQUEST_ID_PATTERN: Final = r"^[0-9a-f]{16}$"

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)


class RequestRecord(BaseModel):
    request_id: Annotated[str, Field(pattern=REQUEST_ID_PATTERN)]
    spec: str
    requester: str | None
    dataset: str
    config_key: str
    config: ModelConfig
    status: Status
    reason: str | None = None
    worker_id: str | None = None
    lease_expires: float | None = None
    attempts: int = 0
    run_ids: list[str] = []
    package_version: str
    created_at: str
    updated_at: str
    started_at: str | None = None
    finished_at: str | None = None
    #: Only meaningful on the value :func:`add_request` returns: False for a duplicate.
    is_new: bool = False


class QueueUnavailable(IntimaError):
    """The queue cannot be read or written just now (a remote queue out of reach)."""


def add_request(
    store: Store,
    spec: str,
    requester: str | None = None,
    *,
    dataset: str = "hub",
    system_prompt: str | None = None,
    generation: GenerationSettings | None = None,
    allow_urls: bool = True,
) -> RequestRecord:
    """Validate and queue a request; a duplicate returns the existing one (``is_new=False``).

    ``allow_urls=False`` is for untrusted callers (the web form): a request may then name a
    model but not a server, so nobody can make the worker call an address of their choosing.
    """
    config, requester = check_request(
        spec, requester, dataset, system_prompt, generation, allow_urls=allow_urls
    )
    dedup = stable_hash({"config": config.cache_fields(), "dataset": dataset})
    stamp = now()
    with store.transaction() as conn:
        row = conn.execute("SELECT * FROM requests WHERE dedup_key = ?", (dedup,)).fetchone()
        if row is not None:  # a duplicate; a failed one goes back into the queue
            old = _record(row)
            move = lease.requeue(old, "pending")
            if move is None:
                return old
            request_id = old.request_id
            _apply(conn, old, move)
        else:
            request_id = uuid.uuid4().hex[:16]
            conn.execute(
                "INSERT INTO requests (request_id, spec, requester, dataset, dedup_key, "
                "config_key, config_json, status, package_version, created_at, updated_at) "
                "VALUES (?,?,?,?,?,?,?,'pending',?,?,?)",
                (
                    request_id,
                    config.spec,
                    requester,
                    dataset,
                    dedup,
                    config.config_key,
                    config.model_dump_json(),
                    __version__,
                    stamp,
                    stamp,
                ),
            )
            _event(conn, request_id, "pending", None, "requested")
        new = conn.execute("SELECT * FROM requests WHERE request_id = ?", (request_id,)).fetchone()
    return _record(new).model_copy(update={"is_new": True})


def list_requests(store: Store, status: Status | None = None) -> list[RequestRecord]:
    """All requests (or those with one status), oldest first."""
    if status is None:
        rows = store.query("SELECT * FROM requests ORDER BY created_at, rowid")
    else:
        rows = store.query(
            "SELECT * FROM requests WHERE status = ? ORDER BY created_at, rowid", (status,)
        )
    return [_record(r) for r in rows]


def get_request(store: Store, request_id: str) -> RequestRecord:
    rows = store.query("SELECT * FROM requests WHERE request_id = ?", (request_id,))
    if not rows:
        raise QueueError(f"no request {request_id[:40]!r}; see `intima requests`")
    return _record(rows[0])


def request_events(store: Store, request_id: str) -> list[dict[str, str | None]]:
    rows = store.query(
        "SELECT at, status, worker_id, detail FROM request_events WHERE request_id = ? "
        "ORDER BY rowid",
        (request_id,),
    )
    return [dict(r) for r in rows]


def claim_next(
    store: Store,
    worker_id: str,
    lease_s: float = DEFAULT_LEASE_S,
    *,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    clock: Clock = time.time,
    skip: Collection[str] = (),
) -> RequestRecord | None:
    """Atomically take the oldest claimable request (:func:`lease.claim` decides which are,
    and fails one whose workers keep stopping); None if there is none. ``skip``: requests this
    worker gave back and does not take again yet."""
    marks = ",".join("?" * len(lease.CLAIMABLE))
    with store.transaction() as conn:
        at = clock()
        rows = conn.execute(
            f"SELECT * FROM requests WHERE status IN ({marks}) ORDER BY created_at, rowid",
            lease.CLAIMABLE,
        ).fetchall()
        for row in rows:
            rec = _record(row)
            if rec.request_id in skip:
                continue
            move = lease.claim(rec, worker_id, at, lease_s, max_attempts)
            if move is not None and _apply(conn, rec, move) and move.status == "running":
                return _fetch(conn, rec.request_id)
    return None


def heartbeat(
    store: Store,
    request_id: str,
    worker_id: str,
    lease_s: float = DEFAULT_LEASE_S,
    *,
    clock: Clock = time.time,
) -> bool:
    """Extend the lease; False if this worker no longer holds it (another worker took over)."""
    return _change(store, request_id, lambda r: lease.renew(r, worker_id, clock(), lease_s))


def finish(store: Store, request_id: str, worker_id: str, run_ids: list[str]) -> bool:
    """Mark finished; False (and nothing written) if this worker had lost the lease."""
    return _change(
        store, request_id, lambda r: lease.settle(r, worker_id, "finished", None), run_ids
    )


def fail(store: Store, request_id: str, worker_id: str, reason: str) -> bool:
    """Mark failed with a reason (secrets from the environment are blanked out of it)."""
    reason = redact(reason)[:MAX_REASON_CHARS]
    return _change(store, request_id, lambda r: lease.settle(r, worker_id, "failed", reason))


def release(store: Store, request_id: str, worker_id: str, detail: str = "released") -> bool:
    """Give a claimed request back to the queue at once (a worker stopping cleanly)."""
    return _change(store, request_id, lambda r: lease.release(r, worker_id, detail))


def cancel(store: Store, request_id: str, by: str | None = None) -> RequestRecord:
    """Cancel a pending or running request. A worker on it stops at its next heartbeat, keeps
    what it stored and publishes nothing; asking for the same model again does not undo the
    cancel (:func:`reopen` does)."""
    return _decide(
        store,
        request_id,
        lambda r: lease.review(r, "cancelled", f"cancelled by {by or '?'}"),
        lambda r: lease.refusal(request_id, r, "cancelled"),
    )


def reopen(store: Store, request_id: str, by: str | None = None) -> RequestRecord:
    """Put a cancelled request back in the queue, afresh (a maintainer's decision)."""
    return _decide(
        store,
        request_id,
        lambda r: lease.reopen(r, f"reopened by {by or '?'}"),
        lambda r: lease.reopen_refusal(request_id, r),
    )


def _decide(
    store: Store,
    request_id: str,
    decide: Callable[[RequestRecord], Move | None],
    refused: Callable[[RequestRecord], str],
) -> RequestRecord:
    """A maintainer's decision on one request: the request after it, or why it cannot be."""
    with store.transaction() as conn:
        rec = _fetch(conn, request_id)
        if rec is None:
            raise QueueError(f"no request {request_id[:40]!r}; see `intima requests`")
        move = decide(rec)
        if move is None:
            raise QueueError(refused(rec))
        _apply(conn, rec, move)
        new = _fetch(conn, request_id)
    assert new is not None
    return new


def _change(
    store: Store,
    request_id: str,
    decide: Callable[[RequestRecord], Move | None],
    run_ids: list[str] | None = None,
) -> bool:
    """Apply what ``decide`` makes of the request as it is; False if it made no change."""
    with store.transaction() as conn:
        rec = _fetch(conn, request_id)
        move = None if rec is None else decide(rec)
        return rec is not None and move is not None and _apply(conn, rec, move, run_ids)


def _apply(
    conn: sqlite3.Connection, rec: RequestRecord, move: Move, run_ids: list[str] | None = None
) -> bool:
    """Store ``move`` if the request still is as ``rec`` read it (a compare-and-set: inside
    ``BEGIN IMMEDIATE`` it always is, and a change never lands on a state it was not decided
    on), with its event."""
    stamp = now()
    cur = conn.execute(
        "UPDATE requests SET status=?, worker_id=?, lease_expires=?, attempts=?, reason=?, "
        "run_ids=COALESCE(?, run_ids), updated_at=?, "
        "started_at=CASE WHEN ? THEN COALESCE(started_at, ?) ELSE started_at END, "
        "finished_at=CASE WHEN ? THEN ? ELSE finished_at END "
        "WHERE request_id=? AND status=? AND worker_id IS ? AND lease_expires IS ? "
        "AND attempts=?",
        (
            move.status,
            move.worker_id,
            move.lease_expires,
            move.attempts,
            move.reason,
            None if run_ids is None else json.dumps(run_ids),
            stamp,
            move.starts,
            stamp,
            move.finishes,
            stamp,
            rec.request_id,
            rec.status,
            rec.worker_id,
            rec.lease_expires,
            rec.attempts,
        ),
    )
    if cur.rowcount == 1 and move.event:
        _event(conn, rec.request_id, move.status, move.by, move.detail)
    return cur.rowcount == 1


def _fetch(conn: sqlite3.Connection, request_id: str) -> RequestRecord | None:
    row = conn.execute("SELECT * FROM requests WHERE request_id = ?", (request_id,)).fetchone()
    return None if row is None else _record(row)


class RequestQueue(Protocol):
    """What a worker needs of a queue: the local SQLite one (:class:`LocalQueue`) or the Hub's
    (:class:`intima.service.hub_queue.HubQueue`). Every method is safe to call from any thread.

    ``public``: anyone with a write token can add to it, so its requests are held to the public
    form's rules where they are run (:mod:`intima.service.request_policy`)."""

    public: bool

    def claim_next(
        self,
        worker_id: str,
        lease_s: float = ...,
        *,
        max_attempts: int = ...,
        skip: Collection[str] = ...,
    ) -> RequestRecord | None: ...
    def heartbeat(self, request_id: str, worker_id: str, lease_s: float = ...) -> bool: ...
    def finish(
        self, request_id: str, worker_id: str, run_ids: list[str], results: Sequence[str] = ...
    ) -> bool: ...
    def fail(self, request_id: str, worker_id: str, reason: str) -> bool: ...
    def release(self, request_id: str, worker_id: str, detail: str = ...) -> bool: ...
    def status(self, request_id: str) -> Status | None:
        """The request's status now (None: no such request); why a renewal was refused."""
        ...

    def idle(self) -> bool: ...


class LocalQueue:
    """The queue in a store's ``requests`` table; a connection per call, so any thread may
    call (a Store is per thread). Where results were published is not recorded locally.
    Only the operator writes this queue (``intima request``), so its requests may name servers.
    """

    public = False

    def __init__(self, store_path: Path | str, *, clock: Clock = time.time) -> None:
        self.store_path = store_path
        self.clock = clock

    def claim_next(
        self,
        worker_id: str,
        lease_s: float = DEFAULT_LEASE_S,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        skip: Collection[str] = (),
    ) -> RequestRecord | None:
        with Store.open(self.store_path) as store:
            return claim_next(
                store, worker_id, lease_s, max_attempts=max_attempts, clock=self.clock, skip=skip
            )

    def heartbeat(self, request_id: str, worker_id: str, lease_s: float = DEFAULT_LEASE_S) -> bool:
        with Store.open(self.store_path) as store:
            return heartbeat(store, request_id, worker_id, lease_s, clock=self.clock)

    def finish(
        self, request_id: str, worker_id: str, run_ids: list[str], results: Sequence[str] = ()
    ) -> bool:
        with Store.open(self.store_path) as store:
            return finish(store, request_id, worker_id, run_ids)

    def fail(self, request_id: str, worker_id: str, reason: str) -> bool:
        with Store.open(self.store_path) as store:
            return fail(store, request_id, worker_id, reason)

    def release(self, request_id: str, worker_id: str, detail: str = "released") -> bool:
        with Store.open(self.store_path) as store:
            return release(store, request_id, worker_id, detail)

    def cancel(self, request_id: str, by: str | None = None) -> RequestRecord:
        with Store.open(self.store_path) as store:
            return cancel(store, request_id, by)

    def reopen(self, request_id: str, by: str | None = None) -> RequestRecord:
        with Store.open(self.store_path) as store:
            return reopen(store, request_id, by)

    def status(self, request_id: str) -> Status | None:
        with Store.open(self.store_path) as store:
            rows = store.query("SELECT status FROM requests WHERE request_id = ?", (request_id,))
        return rows[0][0] if rows else None

    def idle(self) -> bool:
        with Store.open(self.store_path) as store:
            return not any(r.status in ("pending", "running") for r in list_requests(store))


def redact(text: str) -> str:
    """Blank out the values of secret-looking environment variables (keys, tokens, passwords),
    and lone surrogates (a reason quoting undecodable text), which no store or file can hold."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    for name, value in os.environ.items():
        if len(value) >= 8 and _SECRET_NAME.search(name) and value in text:
            text = text.replace(value, f"<{name}>")
    return text


def _event(
    conn: sqlite3.Connection,
    request_id: str,
    status: str,
    worker_id: str | None,
    detail: str | None,
) -> None:
    conn.execute(
        "INSERT INTO request_events VALUES (?,?,?,?,?)",
        (request_id, now(), status, worker_id, detail),
    )


def _record(row: sqlite3.Row) -> RequestRecord:
    d = dict(row)
    d["config"] = ModelConfig.model_validate_json(d.pop("config_json"))
    d["run_ids"] = json.loads(d["run_ids"])
    d.pop("dedup_key")
    return RequestRecord.model_validate(d)
