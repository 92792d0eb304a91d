"""The coverage simulation of prediction-powered shares, shared by ``bench_ppi.py`` and
``tests/test_results_ppi.py``.

One cell = (true share p, labelled n, scorer AUROC, scorer kind). Each replicate draws a fresh
population of N = 368 responses with exactly ``round(p N)`` positives (at least 1; the truth
is the judge's share over all 368), gives each a latent score ``z ~ N(d y, 1)`` with
``d = sqrt(2) Phi^-1(AUROC)`` (the binormal model), turns it into the scorer's output by the
kind, draws ``n`` of the 368 without replacement as the labelled sample, and calls
:func:`intima.results.ppi.prediction_powered_share` (the shipped code, not a copy).

Kinds: ``score`` (z itself, any real number), ``probability`` (a logistic calibration for a
prior of 0.2, wrong at every other share), ``label`` (a 0/1 label, z above a cut),
``bimodal`` (half the positives score like negatives: a scorer blind to one kind of
reinforcing answer), and ``cauchy`` (z with 5% of the scores, at random, replaced by
standard Cauchy draws: a heavy-tailed real score, whose outliers reach 1e3-1e5).

The baseline is the judge alone on the same sample through the same estimator (a constant
scorer, so ``lambda = 0``): Wilson's interval with the same finite-population correction and
the same continuity correction, and, for a stratified sample, the same stratum weights. Any
narrowing against it is the scorer's own gain, not the correction's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

import numpy as np

from intima.results.ppi import PredictionPoweredShare, prediction_powered_share

N = 368
KINDS = ("score", "probability", "label", "bimodal", "cauchy")
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
    alone_width: float  # the judge alone on the same samples, the same corrections
    mae: float
    alone_mae: float


def population(
    rng: np.random.Generator, share: float, auroc: float, kind: str
) -> tuple[np.ndarray, np.ndarray]:
    """(y, f) of one population of N responses."""
    k = max(1, round(share * N))
    y = np.zeros(N)
    y[:k] = 1.0
    return y, scores(rng, y, share, auroc, kind)


def scores(
    rng: np.random.Generator, y: np.ndarray, share: float, auroc: float, kind: str
) -> np.ndarray:
    """The scorer's output on responses of classes ``y``."""
    d = np.sqrt(2.0) * _Z.inv_cdf(auroc)
    z = rng.standard_normal(len(y)) + d * y
    if kind == "score":
        f = z
    elif kind == "probability":
        f = 1.0 / (1.0 + np.exp(-(d * z - d * d / 2.0 + np.log(0.25))))
    elif kind == "label":
        f = (z > _Z.inv_cdf(1.0 - max(share, 0.05)) + 0.3 * d).astype(np.float64)
    elif kind == "bimodal":
        blind = (y == 1.0) & (rng.random(len(y)) < 0.5)
        f = np.where(blind, rng.standard_normal(len(y)), z)
    elif kind == "cauchy":
        f = np.where(rng.random(len(y)) < 0.05, rng.standard_cauchy(len(y)), z)
    else:
        raise ValueError(f"unknown scorer kind {kind!r}")
    return f


def judge_alone(labels: np.ndarray, n_total: int) -> PredictionPoweredShare:
    """The judge alone on the sample, through the shipped estimator with a constant scorer
    (``lambda = 0``): Wilson's interval with the finite-population correction and the
    continuity correction, the fair baseline for the prediction-powered interval."""
    return prediction_powered_share(labels, np.zeros(len(labels)), np.zeros(n_total - len(labels)))


Estimator = Callable[[np.ndarray, np.ndarray, np.ndarray], PredictionPoweredShare]


def run_cell(
    cell: Cell, reps: int, seed: int, estimator: Estimator = prediction_powered_share
) -> CellResult:
    def draw(rng: np.random.Generator) -> tuple[PredictionPoweredShare, Pps, float]:
        y, f = population(rng, cell.share, cell.auroc, cell.kind)
        order = rng.permutation(N)
        s, rest = order[: cell.n], order[cell.n :]
        return estimator(y[s], f[s], f[rest]), judge_alone(y[s], N), float(y.mean())

    return _tally(cell, reps, np.random.default_rng(seed), draw)


Pps = PredictionPoweredShare
Draw = Callable[[np.random.Generator], tuple[Pps, Pps, float]]


def _tally(cell: Cell, reps: int, rng: np.random.Generator, draw: Draw) -> CellResult:
    """``reps`` replicates of ``draw`` (the estimate, the judge alone's, the truth)."""
    hit = width = wwidth = err = werr = 0.0
    for _ in range(reps):
        r, alone, truth = draw(rng)
        hit += r.lo - 1e-12 <= truth <= r.hi + 1e-12
        width += r.hi - r.lo
        err += abs(r.estimate - truth)
        wwidth += alone.hi - alone.lo
        werr += abs(alone.estimate - truth)
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


#: INTIMA's four dimensions (143, 93, 84 and 48 of the 368 prompts) and how much likelier a
#: positive is in each than on average: strata that differ, as the dimensions do.
STRATA: Final = {"traits": 143, "relationship": 93, "vulnerability": 84, "investment": 48}
STRATUM_RISK: Final = {
    "traits": 0.4, "relationship": 1.6, "vulnerability": 0.8, "investment": 1.8
}  # fmt: skip
#: the scorer reads each stratum a little differently (its error depends on the stratum)
STRATUM_SHIFT: Final = {
    "traits": -0.3, "relationship": 0.3, "vulnerability": 0.0, "investment": 0.5
}  # fmt: skip


def stratified_population(
    rng: np.random.Generator, share: float, auroc: float, kind: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, f, stratum) of one population of N responses in :data:`STRATA`, ``round(share N)``
    positives (at least 1) placed with the strata's risks."""
    strata = np.repeat(np.array(list(STRATA), dtype=object), list(STRATA.values()))
    risk = np.array([STRATUM_RISK[h] for h in strata])
    k = max(1, round(share * N))
    y = np.zeros(N)
    y[rng.choice(N, size=k, replace=False, p=risk / risk.sum())] = 1.0
    f = scores(rng, y, share, auroc, kind)
    if kind in ("score", "bimodal", "cauchy"):
        f = f + np.array([STRATUM_SHIFT[h] for h in strata])
    return y, f, strata


def run_stratified_cell(cell: Cell, reps: int, seed: int) -> CellResult:
    """As :func:`run_cell`, for ``intima judge --sample n --stratify``: each stratum's share
    of the sample from the shipped :func:`intima.judges.samples.stratum_sequence`, drawn at
    random within the stratum; the shipped stratified estimator with the strata's weights."""
    from intima.judges.samples import stratum_sequence
    from intima.results.ppi import stratified_prediction_powered_share

    take = stratum_sequence(STRATA)[: cell.n]
    per = {h: take.count(h) for h in STRATA}

    def draw(rng: np.random.Generator) -> tuple[Pps, Pps, float]:
        y, f, strata = stratified_population(rng, cell.share, cell.auroc, cell.kind)
        picked = np.zeros(N, dtype=bool)
        for h, k in per.items():
            picked[rng.choice(np.flatnonzero(strata == h), size=k, replace=False)] = True
        s, rest = np.flatnonzero(picked), np.flatnonzero(~picked)
        by = (list(strata[s]), list(strata[rest]))
        r = stratified_prediction_powered_share(y[s], f[s], f[rest], *by, populations=STRATA)
        zero = np.zeros(N)  # the judge alone, with the same strata weights
        alone = stratified_prediction_powered_share(
            y[s], zero[s], zero[rest], *by, populations=STRATA
        )
        return r, alone, float(y.mean())

    return _tally(cell, reps, np.random.default_rng(seed), draw)
