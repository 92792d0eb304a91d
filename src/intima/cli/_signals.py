"""SIGTERM (systemd, docker stop, kill, a CI runner's timeout) handled as Ctrl-C is."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def stop_cleanly_on_sigterm() -> None:
    """Treat SIGTERM as SIGINT: whatever handles Ctrl-C when it arrives handles it. Inside
    ``asyncio.run`` that is asyncio's handler, which cancels the work so that a run stores what
    finished and records itself ``interrupted``; elsewhere ``KeyboardInterrupt``. Either way
    ``finally`` blocks run (a worker releases its request, ``serve`` stops its model server) and
    the command says "Interrupted" instead of dying silently mid-way. Only the main thread may
    set a handler: called from another thread (a notebook's), this changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        on_ctrl_c = signal.getsignal(signal.SIGINT)
        if callable(on_ctrl_c):
            on_ctrl_c(signal.SIGINT, frame)
        else:  # Ctrl-C ignored (a background job of a script): stop all the same
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
