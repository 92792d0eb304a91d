"""Claimed work: the one loop generation, judging and conversations run their items through.

``run_claimed`` claims the items a pool's worth at a time (so two processes given the same
command share them and never ask twice), works on them in a bounded pool, hands each result to
one grouped writer, and in every ending (done, out of budget, Ctrl-C, a fatal error, a store
that refuses writes) writes what finished, lets go of its claims and records how it ended.
What differs between the runners (what an item is, how it is claimed, worked on and stored,
what a run's status becomes) comes in a :class:`ClaimedJob`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from intima.core.config import ModelConfig
from intima.core.errors import StoreError
from intima.core.spending import Budget
from intima.generate.pool import MAX_RETRY_AFTER_S, GroupWriter, PoolStats, run_pool
from intima.store import ClaimState, RunStatus, claim_owner

T = TypeVar("T")
R = TypeVar("R")

#: How the work ended: every item done or done elsewhere (as far as this process could),
#: stopped by ``--max-cost``, interrupted (Ctrl-C, cancelled), or failed (an error, or a
#: write the store refused).
Ending = Literal["done", "stopped by budget", "interrupted", "failed"]


def _nothing(*_: object) -> None:
    return None


@dataclass
class ClaimedJob(Generic[T, R]):
    """What one runner brings to :func:`run_claimed`."""

    #: claim these items for ``owner`` (this call's fresh owner id): each claimed, done, busy
    claim: Callable[[Sequence[T], str], Sequence[ClaimState]]
    #: let go of every claim ``owner`` holds
    release: Callable[[str], None]
    work: Callable[[T], Awaitable[R]]
    #: store a group of results in one transaction; None when ``work`` stores its own
    write: Callable[[list[R]], None] | None = None
    #: each result, once handed to the writer (a tally, a progress tick)
    on_result: Callable[[R], None] = _nothing
    #: an item another process stored
    on_done_elsewhere: Callable[[], None] = _nothing
    #: after the last write and the release: record how it ended (a run's status)
    end: Callable[[Ending], None] = _nothing


async def run_claimed(
    items: Sequence[T],
    job: ClaimedJob[T, R],
    *,
    concurrency: int,
    budget: Budget | None = None,
    worst_cost: Callable[[T], float] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Ending:
    """Run ``job`` over the ``items`` this process manages to claim; how it ended. An error
    (a fatal provider error, a refused write, Ctrl-C) propagates after the cleanup. ``stop``:
    asked before each item starts (see :func:`~intima.generate.pool.run_pool`); the work then
    ends as interrupted, what finished stored."""
    owner = claim_owner()
    writer = None if job.write is None else GroupWriter(job.write)
    ending: Ending = "failed"

    def done(result: R) -> None:
        if writer is not None:
            writer.add(result)  # raises once a write failed: asking for more only costs money
        job.on_result(result)

    try:
        stats = await run_claimed_pool(
            items,
            lambda part: job.claim(part, owner),
            job.work,
            concurrency=concurrency,
            on_result=done,
            on_done_elsewhere=job.on_done_elsewhere,
            budget=budget,
            worst_cost=worst_cost,
            stop=stop,
        )
        ending = (
            "stopped by budget"
            if stats.stopped_by_budget
            else "interrupted"
            if stats.halted
            else "done"
        )
    except (KeyboardInterrupt, asyncio.CancelledError):
        ending = "interrupted"
        raise
    finally:
        try:
            if writer is not None:
                writer.flush()  # what finished is stored before its claim goes
        finally:
            if writer is not None and writer.failed is not None:
                ending = "failed"
            _close(job, owner, ending)
    return ending


def run_status(ending: Ending, finished: Callable[[], bool]) -> RunStatus:
    """The status a run records for how its work ended; ``finished`` says whether every item
    is stored for good (asked only when the work is done)."""
    if ending == "stopped by budget":
        return "stopped (max cost)"
    if ending != "done":
        return ending
    return "complete" if finished() else "incomplete"


def _close(job: ClaimedJob[T, R], owner: str, ending: Ending) -> None:
    """Let go of the claims and record the ending. When the store refuses writes (a full disk)
    and the work already failed, that failure is what to report, and releasing is itself a
    write that may fail the same way: the next run takes over a dead process's claims on this
    host at once."""
    try:
        job.release(owner)
        job.end(ending)
    except StoreError:
        if ending not in ("failed", "interrupted"):
            raise


#: How often a process looks again at work another process holds.
CLAIM_POLL_S = 0.2


def claim_lease_s(config: ModelConfig, asks: int = 1) -> float:
    """The longest ``asks`` requests with all their retries can take: a claim outliving it is
    stale."""
    per_wait = max(config.max_backoff_s, MAX_RETRY_AFTER_S)
    one = config.timeout_s * (config.max_retries + 1) + per_wait * config.max_retries
    return one * max(1, asks) + 60.0


async def run_claimed_pool(
    items: Sequence[T],
    claim: Callable[[Sequence[T]], Sequence[ClaimState]],
    work: Callable[[T], Awaitable[R]],
    *,
    concurrency: int,
    on_result: Callable[[R], None],
    on_done_elsewhere: Callable[[], None],
    budget: Budget | None = None,
    worst_cost: Callable[[T], float] | None = None,
    stop: Callable[[], bool] | None = None,
) -> PoolStats:
    """``run_pool`` over the items this process manages to claim.

    Several processes given the same items share the work: each item is worked on by whichever
    claims it first. Items another live process holds are looked at again until that process
    stores them (they count as done) or lets go of them (then they are claimed here).
    Returns the last pass's stats: whether the budget, or ``stop``, ended the work.
    """
    busy: list[T] = []
    # Claims are taken a pool's worth at a time: one transaction per chunk keeps the cost
    # per item small, and a process never holds more unstarted items than it runs at once.
    chunk = max(1, min(concurrency, 64))

    def claimed(todo: Sequence[T]) -> Iterator[T]:
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            for item, state in zip(part, claim(part), strict=True):
                if state == "claimed":
                    yield item
                elif state == "busy":
                    busy.append(item)
                else:
                    on_done_elsewhere()

    def pool(todo: Sequence[T]) -> Awaitable[PoolStats]:
        return run_pool(
            claimed(todo),
            work,
            concurrency=concurrency,
            on_result=on_result,
            budget=budget,
            worst_cost=worst_cost,
            stop=stop,
        )

    stats = await pool(items)
    while busy and not (stats.stopped_by_budget or stats.halted):
        waiting, busy[:] = list(busy), []
        await asyncio.sleep(CLAIM_POLL_S)
        stats = await pool(waiting)
    return stats
