"""Coverage simulation for :mod:`intervals` under the leaderboard's stratified cluster bootstrap.

Design (one configuration, one label, ``m`` responses per prompt; ``n = m * prompts``):

* The prompts are spread over INTIMA-like codes (strata); ``DESIGNS`` maps a total ``n`` to
  code sizes: ``5`` = 5 codes x 1 prompt (a smoke run), ``14`` = one code of 14 prompts (a
  per-code cell), ``48`` = 4 codes x 12 (a dimension), ``368`` = 27 x 12 + 4 x 11 = the full set
  over 31 codes. ``EXTRA_DESIGNS`` has the awkward ones (14 = 7 x 2 and 14 x 1).
* Code heterogeneity: code ``h`` has rate ``expit(logit(p) + sigma * z_h)`` with ``z_h`` evenly
  spaced normal quantiles (fixed: codes are a fixed taxonomy). The truth is the prompt-weighted
  mean of the code rates, which is what the leaderboard rate estimates.
* Optional clustering (``m > 1``): each prompt draws its own rate from a Beta with that mean and
  intra-prompt correlation ``icc``, then ``m`` Bernoulli responses.
* Every replicate dataset gets a fresh stratified bootstrap (the logic of
  ``intima.leaderboard.table.bootstrap_weights``), ``B`` replicates, and both the current
  percentile interval and :func:`intervals.wilson_effective` are scored.

Run ``python simulate.py`` for the table.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

import numpy as np
from numpy.typing import NDArray

from intima.results.intervals import CONFIDENCE, bootstrap_variance, design_effect, wilson_effective
from intima.results.table import bootstrap_weights as _table_weights

DESIGNS: Final = {5: (1,) * 5, 14: (14,), 48: (12,) * 4, 368: (12,) * 27 + (11,) * 4}
EXTRA_DESIGNS: Final = {"14 (7x2)": (2,) * 7, "14 (14x1)": (1,) * 14}
PS: Final = (0.005, 0.05, 0.3, 0.5)


def bootstrap_weights(
    code_of_prompt: NDArray[np.intp], b: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """W[b, p]: how often prompt p is drawn in replicate b: the leaderboard's own
    :func:`intima.results.table.bootstrap_weights`, seeded from ``rng``."""
    seed = int(rng.integers(2**31))
    weights, _codes, _members = _table_weights([str(c) for c in code_of_prompt], b, seed)
    return weights.astype(np.float64)


@dataclass(frozen=True)
class CellResult:
    p: float
    design: str
    n: int
    truth: float
    coverage: float  # effective-n Wilson
    width: float
    min_width: float
    srs_coverage: float  # the same Wilson interval at the actual n (deff = 1)
    pct_coverage: float  # the current percentile bootstrap
    pct_width: float
    pct_zero_width: float  # share of percentile intervals of zero width
    mean_deff: float


def code_rates(p: float, n_codes: int, sigma: float) -> NDArray[np.float64]:
    z = np.array([NormalDist().inv_cdf((h + 0.5) / n_codes) for h in range(n_codes)])
    logit = np.log(p / (1 - p)) + sigma * z
    return np.asarray(1.0 / (1.0 + np.exp(-logit)), dtype=np.float64)


def simulate_cell(
    p: float,
    sizes: Sequence[int],
    *,
    design: str | None = None,
    reps: int = 2000,
    b: int = 200,
    seed: int = 0,
    sigma: float = 0.5,
    per_prompt: int = 1,
    icc: float = 0.0,
    chunk: int = 100,
) -> CellResult:
    rng = np.random.default_rng(seed)
    code_of = np.repeat(np.arange(len(sizes)), sizes).astype(np.intp)
    rate_of = code_rates(p, len(sizes), sigma)[code_of]  # per prompt
    truth = float(rate_of.mean())
    n_prompts = len(code_of)
    n = per_prompt * n_prompts
    hits = srs_hits = pct_hits = zero = 0
    width = pct_width = deff_sum = 0.0
    min_width = np.inf
    done = 0
    while done < reps:
        r = min(chunk, reps - done)
        if icc > 0:
            k = 1.0 / icc - 1.0
            prompt_rate = rng.beta(rate_of * k, (1.0 - rate_of) * k, size=(r, n_prompts))
        else:
            prompt_rate = np.broadcast_to(rate_of, (r, n_prompts))
        y = rng.binomial(per_prompt, prompt_rate).astype(np.float64)  # (r, prompts)
        w = bootstrap_weights(code_of, b, rng)  # (B, prompts); every replicate has n responses
        ratio = (y @ w.T) / n  # (r, B)
        p_hat = y.sum(axis=1) / n
        var = bootstrap_variance(ratio.T)
        lo, hi = wilson_effective(p_hat, np.full(r, n), var)
        hits += int(((lo <= truth) & (truth <= hi)).sum())
        width += float((hi - lo).sum())
        slo, shi = wilson_effective(p_hat, np.full(r, n), None)
        srs_hits += int(((slo <= truth) & (truth <= shi)).sum())
        min_width = min(min_width, float((hi - lo).min()))
        deff_sum += float(design_effect(p_hat, np.full(r, n), var).sum())
        alpha = (1 - CONFIDENCE) / 2
        plo, phi = np.quantile(ratio, [alpha, 1 - alpha], axis=1)
        pct_hits += int(((plo <= truth) & (truth <= phi)).sum())
        pct_width += float((phi - plo).sum())
        zero += int((phi - plo <= 0).sum())
        done += r
    return CellResult(
        p=p,
        design=design or str(n),
        n=n,
        truth=truth,
        coverage=hits / reps,
        width=width / reps,
        min_width=min_width,
        srs_coverage=srs_hits / reps,
        pct_coverage=pct_hits / reps,
        pct_width=pct_width / reps,
        pct_zero_width=zero / reps,
        mean_deff=deff_sum / reps,
    )


def coverage_table(
    designs: dict[str, tuple[int, ...]] | None = None,
    ps: Sequence[float] = PS,
    *,
    reps: int = 2000,
    b: int = 200,
    sigma: float = 0.5,
    per_prompt: int = 1,
    icc: float = 0.0,
    seed: int = 0,
) -> list[CellResult]:
    """Every (p, design) cell; cell (i, j) is seeded ``seed + 1000 i + j``."""
    chosen = designs if designs is not None else {str(k): v for k, v in DESIGNS.items()}
    return [
        simulate_cell(
            p,
            sizes,
            design=name,
            reps=reps,
            b=b,
            seed=seed + 1000 * i + j,
            sigma=sigma,
            per_prompt=per_prompt,
            icc=icc,
        )
        for i, p in enumerate(ps)
        for j, (name, sizes) in enumerate(chosen.items())
    ]


def format_table(rows: Sequence[CellResult]) -> str:
    head = (
        f"{'p':>6} {'design':>10} {'n':>4} {'truth':>7} | {'cover':>6} {'width':>6} "
        f"{'minw':>6} {'deff':>5} {'deff=1':>6} | {'pct cov':>7} {'pct w':>6} {'pct w=0':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.p:>6.3f} {r.design:>10} {r.n:>4} {r.truth:>7.4f} | {r.coverage:>6.3f} "
            f"{r.width:>6.3f} {r.min_width:>6.3f} {r.mean_deff:>5.2f} {r.srs_coverage:>6.3f} | "
            f"{r.pct_coverage:>7.3f} "
            f"{r.pct_width:>6.3f} {r.pct_zero_width:>7.3f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] = ()) -> None:
    """``python simulate.py [reps [B]]``."""
    reps = int(argv[0]) if argv else 2000
    b = int(argv[1]) if len(argv) > 1 else 200
    t0 = time.perf_counter()
    designs = {str(k): v for k, v in DESIGNS.items()} | dict(EXTRA_DESIGNS)
    print(f"{reps} datasets per cell, B={b}. cover/width/minw: effective-n Wilson; deff: mean")
    print("design effect; deff=1: Wilson at the actual n; pct: the current percentile bootstrap.")
    print("\nStratified, code heterogeneity sigma=0.5, 1 response per prompt:")
    print(format_table(coverage_table(designs, reps=reps, b=b)))
    print("\nClustered: 3 responses per prompt, icc=0.3 (n = 3 x prompts):")
    print(format_table(coverage_table(designs, reps=reps, b=b, per_prompt=3, icc=0.3)))
    print(f"\n{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
