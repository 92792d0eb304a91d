"""A request's lease state machine, written once for both queues.

Each function takes a request as it is now (its status, holder, lease, attempts) and returns
the :class:`Move` a change makes, or None when the change is not allowed (the caller then
writes nothing). It reads no clock and writes nothing: the local queue stores a move with one
guarded ``UPDATE`` inside ``BEGIN IMMEDIATE``, the Hub queue with one commit on the
``parent_commit`` it read, so the two cannot disagree on who may claim, renew or settle what.

``pending_review`` (waiting for a maintainer's approval) occurs only in the Hub queue, whose
requests can come from the public; ``cancelled`` in both.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

Status = Literal["pending", "running", "finished", "failed", "pending_review", "cancelled"]
#: Seconds since the epoch; leases are compared with it (tests pass a clock they move).
Clock = Callable[[], float]
#: The statuses a claim may take a request from (a running one only once its lease ran out).
CLAIMABLE: tuple[Status, ...] = ("pending", "running")
#: A duplicate of a request in one of these statuses puts it back in the queue. Never a
#: cancelled one: a maintainer's cancel stands until a maintainer reopens it (:func:`reopen`),
#: or one form post of the same model undid it.
REQUEUEABLE: tuple[Status, ...] = ("failed",)
#: What a maintainer's decision may move a request from: approve (to pending), cancel.
REVIEWABLE: dict[Status, tuple[Status, ...]] = {
    "pending": ("pending_review",),
    "cancelled": ("pending_review", "pending", "running"),
}
#: The longest lease a worker takes (``intima worker --lease`` allows up to a day). A lease
#: ending more than twice that after now was not written by a worker's clock (1e18, inf): it
#: is treated as run out, or the request would never be taken over.
MAX_LEASE_S = 86_400.0


class Leased(Protocol):
    """What the rules read of a request (a ``RequestRecord`` has it)."""

    @property
    def status(self) -> Status: ...
    @property
    def worker_id(self) -> str | None: ...
    @property
    def lease_expires(self) -> float | None: ...
    @property
    def attempts(self) -> int: ...
    @property
    def reason(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Move:
    """A request's lease fields after a change, and the event that records it."""

    status: Status
    worker_id: str | None
    lease_expires: float | None
    attempts: int
    reason: str | None
    #: who made the change and why, for the request's history (``event=False``: no entry)
    by: str | None
    detail: str | None
    event: bool = True
    #: set ``started_at`` if it is not set yet; set ``finished_at``
    starts: bool = False
    finishes: bool = False


def claimable(rec: Leased, at: float) -> bool:
    """Pending, or running on a lease that ran out before ``at`` (its worker stopped) or that
    no worker could have written (see :func:`lease_valid`)."""
    if rec.status == "pending":
        return True
    return rec.status == "running" and (
        not lease_valid(rec.lease_expires, at) or (rec.lease_expires or 0.0) < at
    )


def lease_valid(expires: float | None, at: float) -> bool:
    """Whether a lease's end is one a worker wrote: a finite time at most twice
    :data:`MAX_LEASE_S` after ``at``. NaN, inf and 1e18 (a hand-written request file) are not,
    and compare as never running out, which kept ``worker --drain`` waiting for ever."""
    return expires is not None and math.isfinite(expires) and expires <= at + 2 * MAX_LEASE_S


def holds(rec: Leased | None, worker_id: str) -> bool:
    """Whether ``worker_id`` holds the lease: only the holder renews, releases or settles.
    An expired lease is still held until another worker takes it over."""
    return rec is not None and rec.status == "running" and rec.worker_id == worker_id


def claim(rec: Leased, worker_id: str, at: float, lease_s: float, max_attempts: int) -> Move | None:
    """Take a claimable request for ``lease_s`` seconds; one whose workers kept stopping
    (``max_attempts`` claims without an outcome) is failed instead of handed out for ever."""
    if not claimable(rec, at):
        return None
    if rec.attempts >= max_attempts:
        reason = f"abandoned after {rec.attempts} attempts whose workers stopped"
        return Move("failed", None, None, rec.attempts, reason, worker_id, reason, finishes=True)
    detail = "claimed" if rec.status == "pending" else f"lease of {rec.worker_id} expired; resumed"
    return Move(
        "running",
        worker_id,
        at + lease_s,
        rec.attempts + 1,
        rec.reason,
        worker_id,
        detail,
        starts=True,
    )


def renew(rec: Leased, worker_id: str, at: float, lease_s: float) -> Move | None:
    """Extend the holder's lease (a heartbeat); it leaves no event."""
    if not holds(rec, worker_id):
        return None
    return Move(
        "running",
        worker_id,
        at + lease_s,
        rec.attempts,
        rec.reason,
        worker_id,
        None,
        event=False,
    )


def release(rec: Leased, worker_id: str, detail: str) -> Move | None:
    """The holder gives the request back at once (stopping cleanly): the claim is not counted
    as an attempt."""
    if not holds(rec, worker_id):
        return None
    return Move("pending", None, None, max(rec.attempts - 1, 0), rec.reason, worker_id, detail)


def settle(
    rec: Leased, worker_id: str, status: Literal["finished", "failed"], reason: str | None
) -> Move | None:
    """The holder records the outcome."""
    if not holds(rec, worker_id):
        return None
    return Move(status, worker_id, None, rec.attempts, reason, worker_id, reason, finishes=True)


def requeue(rec: Leased, first: Status) -> Move | None:
    """A failed or cancelled request asked for again starts afresh (None: it stays as it is)."""
    if rec.status not in REQUEUEABLE:
        return None
    return Move(first, None, None, 0, None, None, f"requested again after {rec.status}")


def review(rec: Leased, to: Literal["pending", "cancelled"], detail: str) -> Move | None:
    """A maintainer approves (``to="pending"``) or cancels; None if the status does not allow
    it (see :func:`refusal`)."""
    if rec.status not in REVIEWABLE[to]:
        return None
    return Move(to, None, None, rec.attempts, rec.reason, None, detail)


def reopen(rec: Leased, detail: str) -> Move | None:
    """A maintainer puts a cancelled request back in the queue, afresh; None if it is not
    cancelled."""
    if rec.status != "cancelled":
        return None
    return Move("pending", None, None, 0, None, None, detail)


def reopen_refusal(request_id: str, rec: Leased) -> str:
    """Why :func:`reopen` refused, in one line."""
    return f"request {request_id} is {rec.status}; only a cancelled request can be reopened"


def refusal(request_id: str, rec: Leased, to: Literal["pending", "cancelled"]) -> str:
    """Why :func:`review` refused, in one line."""
    verb = "approved" if to == "pending" else "cancelled"
    allowed = " or ".join(REVIEWABLE[to])
    return f"request {request_id} is {rec.status}; only a request that is {allowed} can be {verb}"
