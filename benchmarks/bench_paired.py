"""Benchmark: do the board's paired comparisons keep their promises? (issue 32)

Simulated boards of 368 prompts in 31 codes with prompt effects shared by the configurations
(``tests/paired_simulation.py`` has the design), each through the real score table and
:class:`intima.results.paired.PairedBoard` with B = 1000 replicates:

(a) no true difference: how often the paired interval says "different" (target <= 5%; also
    by formula on 40,000 boards, see ``expected_variance_null_rate``);
(b) a true 10-point difference: how often the paired interval says "different", against how
    often the two marginal 95% intervals are apart (what the side-by-side used to say);
(c) eight configurations 5 points apart: how often each rank interval holds the true rank
    (target >= 95%).

Deterministic (seeded); about 4 minutes on one core of the project machine.

    .venv/bin/python benchmarks/bench_paired.py [--null 2000] [--power 500] [--ranks 300]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

# The simulation is shared with the fast test: it lives with the tests, not in the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from paired_simulation import expected_variance_null_rate, pair_rates, rank_coverage


def _ci(p: float, n: int) -> str:
    """The Monte Carlo error of a share over n boards (Wilson 95%)."""
    z = 1.959964
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"[{100 * (centre - half):.1f}, {100 * (centre + half):.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--null", type=int, default=4000, help="boards for (a)")
    ap.add_argument("--power", type=int, default=400, help="boards for (b)")
    ap.add_argument("--ranks", type=int, default=200, help="boards for (c)")
    ap.add_argument("--fast-null", type=int, default=40_000, help="boards for (a) by formula")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    # (a) needs many boards (a 5% rate over 4000 boards has a Monte Carlo error of +-0.7
    # points): the marginal intervals' rate is left out there, for time.
    a = pair_rates(args.null, 0.0, seed=args.seed, marginal_too=False)
    b = pair_rates(args.power, 0.10, seed=args.seed + 1)
    c = rank_coverage(args.ranks, seed=args.seed + 2)
    same = expected_variance_null_rate(args.null, seed=args.seed)  # (a)'s very boards
    fast = expected_variance_null_rate(args.fast_null, seed=args.seed + 3)
    took = time.perf_counter() - t0
    print("| question | boards | paired: 'different' | marginal intervals apart | mean MDE |")
    print("|---|---|---|---|---|")
    for name, r in (("(a) no true difference", a), ("(b) true difference 10 points", b)):
        marginal = (
            "not run" if math.isnan(r.marginal)
            else f"{100 * r.marginal:.1f}% {_ci(r.marginal, r.boards)}"
        )  # fmt: skip
        print(
            f"| {name} | {r.boards} | {100 * r.paired:.1f}% {_ci(r.paired, r.boards)} | "
            f"{marginal} | {r.mean_mde:.1f} points |"
        )
    print(
        f"\n(a) by formula (the same rule, with the variance the bootstrap converges to): on "
        f"the same {args.null} boards {100 * same:.1f}%; on {args.fast_null} other boards "
        f"{100 * fast:.2f}% {_ci(fast, args.fast_null)}"
    )
    print()
    print("The other intervals weighed, on the same boards ('different' rates, (a) then (b)):")
    for name, get in (
        ("percentile of the board's replicates", lambda r: r.percentile),
        ("percentile, Rao-Wu rescaled replicates", lambda r: r.percentile_rescaled),
        ("d +- 1.96 SE, no continuity correction", lambda r: r.uncorrected),
    ):
        print(f"- {name}: {100 * get(a):.1f}% and {100 * get(b):.1f}%")
    print()
    print("| question | boards | per configuration | every configuration of a board | width |")
    print("|---|---|---|---|---|")
    print(
        f"| (c) rank interval holds the true rank | {c.boards} | {100 * c.per_config:.1f}% "
        f"{_ci(c.per_config, c.boards * 8)} | {100 * c.all_configs:.1f}% | "
        f"{c.mean_width:.2f} ranks |"
    )
    # (a) is judged on the formula's 40,000 boards, whose Monte Carlo error is a tenth of a
    # point; the real code's rate on 4000 boards (+-0.7 points) must not exceed the formula's
    # on the same boards by more than that error.
    ok = (
        fast <= 0.05 and a.paired <= same + 0.007 and b.paired > b.marginal and c.per_config >= 0.95
    )
    print(f"\ntargets {'met' if ok else 'MISSED'}; {took:.0f} s")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
