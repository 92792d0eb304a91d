"""Independent jobs of one build, side by side: in forked processes where that is safe, else in
threads.

Threads share one GIL: a board's pairs (numpy) and its fragments (pure Python) slowed each
other down when run side by side in one process. A forked child sees the parent's objects as
they were at the fork, without pickling them, and runs on its own core; only its small result
comes back, pickled through a pipe. Forking is safe only from a process with no other thread
(a lock another thread held at the fork stays held forever in the child), so a
:class:`Jobs` decides once, when it is made: forked processes if the platform forks and this
is the only thread, else a thread pool. Jobs must not depend on each other's side effects in
memory: a forked job's changes to objects stay in its process (files it writes are shared).
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, Generic, TypeVar

from intima.core.errors import IntimaError

T = TypeVar("T")


class JobFailed(IntimaError):
    """A forked job ended without a result (killed, or its result could not be sent back)."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a forked job, as its ``__cause__``."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def can_fork() -> bool:
    """Whether a job may run in a forked child here: the platform forks and no other thread
    exists (see the module docstring)."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


class Job(Generic[T]):
    """One started job; :meth:`result` waits for it and returns its value or raises its error."""

    def __init__(
        self,
        name: str,
        future: Future[T] | None = None,
        process: tuple[BaseProcess, Connection] | None = None,
    ) -> None:
        """``future``: the job in a thread; ``process``: in a forked child, with the end of the
        pipe its result comes through."""
        self.name = name
        self._future = future
        self._process: BaseProcess | None = process[0] if process else None
        self._pipe: Connection | None = process[1] if process else None

    def result(self) -> T:
        if self._future is not None:
            return self._future.result()
        assert self._process is not None and self._pipe is not None
        try:
            status, value = self._pipe.recv()
        except EOFError:  # the child ended without sending: killed, or out of memory
            self._process.join()
            raise JobFailed(
                f"{self.name}: its worker process ended (exit code {self._process.exitcode}) "
                "without a result; run again, and if it recurs, report it with this line"
            ) from None
        finally:
            self._pipe.close()
        self._process.join()
        if status == "error":
            error, text = value
            raise error from RemoteTraceback(text)
        if status == "unsendable":
            raise JobFailed(f"{self.name}: its result could not be sent back ({value})")
        return value

    def stop(self) -> None:
        """End the job's process if it still runs (the build failed or was interrupted): its
        work is abandoned, so SIGKILL, not the SIGTERM a command takes as Ctrl-C."""
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join()


class Jobs:
    """Start jobs with :meth:`start`; use as a context manager, so that a failed or interrupted
    build ends every job it started. ``threads``: the pool's size when jobs cannot fork."""

    def __init__(self, threads: int = 2) -> None:
        self.forking = can_fork()
        self._pool = None if self.forking else ThreadPoolExecutor(max_workers=threads)
        self._jobs: list[Job[Any]] = []

    def start(self, name: str, fn: Callable[..., T], *args: Any) -> Job[T]:
        """Run ``fn(*args)`` beside the caller; ``name`` says what it does in an error."""
        if self._pool is not None:
            job = Job(name, self._pool.submit(fn, *args))
        else:
            job = self._fork(name, fn, args)
        self._jobs.append(job)
        return job

    def _fork(self, name: str, fn: Callable[..., T], args: tuple[Any, ...]) -> Job[T]:
        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)
        # Text still buffered here would be written again by the child as it exits.
        sys.stdout.flush()
        sys.stderr.flush()
        process = ctx.Process(target=_run_child, args=(fn, args, send), name=name, daemon=True)
        process.start()
        send.close()  # the child's end: closed here, so a dead child reads as EOF
        return Job(name, process=(process, recv))

    def __enter__(self) -> Jobs:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for job in self._jobs:
            job.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _run_child(fn: Callable[..., Any], args: tuple[Any, ...], send: Connection) -> None:
    """In the forked child: run the job and send ("ok", value), ("error", (exc, traceback)) or,
    when that cannot be pickled, ("unsendable", why)."""
    try:
        message: tuple[str, Any] = ("ok", fn(*args))
    except BaseException as exc:  # every failure, Ctrl-C included, goes back to the parent
        message = ("error", (exc, traceback.format_exc()))
    try:
        send.send(message)
    except Exception as exc:  # an unpicklable value or error: say which
        send.send(("unsendable", f"{type(exc).__name__}: {exc}"))
    finally:
        send.close()
