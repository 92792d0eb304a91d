"""Rank agreement of a scorer's continuous score with numeric grades (``intima validate`` on
graded sets): Spearman's rho and Kendall's tau-b as ``scipy.stats`` computes them, and a seeded
percentile bootstrap over items.

* :func:`spearman`, :func:`kendall`: ``scipy.stats.spearmanr`` / ``kendalltau`` (tau-b, ties
  counted); ``None`` where scipy gives NaN (a constant side, fewer than two items).
* :func:`replicates`: replicate r resamples the items ``rng.integers(0, n, size=(b, n))[r]``
  (``rng = numpy.random.default_rng(seed)``) and is scipy's statistic on that resample: Spearman
  for all replicates at once (ranks along an axis), Kendall one replicate at a time.
* :func:`rank_intervals`: the percentile interval of the replicates that are defined.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

Float = NDArray[np.float64]


def _pair(x: ArrayLike, y: ArrayLike) -> tuple[Float, Float]:
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"{a.size} scores but {b.size} grades")
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("scores or grades contain NaN")
    return a, b


def _defined(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    from scipy.stats import spearmanr  # scipy.stats costs ~1 s to import: only when used

    a, b = _pair(x, y)
    if a.size < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant side: scipy warns and returns NaN
        return _defined(float(spearmanr(a, b).statistic))


def kendall(x: ArrayLike, y: ArrayLike) -> float | None:
    from scipy.stats import kendalltau

    a, b = _pair(x, y)
    if a.size < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _defined(float(kendalltau(a, b).statistic))


def replicates(x: ArrayLike, y: ArrayLike, b: int = 1000, seed: int = 0) -> tuple[Float, Float]:
    """(Spearman, Kendall) of each bootstrap resample; NaN where a resample is undefined."""
    from scipy.stats import kendalltau, rankdata

    a, g = _pair(x, y)
    if b < 1:
        raise ValueError("b must be at least 1")
    idx = np.random.default_rng(seed).integers(0, a.size, size=(b, a.size))
    rho = np.empty(b)
    for start in range(0, b, 256):  # bounded memory: (block, n) at a time
        blk = idx[start : start + 256]
        ra, rg = rankdata(a[blk], axis=1), rankdata(g[blk], axis=1)
        ra -= ra.mean(axis=1, keepdims=True)
        rg -= rg.mean(axis=1, keepdims=True)
        den = np.sqrt((ra * ra).sum(axis=1) * (rg * rg).sum(axis=1))
        num = (ra * rg).sum(axis=1)
        rho[start : start + 256] = np.divide(
            num, den, out=np.full(num.shape, np.nan), where=den > 0
        )
    tau = np.empty(b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(b):
            tau[r] = kendalltau(a[idx[r]], g[idx[r]]).statistic
    return np.clip(rho, -1.0, 1.0), tau


def rank_intervals(
    x: ArrayLike, y: ArrayLike, b: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict[str, tuple[float, float] | None]:
    """``{"spearman": (lo, hi) | None, "kendall": ...}``: None when no replicate is defined."""
    a, g = _pair(x, y)
    if a.size < 2:
        return {"spearman": None, "kendall": None}
    alpha = (1.0 - confidence) / 2.0
    out: dict[str, tuple[float, float] | None] = {}
    for name, reps in zip(("spearman", "kendall"), replicates(a, g, b, seed), strict=True):
        kept = reps[~np.isnan(reps)]
        if kept.size == 0:
            out[name] = None
            continue
        lo, hi = np.quantile(kept, [alpha, 1.0 - alpha])
        out[name] = (float(lo), float(hi))
    return out
