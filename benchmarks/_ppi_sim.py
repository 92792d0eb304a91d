"""The coverage simulation of prediction-powered shares, shared by ``bench_ppi.py`` and
``tests/test_results_ppi.py``.

One cell = (true share p, labelled n, scorer AUROC, scorer kind). Each replicate draws a fresh
population of N = 368 responses with exactly ``round(p N)`` positives (at least 1; the truth
is the judge's share over all 368), gives each a latent score ``z ~ N(d y, 1)`` with
``d = sqrt(2) Phi^-1(AUROC)`` (the binormal model), turns it into the scorer's output by the
kind, draws ``n`` of the 368 without replacement as the labelled sample, and calls
:func:`intima.results.ppi.prediction_powered_share` (the shipped code, not a copy).

Kinds: ``score`` (z itself, any real number), ``probability`` (a logistic calibration for a
prior of 0.2, wrong at every other share), ``label`` (a 0/1 label, z above a cut), and
``bimodal`` (half the positives score like negatives: a scorer blind to one kind of
reinforcing answer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from intima.results.ppi import PredictionPoweredShare, prediction_powered_share, score_bounds

N = 368
KINDS = ("score", "probability", "label", "bimodal")
_Z = NormalDist()


@dataclass(frozen=True)
class Cell:
    share: float
    n: int
    auroc: float
    kind: str


@dataclass(frozen=True)
class CellResult:
    cell: Cell
    coverage: float
    width: float
    wilson_width: float  # the judge alone on the same samples: Wilson, no FPC
    mae: float
    wilson_mae: float


def population(
    rng: np.random.Generator, share: float, auroc: float, kind: str
) -> tuple[np.ndarray, np.ndarray]:
    """(y, f) of one population of N responses."""
    k = max(1, round(share * N))
    y = np.zeros(N)
    y[:k] = 1.0
    d = np.sqrt(2.0) * _Z.inv_cdf(auroc)
    z = rng.standard_normal(N) + d * y
    if kind == "score":
        f = z
    elif kind == "probability":
        f = 1.0 / (1.0 + np.exp(-(d * z - d * d / 2.0 + np.log(0.25))))
    elif kind == "label":
        f = (z > _Z.inv_cdf(1.0 - max(share, 0.05)) + 0.3 * d).astype(np.float64)
    elif kind == "bimodal":
        blind = (y == 1.0) & (rng.random(N) < 0.5)
        f = np.where(blind, rng.standard_normal(N), z)
    else:
        raise ValueError(f"unknown scorer kind {kind!r}")
    return y, f


def wilson(share: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The judge-alone Wilson interval (no finite-population correction), for comparison."""
    return score_bounds(share, z * z / n, 1.0, 0.0, 0.0)


Estimator = Callable[[np.ndarray, np.ndarray, np.ndarray], PredictionPoweredShare]


def run_cell(
    cell: Cell, reps: int, seed: int, estimator: Estimator = prediction_powered_share
) -> CellResult:
    rng = np.random.default_rng(seed)
    hit = width = wwidth = err = werr = 0.0
    for _ in range(reps):
        y, f = population(rng, cell.share, cell.auroc, cell.kind)
        truth = float(y.mean())
        order = rng.permutation(N)
        s, rest = order[: cell.n], order[cell.n :]
        r = estimator(y[s], f[s], f[rest])
        hit += r.lo - 1e-12 <= truth <= r.hi + 1e-12
        width += r.hi - r.lo
        err += abs(r.estimate - truth)
        lo, hi = wilson(float(y[s].mean()), cell.n)
        wwidth += hi - lo
        werr += abs(float(y[s].mean()) - truth)
    return CellResult(cell, hit / reps, width / reps, wwidth / reps, err / reps, werr / reps)


def grid(
    shares: Sequence[float], ns: Sequence[int], aurocs: Sequence[float], kinds: Sequence[str]
) -> Iterator[Cell]:
    for kind in kinds:
        for auroc in aurocs:
            for share in shares:
                for n in ns:
                    yield Cell(share, n, auroc, kind)


def seed_of(cell: Cell, base: int) -> int:
    """A seed per cell, fixed by the cell and ``base`` (so any cell can be rerun alone)."""
    return (
        base * 1_000_003
        + KINDS.index(cell.kind) * 100_000
        + int(cell.share * 10_000) * 7
        + (int(cell.auroc * 100) * 131 + cell.n)
    )
