"""The reliability line adds up every pytest-xdist worker's figures (``make test`` runs two)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from reliability_summary import Tally

HERE = Path(__file__).parent


def test_merge_adds_counts_and_counters() -> None:
    a, b = Tally(), Tally()
    a.faults.update({"500": 2, "hang": 1})
    a.results_checked, a.results_lost = 10, 0
    b.faults.update({"500": 3})
    b.results_checked, b.duplicates = 5, 1
    a.merge(json.loads(json.dumps(b.to_dict())))
    assert a.faults == {"500": 5, "hang": 1}
    assert (a.results_checked, a.results_lost, a.duplicates) == (15, 0, 1)


def test_two_workers_figures_make_one_line(tmp_path: Path) -> None:
    """A real xdist run of four tests, each recording 3 results and one fault: the one line
    printed by the controller says 12 and 4, whichever worker ran which test."""
    (tmp_path / "test_four.py").write_text(
        "import pytest\n"
        "from reliability_summary import TALLY\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_one(i):\n"
        "    TALLY.results_checked += 3\n"
        "    TALLY.faults['500'] += 1\n",
        encoding="utf-8",
    )
    figures = tmp_path / "reliability.json"
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "INTIMA_RELIABILITY_JSON": str(figures)}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "reliability_summary", "-p", "no:cacheprovider",
         "-n", "2", "-q", "--rootdir", str(tmp_path), str(tmp_path / "test_four.py")],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("reliability:"))
    assert "faults injected 4 (500 4)" in line
    assert "results checked 12, lost 0" in line
    written = json.loads(figures.read_text(encoding="utf-8"))
    assert (written["results_checked"], written["faults"]) == (12, {"500": 4})
