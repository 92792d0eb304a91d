"""Thresholds from measure to low/medium/high, and agreement with a reference rater.

Everything here is a pure function of (measure, reference level) pairs, so it is tested on
hand-computed values and synthetic data; :mod:`intima.affect.store_io` only gathers the pairs.

* weighted kappa (quadratic by default; linear also reported) on the three ordinal levels;
* Spearman's rho between the measure and the reference level (threshold-free);
* AUROC for "shows the behaviour" (reference medium or high) vs not (threshold-free), computed
  exactly as the Mann-Whitney U statistic over all positive/negative pairs, ties counting 1/2.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from intima.affect.config import LEVELS, Level, Thresholds, group_of

Weights = Literal["linear", "quadratic"]
Granularity = Literal["global", "behaviour"]
#: One set of cut points for everything, or one per behaviour group (keyed by behaviour).
Cuts = Thresholds | dict[str, Thresholds]
_INDEX = {level: i for i, level in enumerate(LEVELS)}


class LabelledPair(BaseModel):
    """One measured (response, category) with the reference rating it is compared against."""

    model_config = ConfigDict(frozen=True)

    unit: str  # what the train/test split keeps together (the response id)
    category: str
    measure: float
    reference: Level


class Agreement(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int
    n_shows: int  # reference medium or high
    kappa_quadratic: float | None
    kappa_linear: float | None
    spearman: float | None
    auroc: float | None
    exact: float  # share of pairs where the predicted level equals the reference
    confusion: list[list[int]]  # rows: reference low/medium/high; columns: predicted


class CalibrationReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    reference: str
    granularity: Granularity
    thresholds: dict[str, Thresholds]  # per behaviour group (all equal when global)
    train_fraction: float
    seed: int
    n_train_units: int
    n_test_units: int
    train: Agreement
    test: Agreement
    per_category: dict[str, Agreement]  # on the test part


# -- statistics ----------------------------------------------------------------------------------
def weighted_kappa(
    reference: Sequence[int], predicted: Sequence[int], weights: Weights = "quadratic", k: int = 3
) -> float | None:
    """Cohen's weighted kappa over k ordinal classes; None when it is undefined. The judges'
    kappa (scikit-learn's) with the k levels as its categories, so one definition serves both."""
    from intima.judges.stats import cohen_kappa

    if len(reference) != len(predicted):
        raise ValueError("reference and predicted differ in length")
    return cohen_kappa(reference, predicted, categories=range(k), weights=weights)


def _weight_matrix(weights: Weights, k: int) -> NDArray[np.float64]:
    # Only for the threshold search, which needs kappa for every pair of cut points at once
    # (a vectorised grid; scikit-learn per pair would be one call per cell).
    i, j = np.indices((k, k))
    dist = np.abs(i - j) / (k - 1)
    return dist**2 if weights == "quadratic" else dist


def auroc(scores: Sequence[float], positive: Sequence[bool]) -> float | None:
    """P(score of a random positive > score of a random negative), ties 1/2; None if one class
    (scikit-learn's ``roc_auc_score``)."""
    from sklearn.metrics import roc_auc_score

    pos = [bool(p) for p in positive]
    if all(pos) or not any(pos):
        return None
    return float(roc_auc_score(pos, np.asarray(scores, dtype=float)))


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    from scipy.stats import spearmanr

    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    rho = float(spearmanr(x, y).statistic)
    return None if math.isnan(rho) else rho


def level_of(pair: LabelledPair, cuts: Cuts) -> Level:
    if isinstance(cuts, Thresholds):
        return cuts.level(pair.measure)
    return cuts[group_of(pair.category)].level(pair.measure)


def agreement(pairs: Sequence[LabelledPair], cuts: Cuts) -> Agreement:
    reference = [_INDEX[p.reference] for p in pairs]
    predicted = [_INDEX[level_of(p, cuts)] for p in pairs]
    measures = [p.measure for p in pairs]
    confusion = [[0, 0, 0] for _ in LEVELS]
    for r, q in zip(reference, predicted, strict=True):
        confusion[r][q] += 1
    shows = [r >= 1 for r in reference]
    return Agreement(
        n=len(pairs),
        n_shows=sum(shows),
        kappa_quadratic=weighted_kappa(reference, predicted, "quadratic"),
        kappa_linear=weighted_kappa(reference, predicted, "linear"),
        spearman=spearman(measures, [float(r) for r in reference]),
        auroc=auroc(measures, shows),
        exact=(sum(r == q for r, q in zip(reference, predicted, strict=True)) / len(pairs))
        if pairs
        else 0.0,
        confusion=confusion,
    )


# -- fitting ---------------------------------------------------------------------------------------
def fit_thresholds(
    pairs: Sequence[LabelledPair], weights: Weights = "quadratic", max_candidates: int = 200
) -> Thresholds:
    """The (medium, high) cut points that maximise weighted kappa on ``pairs``.

    Every pair of cut positions between distinct sorted measures is tried (thinned to at most
    ``max_candidates`` positions by quantile), vectorised over a prefix-sum confusion table.
    Ties in kappa go to the lowest cut points; each threshold is the midpoint of its gap.
    """
    if not pairs:
        raise ValueError("cannot fit thresholds on no data")
    order = sorted(pairs, key=lambda p: p.measure)
    values = np.array([p.measure for p in order])
    classes = np.array([_INDEX[p.reference] for p in order])
    cuts = _candidate_cuts(values, max_candidates)
    prefix = np.zeros((len(values) + 1, 3))
    prefix[1:] = np.cumsum(np.eye(3)[classes], axis=0)
    kappas = _kappa_grid(prefix, cuts, _weight_matrix(weights, 3))
    flat = int(np.nanargmax(np.where(np.isnan(kappas), -np.inf, kappas)))
    i, j = divmod(flat, len(cuts))
    return Thresholds(medium=_cut_value(values, cuts[i]), high=_cut_value(values, cuts[j]))


def _candidate_cuts(values: NDArray[np.float64], max_candidates: int) -> NDArray[np.int64]:
    """Positions p (0..n) where a threshold can split sorted values: below-p vs p-and-above."""
    n = len(values)
    gaps = [p for p in range(1, n) if values[p - 1] < values[p]]
    cuts = np.array([0, *gaps, n], dtype=np.int64)
    if len(cuts) > max_candidates:
        picks = np.unique(np.linspace(0, len(cuts) - 1, max_candidates).round().astype(int))
        cuts = cuts[picks]
    return cuts


def _kappa_grid(
    prefix: NDArray[np.float64], cuts: NDArray[np.int64], w: NDArray[np.float64]
) -> NDArray[np.float64]:
    """kappa[i, j] for medium cut cuts[i] and high cut cuts[j]; NaN where j < i or undefined."""
    n = prefix[-1].sum()
    lo = prefix[cuts]  # (m, 3): reference-class counts predicted low, per medium cut
    hi = prefix[-1] - prefix[cuts]  # counts predicted high, per high cut
    low = lo[:, None, :]  # (m, 1, 3)
    high = hi[None, :, :]  # (1, m, 3)
    mid = prefix[-1] - low - high  # (m, m, 3)
    observed = np.stack([low.repeat(len(cuts), 1), mid, high.repeat(len(cuts), 0)], axis=-1)
    # observed[i, j, r, p]: reference class r predicted p
    row = observed.sum(axis=-1)  # (m, m, 3)
    col = observed.sum(axis=-2)  # (m, m, 3)
    expected = row[..., :, None] * col[..., None, :] / n
    num = (w * observed).sum(axis=(-1, -2))
    den = (w * expected).sum(axis=(-1, -2))
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1.0 - num / den
    valid = (cuts[None, :] >= cuts[:, None]) & (den > 0)
    return np.where(valid, kappa, np.nan)


def _cut_value(values: NDArray[np.float64], p: int) -> float:
    if p <= 0:
        return float(values[0]) - 1e-9  # everything at or above
    if p >= len(values):
        return float(values[-1]) + 1e-9  # nothing at or above
    return float((values[p - 1] + values[p]) / 2.0)


def split_units(
    units: Sequence[str], train_fraction: float, seed: int
) -> tuple[set[str], set[str]]:
    """Deterministic split of units (responses) into train and test; both non-empty if possible."""
    if not 0.0 < train_fraction < 1.0:
        raise ValueError("train_fraction must be strictly between 0 and 1")
    distinct = sorted(set(units))
    random.Random(seed).shuffle(distinct)  # noqa: S311 - a reproducible split, not security
    k = round(len(distinct) * train_fraction)
    k = min(max(k, 1), max(len(distinct) - 1, 1))
    return set(distinct[:k]), set(distinct[k:])


def fit_cuts(
    pairs: Sequence[LabelledPair],
    granularity: Granularity = "global",
    weights: Weights = "quadratic",
) -> dict[str, Thresholds]:
    """Thresholds per behaviour group: fitted per group, or one global fit copied to each."""
    groups = sorted({group_of(p.category) for p in pairs})
    if granularity == "global":
        shared = fit_thresholds(pairs, weights)
        return dict.fromkeys(groups, shared)
    return {
        g: fit_thresholds([p for p in pairs if group_of(p.category) == g], weights) for g in groups
    }


def calibrate(
    pairs: Sequence[LabelledPair],
    reference: str,
    train_fraction: float = 0.5,
    seed: int = 0,
    granularity: Granularity = "global",
    weights: Weights = "quadratic",
) -> CalibrationReport:
    """Fit thresholds on a train part of the responses, report agreement on the rest."""
    train_units, test_units = split_units([p.unit for p in pairs], train_fraction, seed)
    train = [p for p in pairs if p.unit in train_units]
    test = [p for p in pairs if p.unit in test_units]
    thresholds = fit_cuts(train, granularity, weights)
    missing = {group_of(p.category) for p in test} - set(thresholds)
    if missing:
        raise ValueError(f"no training data for behaviour group(s) {sorted(missing)}")
    categories = sorted({p.category for p in test})
    return CalibrationReport(
        reference=reference,
        granularity=granularity,
        thresholds=thresholds,
        train_fraction=train_fraction,
        seed=seed,
        n_train_units=len(train_units),
        n_test_units=len(test_units),
        train=agreement(train, thresholds),
        test=agreement(test, thresholds),
        per_category={
            c: agreement([p for p in test if p.category == c], thresholds) for c in categories
        },
    )
