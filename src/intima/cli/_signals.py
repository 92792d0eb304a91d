"""SIGTERM (systemd, docker stop, kill) handled like Ctrl-C, so cleanup code runs."""

from __future__ import annotations

import signal


def stop_cleanly_on_sigterm() -> None:
    """Raise KeyboardInterrupt on SIGTERM: ``finally`` blocks run (a worker releases its
    request, ``serve`` stops its model server) instead of the process dying mid-way."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
