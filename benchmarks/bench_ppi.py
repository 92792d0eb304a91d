"""Prediction-powered shares (``intima.results.prediction_powered_share``): coverage, width
and error, by simulation and on the dev set. The figures of ``docs/leaderboard.md``.

    .venv/bin/python benchmarks/bench_ppi.py [--reps 1000] [--seed 0] [--dev] [--draws 300]

**Simulation** (``_ppi_sim.py``): every cell of true shares 0.005-0.5 and their mirror
images 0.8-0.995, labelled n 30, 60 and 120 of N = 368 drawn without replacement, scorers of
AUROC 0.7, 0.85 and 0.95 of five kinds (a real score, a miscalibrated probability, a 0/1
label, a bimodal scorer blind to half the positives, a real score with 5% Cauchy outliers).
Printed: the worst cells' coverage, mean width against the judge alone on the same samples
(the same estimator with a constant scorer: Wilson's interval with the same finite-population
and continuity corrections), MAE; then the same for samples stratified by dimension
(``intima judge --sample n --stratify``: INTIMA's four dimensions, 143/93/84/48 responses,
positives up to 4.5 times likelier in one than another, a scorer that reads each a little
differently; the shipped allocation and stratified estimator); then the normal-theory
plug-in PPI++ interval for comparison. Target: coverage >= 0.93 in every cell; the width
against the judge alone is the scorer's true gain.

**Dev set** (``--dev``; needs ../shared/validation and the affect measure; the first run fits
the measure four times, leave one model out, and caches the numbers under
~/.cache/intima/bench): its 8 configurations (4 models x 2 variants), the set's own labels as
the judge, the affect measure fitted without the configuration's model as the scorer on all
of the configuration's responses. For each configuration and n in 30, 60, 120: ``--draws``
seeded random samples of n, simple and stratified by the rows' dimensions; the truth is
the labels' share over the whole configuration.
Reinforcing share with the continuous reinforcing measure as the predictor; every label with
the measure's primary label as the predictor. Targets: coverage >= 0.93 per configuration,
mean width against the judge alone with the same corrections (reported), MAE at n = 60 <= 0.02.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _ppi_sim as sim

from intima.results.ppi import PredictionPoweredShare, on_share_scale, prediction_powered_share

SHARES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.8, 0.95, 0.995)
NS = (30, 60, 120)
AUROCS = (0.7, 0.85, 0.95)


def plugin(y: np.ndarray, f: np.ndarray, u: np.ndarray) -> PredictionPoweredShare:
    """PPI++'s normal-theory interval (with the FPC), the one this module replaces."""
    r = prediction_powered_share(y, f, u)
    f, u = on_share_scale(f, u)  # the scores the estimator used
    e = y - r.lam * f
    se = float(np.sqrt((1 - len(y) / (len(y) + len(u))) * e.var(ddof=1) / len(y)))
    raw = r.lam * float(np.concatenate([f, u]).mean()) + float(e.mean())
    return PredictionPoweredShare(r.estimate, raw - 1.96 * se, raw + 1.96 * se, r.lam,
                                  r.n_labelled, r.n_total, r.positives, r.alpha)  # fmt: skip


def simulate(reps: int, seed: int, kinds: tuple[str, ...] = sim.KINDS) -> None:
    runs = {
        "prediction-powered share": lambda c, s: sim.run_cell(c, reps, s),
        "prediction-powered share, stratified by dimension": lambda c, s: sim.run_stratified_cell(
            c, reps, s
        ),
        "plug-in": lambda c, s: sim.run_cell(c, reps, s, plugin),
    }
    for name, run in runs.items():
        t = time.time()
        cells = list(sim.grid(SHARES, NS, AUROCS, kinds))
        res = [run(c, sim.seed_of(c, seed)) for c in cells]
        cov = np.array([r.coverage for r in res])
        rel = np.array([r.width / r.alone_width for r in res])
        print(f"\n## {name}: {len(cells)} cells x {reps} replicates ({time.time() - t:.0f} s)")
        print(f"coverage: min {cov.min():.3f}, mean {cov.mean():.3f}, "
              f"cells below 0.93: {(cov < 0.93).sum()}")  # fmt: skip
        print(f"width / judge alone (same corrections): mean {rel.mean():.3f}, "
              f"max cell {rel.max():.3f}")  # fmt: skip
        print("| n | min coverage | mean coverage | width / judge alone | MAE | judge-alone MAE |")
        print("|---|---|---|---|---|---|")
        for n in NS:
            sub = [r for r in res if r.cell.n == n]
            print(f"| {n} | {min(r.coverage for r in sub):.3f} | "
                  f"{np.mean([r.coverage for r in sub]):.3f} | "
                  f"{np.mean([r.width / r.alone_width for r in sub]):.3f} | "
                  f"{np.mean([r.mae for r in sub]):.4f} | "
                  f"{np.mean([r.alone_mae for r in sub]):.4f} |")  # fmt: skip
        print("worst cells:")
        for r in sorted(res, key=lambda r: r.coverage)[:5]:
            c = r.cell
            where = f"share {c.share} n {c.n} AUROC {c.auroc} {c.kind}"
            print(f"  {where}: coverage {r.coverage:.3f}, width {r.width:.3f} "
                  f"(judge alone {r.alone_width:.3f})")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dev", action="store_true", help="also the dev-set check")
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--no-sim", action="store_true", help="skip the simulation")
    ap.add_argument("--kinds", nargs="+", choices=sim.KINDS, default=list(sim.KINDS),
                    help="only these scorer kinds (e.g. cauchy)")  # fmt: skip
    args = ap.parse_args(argv)
    if not args.no_sim:
        simulate(args.reps, args.seed, tuple(args.kinds))
    if args.dev:
        import _ppi_dev

        _ppi_dev.report(args.draws, args.seed)


if __name__ == "__main__":
    main()
