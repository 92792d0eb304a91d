"""Runs one model server in a process group of its own and takes the whole group down when told
to stop, when the server ends, or when the worker that started it dies, even by ``kill -9``.

``python server_guard.py WORKER_PID PROGRAM ARGS...`` is how :class:`ServedModel` starts a
server: the guard leads a new session, so the server and everything it starts (vLLM's and
SGLang's GPU workers, which hold GPU memory) share the guard's process group and one ``killpg``
reaches them all. A worker killed with SIGKILL runs no cleanup, so the guard asks the kernel for
SIGTERM when its parent dies (Linux ``PR_SET_PDEATHSIG``) and also looks at its parent once a
second (every other system). On SIGTERM it stops the group: SIGTERM, a grace period, SIGKILL.

Standard library only, and run by path: it starts before, and without, the rest of intima.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from types import FrameType

#: Seconds the server has to exit after SIGTERM before its whole group is killed.
GRACE_S = 20.0
#: ``prctl`` option: the signal this process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask for SIGTERM when the parent dies (Linux); elsewhere :func:`_watch_parent` notices."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _kill_group() -> None:
    os.killpg(0, signal.SIGKILL)  # whatever is left, the guard with it


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str]) -> int:
    parent, command = int(argv[0]), argv[1:]
    die_with_parent()
    if os.getppid() != parent:
        return 1  # the worker died before the guard was set up: start nothing
    try:
        # The server too dies with its guard, should the guard itself be killed.
        server = subprocess.Popen(command, preexec_fn=die_with_parent)  # noqa: S603
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return 127

    stopping = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        # No waiting here: the main thread is inside server.wait(), which holds its lock.
        if stopping.is_set():
            return
        stopping.set()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's SIGTERM reaches us too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(0, signal.SIGTERM)
        threading.Timer(GRACE_S, _kill_group).start()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    code = server.wait()
    if stopping.is_set():
        _kill_group()  # the server is down; what it started goes now, not after the grace
    # The server ended by itself: its children must not outlive it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(0, signal.SIGTERM)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
