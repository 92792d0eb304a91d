"""The lease a worker holds on its request, renewed from a thread while it works."""

from __future__ import annotations

import threading

from intima.core.errors import IntimaError
from intima.service.queue import RequestQueue


class Heartbeat:
    """Renews the lease from a thread (the queue opens its own connection per call)."""

    def __init__(
        self, queue: RequestQueue, request_id: str, worker_id: str, lease_s: float
    ) -> None:
        self._args = (queue, request_id, worker_id, lease_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="intima-heartbeat")
        self.lost = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        queue, request_id, worker_id, lease_s = self._args
        while not self._stop.wait(lease_s / 3):
            try:
                held = queue.heartbeat(request_id, worker_id, lease_s)
            except IntimaError:
                continue  # the Hub may be briefly out of reach; the lease has time left
            if not held:
                self.lost = True
                return
