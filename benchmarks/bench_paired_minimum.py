"""The fewest judged pairs for a paired difference (``MIN_JUDGED_PAIRS`` of
``intima.results.paired``): how the paired test behaves on few pairs. The table of
``docs/leaderboard.md``.

    .venv/bin/python benchmarks/bench_paired_minimum.py [--boards 400] [--seed 0]

A judge on a sample of each configuration scores few prompts of both (with ``--sample 60`` of
368 each, about 10 in common). Each board here is those judged pairs alone: ``n`` prompts in
codes of two (INTIMA's codes hold 11-12 prompts; a sample's pairs fall one or two to a code),
the prompt effects of ``tests/paired_simulation.py`` shared by the two configurations, no true
difference, through the real :class:`intima.results.paired.PairedBoard` with B = 1000. Printed
per n: how often it says "different" (target <= 5%, the test's own level) and the largest and
mean smallest detectable difference. The minimum is the smallest n from which the rate stays
within the Monte Carlo error of 5% and no detectable difference exceeds 100 points. About 3
minutes on one core.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import intima.results.paired as paired
from intima.results.paired import PairedBoard
from intima.results.table import OVERALL
from paired_simulation import METRIC, SCORER, design, draw_board

# Measured without the minimum (the pages give no number under it), to choose it.
paired.MIN_JUDGED_PAIRS = 2  # type: ignore[misc]

NS = (4, 6, 8, 10, 12, 15, 20, 30)
SHARES = (0.1, 0.3)


def rates(n: int, share: float, boards: int, seed: int) -> tuple[float, float, float]:
    """(share of boards called 'different', mean MDE, largest MDE) at n judged pairs."""
    d = design(2, (2,) * (n // 2) + ((1,) if n % 2 else ()))
    rng = np.random.default_rng(seed)
    a, b = d.run_ids
    different, mdes = 0, []
    for _ in range(boards):
        sets = draw_board(d, (share, share), rng)
        pb = PairedBoard(d.responses, sets, bootstrap=1000, seed=int(rng.integers(2**31)))
        diff = pb.difference(SCORER, a, b, OVERALL, METRIC)
        different += diff.different
        if diff.mde is not None:
            mdes.append(diff.mde)
    m = np.array(mdes) if mdes else np.array([np.nan])
    return different / boards, 100 * float(np.mean(m)), 100 * float(np.max(m))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boards", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t = time.time()
    print("| judged pairs | share | 'different' with no true difference | mean MDE | largest MDE |")
    print("|---|---|---|---|---|")
    for n in NS:
        for share in SHARES:
            fp, mean, top = rates(
                n, share, args.boards, args.seed * 1009 + n * 13 + int(share * 10)
            )
            print(f"| {n} | {share} | {100 * fp:.1f}% | {mean:.1f} | {top:.1f} |", flush=True)
    print(f"\n{args.boards} boards a row, {time.time() - t:.0f} s")


if __name__ == "__main__":
    main()
