"""The lease a worker holds on its request, renewed from a thread while it works.

A renewal the queue refuses means the request is no longer this worker's: a maintainer
cancelled it, or its lease ran out and another worker took it over. The heartbeat then asks
the queue which, and says so (:attr:`Heartbeat.gone`); the stages stop starting work
(:meth:`Heartbeat.is_gone` is their ``stop``) and the worker publishes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Literal

from intima.core.errors import IntimaError
from intima.service.queue import RequestQueue

#: Why a worker no longer holds its request.
Gone = Literal["cancelled", "lost"]


class Heartbeat:
    """Renews the lease from a thread (the queue opens its own connection per call)."""

    def __init__(
        self,
        queue: RequestQueue,
        request_id: str,
        worker_id: str,
        lease_s: float,
        on_gone: Callable[[Gone], None] | None = None,
    ) -> None:
        self._args = (queue, request_id, worker_id, lease_s)
        #: told once, as soon as the request is found gone (from the heartbeat's thread)
        self._on_gone = on_gone
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="intima-heartbeat")
        self._lock = threading.Lock()
        #: None while the lease is held; else why it is not
        self.gone: Gone | None = None

    def is_gone(self) -> bool:
        """The stages' ``stop``: True once the request is no longer this worker's."""
        return self.gone is not None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def held(self) -> bool:
        """Renew the lease now (before publishing: a cancel since the last beat counts)."""
        if self.gone is None:
            self._beat()
        return self.gone is None

    def _run(self) -> None:
        lease_s = self._args[3]
        while not self._stop.wait(lease_s / 3):
            if not self._beat():
                return

    def _beat(self) -> bool:
        """One renewal; False once the lease is gone (:attr:`gone` says why)."""
        queue, request_id, worker_id, lease_s = self._args
        with self._lock:  # the thread and held() never renew at once
            if self.gone is not None:
                return False
            try:
                if queue.heartbeat(request_id, worker_id, lease_s):
                    return True
            except IntimaError:
                return True  # the Hub may be briefly out of reach; the lease has time left
            self.gone = why_gone(queue, request_id)
        if self._on_gone is not None:
            self._on_gone(self.gone)
        return False


def why_gone(queue: RequestQueue, request_id: str) -> Gone:
    """Why the queue refused a worker's renewal (or its finish): cancelled when the request's
    status says so; otherwise another worker took the lease over."""
    try:
        status = queue.status(request_id)
    except IntimaError:
        return "lost"
    return "cancelled" if status == "cancelled" else "lost"
