"""What the benchmarks on simulated boards (``bench_mde.py``, ``bench_ranks.py``) share: the
tests' board simulation on the import path (it lives with the tests, which run it at small n),
their command line (how many boards, a seed) and the Markdown table they print."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def command_line(doc: str, boards: dict[str, tuple[int, str]]) -> argparse.Namespace:
    """The options: each of ``boards`` (name: default, what it counts) and ``--seed``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, (default, what) in boards.items():
        ap.add_argument(f"--{name}", type=int, default=default, help=what)
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args()


def table_header(*columns: str) -> None:
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
