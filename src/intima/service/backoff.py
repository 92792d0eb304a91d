"""Waiting longer after each failure in a row, and saying so once per change.

A worker whose queue is out of reach, or whose own setup keeps failing requests, waits its
``--poll`` seconds, then twice that, and so on up to :data:`MAX_WAIT_S`; it reports a failure
when it starts or changes, not at every attempt (it printed the same line every 2 s).
:class:`QueueOutage` applies that to a queue out of reach, and gives up when a draining worker
has waited long enough.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from intima.service.queue import QueueUnavailable

#: The longest wait between two attempts.
MAX_WAIT_S = 60.0


@dataclass
class Backoff:
    """``next_wait()`` after each failure in a row; ``reset()`` after a success."""

    base_s: float
    cap_s: float = MAX_WAIT_S
    failures: int = 0
    #: The last failure reported, so the same one is not reported again.
    said: str | None = None

    def next_wait(self) -> float:
        cap = max(self.cap_s, self.base_s)  # a --poll above the cap is honoured as it is
        wait = min(cap, self.base_s * 2.0 ** min(self.failures, 60))
        self.failures += 1
        return wait

    def news(self, reason: str) -> bool:
        """Whether ``reason`` differs from the last one reported (and remember it)."""
        new, self.said = reason != self.said, reason
        return new

    def reset(self) -> bool:
        """Back to the first wait; True if there had been failures."""
        had, self.failures, self.said = self.failures > 0, 0, None
        return had


@dataclass
class QueueOutage:
    """A queue out of reach: ``failed()`` after each try that could not read it waits (the
    :class:`Backoff` from ``poll_s``) and says so when the failure starts or changes;
    ``answered()`` after a read that worked. With ``give_up_s`` (a draining worker), it raises
    once the queue has been out of reach that long in a row: an unreachable queue cannot be
    known empty, and a draining worker must end."""

    poll_s: float
    give_up_s: float | None
    clock: Callable[[], float]
    pause: Callable[[float], None]
    say: Callable[[str], None]
    since: float | None = None

    def __post_init__(self) -> None:
        self.backoff = Backoff(self.poll_s)

    def failed(self, exc: QueueUnavailable) -> None:
        at = self.clock()
        self.since = at if self.since is None else self.since
        waited = at - self.since
        if self.give_up_s is not None and waited >= self.give_up_s:
            raise QueueUnavailable(
                f"{exc}; stopped after {waited:.0f} s without reaching the queue "
                f"(--give-up-after {self.give_up_s:g}); nothing was claimed meanwhile"
            ) from exc
        # A queue on the Hub can be out of reach for a while; keep the worker alive, asking
        # less often the longer it lasts, and saying so once, not every try.
        wait = self.backoff.next_wait()
        if self.give_up_s is not None:
            wait = min(wait, max(self.give_up_s - waited, self.poll_s))
        if self.backoff.news(str(exc)):
            then = f"then less often (at most every {MAX_WAIT_S:g} s) while it lasts"
            self.say(f"{exc}; trying again in {wait:g} s, {then}")
        self.pause(wait)

    def answered(self) -> None:
        self.since = None
        if self.backoff.reset():
            self.say("the queue answers again")
