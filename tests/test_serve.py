"""`intima serve`: llama-cpp-python's server on the bundled model, usable at once by `run`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import free_port, run_cli
from intima.store import Store

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stop_with", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_serve_prints_a_spec_that_run_can_use_and_stops_cleanly(
    tmp_path: Path, stop_with: signal.Signals
) -> None:
    port = free_port()
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "intima", "serve", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # blocks until the server answers (or the command ends)
        assert first.startswith("serving smollm2 at http://127.0.0.1:"), first
        spec_line = proc.stdout.readline().strip()
        spec = spec_line.split("--model ")[1].split(" ")[0]
        assert spec == f"openai-compat:smollm2@http://127.0.0.1:{port}/v1"
        if stop_with == signal.SIGINT:
            res = run_cli("run", "--model", spec, "--dataset", "demo", "--limit", "1",
                          "--max-tokens", "8", "--store", str(tmp_path / "s.db"))  # fmt: skip
            assert res.returncode == 0, res.stderr
            with Store.open(tmp_path / "s.db") as store:
                assert store.query("SELECT COUNT(*) FROM responses WHERE status='ok'")[0][0] == 1
    finally:
        proc.send_signal(stop_with)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()  # never leave intima serve (and its model server) running
            proc.communicate()
            raise
    # SIGTERM used to end intima at once and leave its model server answering on the port.
    assert proc.returncode == 130 and "Stopped the server." in err
    assert "resume" not in err and "Traceback" not in err  # a server has nothing to resume
    # The model server went with it.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
        except httpx.HTTPError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the model server kept running after intima serve stopped")


def test_serve_refuses_a_missing_gguf_in_one_line() -> None:
    res = run_cli("serve", "--model", "/nonexistent/model.gguf", "--port", str(free_port()))
    assert res.returncode == 2 and "no such GGUF file" in res.stderr
    assert "Traceback" not in res.stderr
