"""Run Python code in a child process and return its JSON result and its own peak memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def run_child(code: str) -> dict[str, Any]:
    """``os.wait4`` gives this child's own rusage (RUSAGE_CHILDREN would mix every child)."""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed with exit code {proc.returncode}")
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    result["peak_mb"] = usage.ru_maxrss / 1024
    return result
