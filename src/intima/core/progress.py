"""Progress as events: the library reports, whoever calls it decides how to show it.

The CLI renders events with rich (``intima.cli._common.progress_display``); a notebook may pass
any callable, or nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """``done`` of ``total`` items of one task (a run, a judge, a scoring pass)."""

    task: str
    done: int
    total: int
    elapsed_s: float

    @property
    def rate(self) -> float | None:
        """Items per second, None before the first item."""
        return self.done / self.elapsed_s if self.done and self.elapsed_s > 0 else None


OnProgress = Callable[[ProgressEvent], None]


class Ticker:
    """Counts one task's items and reports each step to ``on_progress`` (if any)."""

    def __init__(self, task: str, total: int, on_progress: OnProgress | None) -> None:
        self.task, self.total, self.done = task, total, 0
        self._on_progress = on_progress
        self._started = time.perf_counter()
        self._emit()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._emit()

    def set(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        self._emit()

    def _emit(self) -> None:
        if self._on_progress is not None:
            elapsed = time.perf_counter() - self._started
            self._on_progress(ProgressEvent(self.task, self.done, self.total, elapsed))
