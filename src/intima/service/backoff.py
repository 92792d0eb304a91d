"""Waiting longer after each failure in a row, and saying so once per change.

A worker whose queue is out of reach, or whose own setup keeps failing requests, waits its
``--poll`` seconds, then twice that, and so on up to :data:`MAX_WAIT_S`; it reports a failure
when it starts or changes, not at every attempt (it printed the same line every 2 s).
"""

from __future__ import annotations

from dataclasses import dataclass

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
