"""The worker between requests: claiming the next one (waiting out an empty or unreachable
queue, passing over the requests it gave back), then tallying what became of it and deciding
whether to wait, go on or stop. What happens to one claimed request is
:func:`intima.service.worker.work`'s."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel

from intima.service.backoff import MAX_WAIT_S, Backoff, QueueOutage
from intima.service.queue import QueueUnavailable, RequestQueue, RequestRecord
from intima.service.stages import OnMessage, say
from intima.service.worker_settings import WorkerSettings

#: Requests released in a row for the worker's own failure after which a draining worker stops.
FAULTS_IN_A_ROW = 3


class WorkSummary(BaseModel):
    worker_id: str
    claimed: int = 0
    finished: int = 0
    failed: int = 0
    lost: int = 0  # leases taken over by another worker while this one was still working
    #: cancelled in the queue while this worker ran them (stopped, nothing published)
    cancelled: int = 0
    #: given back to the queue for the worker's own failure (not the request's)
    released: int = 0
    #: Why requests were released: reason -> count.
    released_reasons: dict[str, int] = {}
    #: run on the first ``limit`` prompts only, then given back (never finished, never published)
    smoke_tested: int = 0
    #: Why the worker stopped before the queue was done (its --max-cost), if it did.
    stopped: str | None = None
    #: Why requests failed: reason -> count.
    failed_reasons: dict[str, int] = {}
    #: Judgments left unscored in requests that finished: reason -> count.
    unscored_reasons: dict[str, int] = {}

    @property
    def unscored(self) -> int:
        return sum(self.unscored_reasons.values())


class Claims:
    """One worker's claims on the queue, one request at a time: :meth:`next` claims,
    :meth:`settle` records the outcome and says whether the worker goes on."""

    def __init__(
        self,
        settings: WorkerSettings,
        source: RequestQueue,
        summary: WorkSummary,
        clock: Callable[[], float],
        pause: Callable[[float], None],
        on_message: OnMessage | None,
    ) -> None:
        self.s, self.source, self.summary = settings, source, summary
        self.clock, self.pause, self.on_message = clock, pause, on_message
        self.counts = _Counts(summary)
        give_up = settings.give_up_s if settings.drain else None
        self.outage = QueueOutage(
            settings.poll_s, give_up, clock, pause, lambda text: say(on_message, text)
        )
        self.faults = Backoff(settings.poll_s)
        #: requests this worker gave back for its own failure -> until when it leaves them alone
        self.passed: dict[str, float] = {}

    def next(self) -> RequestRecord | None:
        """The next request, claimed; None when the worker is done (``once``, or draining and
        nothing it may take is left). A queue out of reach is waited out (``once``: raised)."""
        s = self.s
        while True:
            skip = _still_passed(self.passed, self.clock) if self.passed else ()
            try:
                req = self.source.claim_next(
                    self.summary.worker_id, s.lease_s, max_attempts=s.max_attempts, skip=skip
                )
            except QueueUnavailable as exc:
                if s.once:
                    raise
                self.outage.failed(exc)
                continue
            self.outage.answered()
            if req is not None:
                self.summary.claimed += 1
                say(self.on_message, f"{req.request_id}: {req.spec} (attempt {req.attempts})")
                return req
            # A draining worker that passed requests over ends when nothing else is left.
            if s.once or (s.drain and (skip or self.source.idle())):
                return None
            self.pause(s.poll_s)

    def settle(self, req: RequestRecord, outcome: str, reasons: Counter[str]) -> bool:
        """Count the request's outcome; after this worker's own failure, pass the request over
        and wait longer each time in a row. False when the worker stops here."""
        s = self.s
        self.counts.add(outcome, reasons)
        if outcome == "released":
            self.passed[req.request_id] = (
                math.inf if (s.drain or s.once) else self.clock() + MAX_WAIT_S
            )
            if s.drain and self.faults.failures + 1 >= FAULTS_IN_A_ROW:
                self.summary.stopped = (
                    f"{FAULTS_IN_A_ROW} requests in a row released for this worker's own "
                    f"failure (the last: {next(iter(reasons))}); they wait in the queue"
                )
                return False
            if not s.once:
                wait = self.faults.next_wait()
                say(self.on_message, f"waiting {wait:g} s before the next claim")
                self.pause(wait)
        elif outcome not in ("lost", "cancelled"):
            self.faults.reset()
        if outcome == "smoke_tested":
            self.passed[req.request_id] = math.inf  # tried once; it waits for a full run
        return not s.once


class _Counts:
    """Adds each request's outcome and reasons up into the summary as they come."""

    def __init__(self, summary: WorkSummary) -> None:
        self.summary = summary
        self.reasons: dict[str, Counter[str]] = {
            "failed": Counter(),
            "finished": Counter(),
            "released": Counter(),
        }

    def add(self, outcome: str, reasons: Counter[str]) -> None:
        summary = self.summary
        setattr(summary, outcome, getattr(summary, outcome) + 1)
        if outcome in self.reasons:
            self.reasons[outcome].update(reasons)
        summary.failed_reasons = dict(self.reasons["failed"])
        summary.unscored_reasons = dict(self.reasons["finished"])  # unscored in finished ones
        if self.reasons["released"]:
            summary.released_reasons = dict(self.reasons["released"])


def _still_passed(passed: dict[str, float], clock: Callable[[], float]) -> set[str]:
    """The requests this worker still leaves alone (their time is up: forget them)."""
    now = clock()
    for request_id in [r for r, until in passed.items() if until <= now]:
        del passed[request_id]
    return set(passed)
