"""Harness throughput and memory against a local OpenAI-compatible server with fixed latency.

Starts tests/fake_openai.py in its own process (answers after a fixed 200 ms), then runs
``intima run`` over the 368 INTIMA prompts in a child process at several concurrency levels,
reporting wall time, requests per second, the ratio to the limit (concurrency / latency)
and the child's peak memory (ru_maxrss).

    .venv/bin/python benchmarks/bench_harness.py [--dataset PATH] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = REPO.parent / "shared" / "intima" / "INTIMA.jsonl"


def start_server(latency: float) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "fake_openai.py"), "--latency", str(latency)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, port


def measure(port: int, dataset: Path, concurrency: int) -> dict[str, Any]:
    """One full run in a fresh store, in a child process so its peak memory is its own."""
    with tempfile.TemporaryDirectory() as tmp:
        code = (
            "import json,sys,time\n"
            "from intima.core.config import ModelConfig\n"
            "from intima.dataset import load_prompts\n"
            "from intima.generate import generate\n"
            "from intima.store import Store\n"
            f"ps = load_prompts({str(dataset)!r})\n"
            f"cfg = ModelConfig(spec='openai-compat:fake@http://127.0.0.1:{port}/v1', "
            f"concurrency={concurrency})\n"
            f"with Store.open({tmp!r} + '/s.db') as st:\n"
            "    [s] = generate(st, ps, [cfg])\n"
            "print(json.dumps({'elapsed': s.elapsed_s, 'n': s.generated}))\n"
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["peak_mb"] = max(peak_kb, before) / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    args = parser.parse_args()
    proc, port = start_server(args.latency)
    try:
        print(f"{'concurrency':>11} {'prompts':>7} {'seconds':>8} {'req/s':>8} {'limit':>8} "
              f"{'ratio':>6} {'peak MB':>8}")  # fmt: skip
        for conc in args.concurrency:
            r = measure(port, args.dataset, conc)
            rps = r["n"] / r["elapsed"]
            limit = conc / args.latency
            print(f"{conc:>11} {r['n']:>7} {r['elapsed']:>8.2f} {rps:>8.1f} {limit:>8.0f} "
                  f"{rps / limit:>6.2f} {r['peak_mb']:>8.0f}")  # fmt: skip
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
