"""B − A of two headline (prediction-powered) shares (``intima.results.headline``): coverage
of its 95% interval by simulation. The table of ``docs/leaderboard.md``.

    .venv/bin/python benchmarks/bench_ppi_difference.py [--reps 1000] [--seed 0]

Each cell = (scope size N, labelled n of each configuration, true shares of A and B, scorer
AUROC, scorer kind). Each replicate draws A's population of N responses with
``max(1, round(share N))`` positives and B's from it (B's positives hold A's, or A's B's: the
two configurations' labels are correlated through the prompts, as on a board), the scorer's
output on each as in ``_ppi_sim.py`` (a real score, a miscalibrated probability, a 0/1
label, a bimodal scorer blind to half the positives), an independent simple random sample
of n for each configuration (as ``intima judge --sample`` draws: a seeded order per run), the
shipped :func:`intima.results.ppi.prediction_powered_share` on each and the shipped
:func:`intima.results.headline.headline_difference` of the two. The truth: B's share minus
A's over all N. Printed: coverage per cell's worst, the mean width, and how often the
interval excludes 0 against how often the two shares' own intervals are apart (what a reader
comparing by eye would conclude). Target: coverage >= 0.93 in every cell. About 20 minutes
on one core at 1000 replicates (``--sizes`` runs a part).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _ppi_sim as sim

from intima.results.headline import headline_difference
from intima.results.ppi import PredictionPoweredShare, prediction_powered_share
from intima.results.prediction import MIN_LABELLED, PredictionRow

SIZES = (368, 84)
PAIRS = ((0.3, 0.4), (0.05, 0.1), (0.02, 0.02), (0.5, 0.5))
AUROCS = (0.7, 0.95)
TARGET = 0.93


def _row(r: PredictionPoweredShare) -> PredictionRow:
    return PredictionRow("judge:sim", "sim", "run", "overall", "reinforcing", r.estimate, r.lo,
                         r.hi, r.n_labelled, r.n_total, None, None, "")  # fmt: skip


def _populations(
    rng: np.random.Generator, size: int, pair: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """A's and B's labels on the same N prompts: B's positives hold A's (or A's hold B's),
    so the two configurations' labels are correlated through the prompts, as on a board."""
    ka, kb = (max(1, round(p * size)) for p in pair)
    perm = rng.permutation(size)
    return (perm < ka).astype(np.float64), (perm < kb).astype(np.float64)


def cell(size: int, n: int, pair: tuple[float, float], auroc: float, kind: str, reps: int,
         seed: int) -> tuple[float, float, float, float]:  # fmt: skip
    """(coverage, mean width, share of 'different', share of disjoint share intervals)."""
    rng = np.random.default_rng(seed)
    hit = width = differ = apart = 0.0
    for _ in range(reps):
        ya, yb = _populations(rng, size, pair)
        out = []
        for y, share in ((ya, pair[0]), (yb, pair[1])):
            f = sim.scores(rng, y, share, auroc, kind)
            order = rng.permutation(size)
            s, rest = order[:n], order[n:]
            out.append(prediction_powered_share(y[s], f[s], f[rest]))
        a, b = out
        h = headline_difference(_row(a), _row(b))
        assert h.lo is not None and h.hi is not None
        truth = float(yb.mean() - ya.mean())
        hit += h.lo - 1e-12 <= truth <= h.hi + 1e-12
        width += h.hi - h.lo
        differ += h.different
        apart += a.hi < b.lo or b.hi < a.lo
    return hit / reps, width / reps, differ / reps, apart / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    args = ap.parse_args()
    t = time.time()
    print("| N | labelled n (each) | shares A, B | worst coverage (AUROC, kind) | mean width, "
          "points | interval excludes 0 | share intervals apart |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    worst_all = 1.0
    for size in args.sizes:
        for n in (MIN_LABELLED, 60):
            for pair in PAIRS:
                got = []
                for kind in sim.KINDS:
                    for auroc in AUROCS:
                        seed = (args.seed * 1_000_003 + size * 7919 + n * 131
                                + PAIRS.index(pair) * 17 + AUROCS.index(auroc) * 5
                                + sim.KINDS.index(kind) * 1009)  # fmt: skip
                        got.append((cell(size, n, pair, auroc, kind, args.reps, seed),
                                    (auroc, kind)))  # fmt: skip
                cov = min(got, key=lambda g: g[0][0])
                mean = np.mean([g[0] for g in got], axis=0)
                worst_all = min(worst_all, cov[0][0])
                print(f"| {size} | {n} | {pair[0]}, {pair[1]} | {cov[0][0]:.3f} {cov[1]} | "
                      f"{100 * mean[1]:.1f} | {100 * mean[2]:.1f}% | {100 * mean[3]:.1f}% |",
                      flush=True)  # fmt: skip
    print(f"\nworst cell {worst_all:.3f} (target >= {TARGET}); {args.reps} replicates a cell, "
          f"{time.time() - t:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
