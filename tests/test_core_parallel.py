"""intima.core.parallel: jobs in forked processes (in a fresh single-threaded interpreter, as a
command runs) and in threads (whenever another thread exists), with the same results and errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from intima.core.errors import IntimaError
from intima.core.parallel import Jobs, can_fork

SRC = Path(__file__).resolve().parents[1] / "src"


def square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def refuse(what: str) -> None:
    raise IntimaError(f"no {what} here")


def unpicklable() -> object:
    return threading.Lock()


def test_with_another_thread_jobs_run_in_threads_with_the_same_results(other_thread: None) -> None:
    assert not can_fork()
    with Jobs() as jobs:
        assert not jobs.forking
        job = jobs.start("squaring", square_and_pid, 7)
        assert job.result() == (49, os.getpid())  # in this process


def test_a_threaded_jobs_error_is_raised_as_itself(other_thread: None) -> None:
    with Jobs() as jobs, pytest.raises(IntimaError, match="no judges here"):
        jobs.start("refusing", refuse, "judges").result()


# Forking is tried in a fresh interpreter (one thread, as `intima board build` runs): a test
# process may hold threads of other tests, and then Jobs rightly never forks.
_SCENARIOS = """
import json, os, signal, sys, threading
sys.path.insert(0, {tests!r})
from intima.core.parallel import Jobs, JobFailed, RemoteTraceback
import test_core_parallel as t

out = {{}}
with Jobs() as jobs:
    out["forking"] = jobs.forking
    value, pid = jobs.start("squaring", t.square_and_pid, 9).result()
    out["value"], out["other_pid"] = value, pid != os.getpid()
    try:
        jobs.start("refusing", t.refuse, "judges").result()
    except Exception as e:
        out["error"] = [type(e).__name__, str(e), isinstance(e.__cause__, RemoteTraceback),
                        "refuse" in str(e.__cause__)]
    try:
        jobs.start("dying", os._exit, 7).result()
    except JobFailed as e:
        out["died"] = str(e)
    try:
        jobs.start("locking", t.unpicklable).result()
    except JobFailed as e:
        out["unpicklable"] = str(e)
try:
    with Jobs() as jobs:
        waiting = jobs.start("waiting", signal.pause)
        raise KeyboardInterrupt
except KeyboardInterrupt:
    out["stopped"] = waiting._process.exitcode
print(json.dumps(out))
"""


def test_in_a_single_threaded_process_jobs_fork_and_bring_back_results_and_errors() -> None:
    tests = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), tests])}
    done = subprocess.run(
        [sys.executable, "-c", _SCENARIOS.format(tests=tests)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    out = json.loads(done.stdout)
    assert out["forking"] is True
    assert out["value"] == 81 and out["other_pid"] is True
    # The job's own exception, its traceback from the child attached as the cause.
    assert out["error"] == ["IntimaError", "no judges here", True, True]
    assert "dying" in out["died"] and "exit code 7" in out["died"]
    assert "locking" in out["unpicklable"] and "could not be sent back" in out["unpicklable"]
    # A build that fails while a job runs ends the job (SIGKILL), not leaves it behind.
    assert out["stopped"] == -signal.SIGKILL
