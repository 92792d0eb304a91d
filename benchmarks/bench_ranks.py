"""Benchmark: do the board's rank intervals hold every rank at once? (issue 39, item 3)

The board's rank intervals (:meth:`intima.results.paired.PairedBoard.rank_intervals`) are per
configuration: each is the 2.5-97.5% range of one configuration's rank over the board's
bootstrap replicates. This measures, on simulated boards of 8 and 16 configurations whose
true shares are 1 point apart (``tests/paired_simulation.py``'s design: 368 prompts in 31
codes, prompt effects shared by every configuration), through the real score table and
PairedBoard (1000 replicates a board):

* how often each configuration's interval holds its true rank (per configuration), and how
  often every interval of a board does at once (all ranks together);
* the same for *simultaneous* rank intervals from the same replicates: the widest common
  trimming ``t`` such that, in at least 95% of the replicates, every configuration's rank lies
  in its ``[t, 1 - t]`` quantile range (widened, like the board's, to its rank on the board);
  and the mean width of both kinds.

The page keeps the per-configuration intervals and says so beside the ranks; the table
printed here is the evidence for that choice (docs/leaderboard.md, "Rank intervals").
Deterministic (seeded); about 5 minutes on one core at the defaults.

    .venv/bin/python benchmarks/bench_ranks.py [--boards 200] [--seed 0]
"""

from __future__ import annotations

import time

import _simulated
import numpy as np
from numpy.typing import NDArray

from intima.core.ratings import Primary
from intima.results.paired import PairedBoard
from intima.results.table import OVERALL, score_table
from paired_simulation import METRIC, SCORER, design, draw_board


def simultaneous(ranks: NDArray[np.int64], level: float = 0.95) -> tuple[NDArray, NDArray]:
    """Per configuration (column of ``ranks``, replicates x configurations), the
    ``[t, 1 - t]`` quantiles of its rank for the largest ``t`` at which at least ``level`` of
    the replicates hold every configuration's rank inside its range."""
    best = (ranks.min(axis=0), ranks.max(axis=0))
    for t in np.arange(0.025, 0.0, -0.0005):
        lo = np.quantile(ranks, t, axis=0, method="lower")
        hi = np.quantile(ranks, 1 - t, axis=0, method="higher")
        if np.mean(np.all((ranks >= lo) & (ranks <= hi), axis=1)) >= level:
            return lo, hi
    return best


def run(n_configs: int, boards: int, seed: int) -> dict[str, float]:
    shares = tuple(0.30 + 0.01 * k for k in range(n_configs))
    d = design(n_configs)
    rng = np.random.default_rng([seed, n_configs])
    true_rank = {d.run_ids[c]: n_configs - c for c in range(n_configs)}  # the highest is 1
    per = joint = s_per = s_joint = 0
    widths, s_widths = [], []
    n_prompts = len(d.codes)
    for _ in range(boards):
        sets = draw_board(d, shares, rng)
        board_seed = int(rng.integers(2**31))
        table = score_table(d.responses, sets, bootstrap=1000, seed=board_seed, per_code=False)
        rows = [table.get(SCORER, r, OVERALL, METRIC) for r in d.run_ids]
        pb = PairedBoard(d.responses, sets, bootstrap=1000, seed=board_seed)
        shipped = pb.rank_intervals(SCORER, OVERALL, METRIC, rows)
        ok = [lo <= true_rank[r] <= hi for r, (lo, hi) in shipped.items()]
        per, joint = per + sum(ok), joint + all(ok)
        widths += [hi - lo + 1 for lo, hi in shipped.values()]
        # The same replicates, every rank at once (one answer per prompt, all scored).
        y = np.array([s.primary == Primary.REINFORCING for s in sets], dtype=np.float64)
        rates = pb.weights @ y.reshape(n_configs, n_prompts).T / n_prompts
        ranks = 1 + (rates[:, None, :] > rates[:, :, None]).sum(axis=2)  # 1 + rated higher
        lo, hi = simultaneous(ranks)
        point = y.reshape(n_configs, n_prompts).mean(axis=1)
        s_ok = []
        for c, run_id in enumerate(d.run_ids):
            board_rank = 1 + int((point > point[c]).sum())  # widened to hold it, as shipped
            lo_c, hi_c = min(int(lo[c]), board_rank), max(int(hi[c]), board_rank)
            s_ok.append(lo_c <= true_rank[run_id] <= hi_c)
            s_widths.append(hi_c - lo_c + 1)
        s_per, s_joint = s_per + sum(s_ok), s_joint + all(s_ok)
    total = boards * n_configs
    return {
        "per": per / total, "joint": joint / boards, "width": float(np.mean(widths)),
        "s_per": s_per / total, "s_joint": s_joint / boards, "s_width": float(np.mean(s_widths)),
    }  # fmt: skip


def main() -> None:
    args = _simulated.command_line(__doc__, {"boards": (200, "boards a size")})
    t0 = time.perf_counter()
    _simulated.table_header("configurations (1 point apart)", "intervals", "per configuration",
                            "all ranks at once", "mean width (ranks)")  # fmt: skip
    for k in (8, 16):
        r = run(k, args.boards, args.seed)
        print(f"| {k} | per configuration (shipped) | {100 * r['per']:.1f}% | "
              f"{100 * r['joint']:.1f}% | {r['width']:.2f} of {k} |")  # fmt: skip
        print(f"| {k} | simultaneous | {100 * r['s_per']:.1f}% | {100 * r['s_joint']:.1f}% | "
              f"{r['s_width']:.2f} of {k} |")  # fmt: skip
    print(f"\n{args.boards} boards a size; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
