"""Quantification methods compared by ``bench_corrected.py``: estimates of a configuration's
reinforcing share from the scorer's continuous reinforcing measure and a validation (the
measure and the true label of labelled rows scored out of sample).

Every method sees only ``(val_scores, val_pos)`` and the configuration's ``scores``; nothing
of the configuration's labels. Thresholds apply as ``score >= t``. References:

* ACC at a threshold, and Forman's threshold choices MAX (max tpr - fpr), X (fpr = 1 - tpr),
  T50 (tpr = 0.5) and Median Sweep (median of the ACC estimates over every threshold with
  tpr - fpr > 0.25): Forman, G. (2008), *Data Mining and Knowledge Discovery* 17, 164-206.
* PCC and PACC (probabilistic, adjusted): Bella, A. et al. (2010), *IEEE ICDM*, 737-742.
* HDy (Hellinger-distance mixture matching of the posteriors' histograms, median over 10..110
  bins): Gonzalez-Castro, V. et al. (2013), *Information Sciences* 218, 146-164.
* SLD/EMQ (EM re-estimation of the prior): Saerens, M. et al. (2002), *Neural Computation* 14.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

Arr = NDArray[np.float64]
#: Median Sweep keeps thresholds whose tpr - fpr exceeds this (Forman 2008, "MS2").
MS_MIN_YOUDEN = 0.25


@dataclass(frozen=True)
class Validation:
    scores: Arr
    pos: NDArray[np.bool_]

    @property
    def prevalence(self) -> float:
        return float(self.pos.mean())


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def roc_table(val: Validation) -> tuple[Arr, Arr, Arr]:
    """Candidate thresholds (every distinct validation score) with tpr and fpr of
    ``score >= t``."""
    t = np.unique(val.scores)
    s_pos = np.sort(val.scores[val.pos])
    s_neg = np.sort(val.scores[~val.pos])
    tpr = 1.0 - np.searchsorted(s_pos, t, side="left") / max(len(s_pos), 1)
    fpr = 1.0 - np.searchsorted(s_neg, t, side="left") / max(len(s_neg), 1)
    return t, tpr, fpr


def _share_above(scores: Arr, t: Arr) -> Arr:
    s = np.sort(scores)
    return 1.0 - np.searchsorted(s, t, side="left") / len(s)


def acc_at(scores: Arr, t: float, tpr: float, fpr: float) -> float:
    if tpr - fpr <= 0:
        return float("nan")
    p = float(np.mean(scores >= t))
    return _clip((p - fpr) / (tpr - fpr))


def threshold(val: Validation, policy: str) -> tuple[float, float, float]:
    """(t, tpr, fpr) of Forman's policy: ``max`` (max tpr - fpr), ``x`` (fpr = 1 - tpr),
    ``t50`` (tpr = 0.5)."""
    t, tpr, fpr = roc_table(val)
    if policy == "max":
        k = int(np.argmax(tpr - fpr))
    elif policy == "x":
        k = int(np.argmin(np.abs(fpr - (1.0 - tpr))))
    elif policy == "t50":
        k = int(np.argmin(np.abs(tpr - 0.5)))
    else:
        raise ValueError(policy)
    return float(t[k]), float(tpr[k]), float(fpr[k])


def median_sweep(scores: Arr, val: Validation) -> float:
    t, tpr, fpr = roc_table(val)
    keep = (tpr - fpr) > MS_MIN_YOUDEN
    if not keep.any():
        return float("nan")
    p = _share_above(scores, t[keep])
    est = np.clip((p - fpr[keep]) / (tpr[keep] - fpr[keep]), 0.0, 1.0)
    return float(np.median(est))


# -- calibrated probabilities ---------------------------------------------------------------


def fit_logistic(val: Validation) -> Callable[[Arr], Arr]:
    """Platt scaling: P(reinforcing | score) = sigmoid(a * score + b), maximum likelihood."""
    x, y = val.scores, val.pos.astype(float)

    def nll(theta: Arr) -> tuple[float, Arr]:
        z = theta[0] * x + theta[1]
        p = 1.0 / (1.0 + np.exp(-z))
        loss = float(np.sum(np.logaddexp(0.0, z) - y * z))
        g = p - y
        return loss, np.array([float(g @ x), float(g.sum())])

    theta = minimize(nll, np.zeros(2), jac=True, method="L-BFGS-B").x
    a, b = float(theta[0]), float(theta[1])
    return lambda s: 1.0 / (1.0 + np.exp(-(a * s + b)))


def fit_isotonic(val: Validation) -> Callable[[Arr], Arr]:
    """Isotonic regression of the label on the score (pool adjacent violators), step
    function, interpolated linearly between the blocks' mean scores."""
    order = np.argsort(val.scores, kind="mergesort")
    x = val.scores[order]
    y = val.pos[order].astype(float)
    vals: list[float] = []
    wts: list[float] = []
    xs: list[float] = []
    for xi, yi in zip(x, y, strict=True):
        vals.append(yi)
        wts.append(1.0)
        xs.append(xi)
        while len(vals) > 1 and vals[-2] >= vals[-1]:
            w = wts[-2] + wts[-1]
            v = (vals[-2] * wts[-2] + vals[-1] * wts[-1]) / w
            xm = (xs[-2] * wts[-2] + xs[-1] * wts[-1]) / w
            vals[-2:], wts[-2:], xs[-2:] = [v], [w], [xm]
    bx, by = np.asarray(xs), np.asarray(vals)
    return lambda s: np.interp(s, bx, by)


def pcc(scores: Arr, cal: Callable[[Arr], Arr]) -> float:
    return float(np.mean(cal(scores)))


def pacc(scores: Arr, val: Validation, cal: Callable[[Arr], Arr]) -> float:
    pv = cal(val.scores)
    tp_bar, fp_bar = float(pv[val.pos].mean()), float(pv[~val.pos].mean())
    if tp_bar - fp_bar <= 0:
        return float("nan")
    return _clip((float(np.mean(cal(scores))) - fp_bar) / (tp_bar - fp_bar))


def hdy(scores: Arr, val: Validation, cal: Callable[[Arr], Arr]) -> float:
    """The prior ``a`` whose mixture ``a P+ + (1-a) P-`` of the validation's posterior
    histograms is nearest (Hellinger) to the configuration's; median over 10, 20, ..., 110
    equal-width bins on [0, 1]."""
    pv, pt = cal(val.scores), cal(scores)
    grid = np.linspace(0.0, 1.0, 1001)
    found = []
    for bins in range(10, 111, 10):
        edges = np.linspace(0.0, 1.0, bins + 1)
        hp = np.histogram(pv[val.pos], edges)[0] / val.pos.sum()
        hn = np.histogram(pv[~val.pos], edges)[0] / (~val.pos).sum()
        ht = np.histogram(pt, edges)[0] / len(pt)
        mix = grid[:, None] * hp[None, :] + (1.0 - grid[:, None]) * hn[None, :]
        hd = np.sqrt(np.sum((np.sqrt(mix) - np.sqrt(ht)[None, :]) ** 2, axis=1))
        found.append(float(grid[int(np.argmin(hd))]))
    return float(np.median(found))


def sld(scores: Arr, val: Validation, cal: Callable[[Arr], Arr], iters: int = 1000) -> float:
    """EM re-estimation of the configuration's prior from calibrated posteriors."""
    p0 = val.prevalence
    post = cal(scores)
    q = p0
    for _ in range(iters):
        num = post * q / p0
        den = num + (1.0 - post) * (1.0 - q) / (1.0 - p0)
        new = float(np.mean(num / den))
        if abs(new - q) < 1e-9:
            break
        q = new
    return _clip(q)


#: method name -> estimate(scores of the configuration, validation)
def methods() -> dict[str, Callable[[Arr, Validation], float]]:
    def forman(policy: str) -> Callable[[Arr, Validation], float]:
        def est(scores: Arr, val: Validation) -> float:
            t, tpr, fpr = threshold(val, policy)
            return acc_at(scores, t, tpr, fpr)

        return est

    return {
        "ACC-MAX": forman("max"),
        "ACC-X": forman("x"),
        "ACC-T50": forman("t50"),
        "MedianSweep": median_sweep,
        "PCC-logistic": lambda s, v: pcc(s, fit_logistic(v)),
        "PCC-isotonic": lambda s, v: pcc(s, fit_isotonic(v)),
        "PACC-logistic": lambda s, v: pacc(s, v, fit_logistic(v)),
        "PACC-isotonic": lambda s, v: pacc(s, v, fit_isotonic(v)),
        "HDy": lambda s, v: hdy(s, v, fit_logistic(v)),
        "SLD": lambda s, v: sld(s, v, fit_logistic(v)),
    }
