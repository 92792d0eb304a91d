"""Is a scorer's error tied to response length? A diagnostic for ``intima validate`` and the
validation card.

Judges are known to favour long answers, and the community's affect formula has a length
factor (LR), so a reader should be able to check whether a scorer errs more (or less) on long
responses. For a labelled set, a row's *error* is 1 where the scorer's primary label differs
from the reference label (rows it could not score are left out), and its length is the
response's word count. Two figures:

* **the slope**: the least-squares line of error on ``log2(words)``, i.e. how many points the
  error rate moves per doubling of length, with a seeded percentile-bootstrap interval (rows
  resampled; ``benchmarks/bench_length.py`` checks its coverage by simulation);
* **the error in length quartiles**: the rows cut at the 25/50/75% points of their word
  counts, each quarter's error rate with its Wilson interval (scipy's ``binomtest``).

A diagnostic, not a correction: a slope whose interval excludes 0 says the scorer's error
depends on length on this set; it moves no share on the board.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: Fewer scored rows than this give no length figures (a slope from a handful of rows).
MIN_ROWS = 20


def words(text: str) -> int:
    """A response's length: its whitespace-separated words."""
    return len(text.split())


def length_effect(
    errors: Sequence[bool], lengths: Sequence[int], *, b: int = 1000, seed: int = 0
) -> dict[str, Any] | None:
    """``{"unit": "words", "n", "slope", "slope_lo", "slope_hi", "quartiles": [...]}`` (see
    the module docstring); the slope in error-rate points (0-1) per doubling of length. None
    with fewer than :data:`MIN_ROWS` rows or one length for all."""
    e = np.asarray(errors, dtype=np.float64)
    w = np.asarray(lengths, dtype=np.float64)
    if len(e) != len(w):
        raise ValueError(f"{len(e)} errors but {len(w)} lengths; give one length per row")
    if len(e) < MIN_ROWS or np.ptp(w) == 0:
        return None
    x = np.log2(np.maximum(w, 1.0))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(e), size=(b, len(e)))
    reps = _slopes(x[idx], e[idx])
    reps = reps[np.isfinite(reps)]  # a replicate of one length only has no slope
    lo, hi = np.quantile(reps, [0.025, 0.975]) if len(reps) else (np.nan, np.nan)
    return {
        "unit": "words",
        "n": len(e),
        "slope": float(_slopes(x[None, :], e[None, :])[0]),
        "slope_lo": float(lo),
        "slope_hi": float(hi),
        "quartiles": _quartiles(e, w),
    }


def _slopes(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Least-squares slope of each row of ``e`` on the same row of ``x``."""
    xc = x - x.mean(axis=1, keepdims=True)
    sxx = (xc * xc).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((xc * (e - e.mean(axis=1, keepdims=True))).sum(axis=1) / sxx)


def _quartiles(e: np.ndarray, w: np.ndarray) -> list[dict[str, Any]]:
    from scipy.stats import binomtest  # scipy costs ~0.3 s to import: only when used

    cuts = np.quantile(w, [0.25, 0.5, 0.75], method="lower")
    quarter = np.searchsorted(cuts, w, side="left")  # 0: w <= first cut, ..., 3: above the last
    out = []
    for q in range(4):
        inside = quarter == q
        n = int(inside.sum())
        if n == 0:  # many rows of one length: a quarter can be empty
            continue
        rate = float(e[inside].mean())
        lo, hi = binomtest(int(e[inside].sum()), n).proportion_ci(method="wilson")
        out.append(
            {
                "words_lo": int(w[inside].min()),
                "words_hi": int(w[inside].max()),
                "n": n,
                "errors": int(e[inside].sum()),
                "error": rate,
                "error_lo": float(lo),
                "error_hi": float(hi),
            }
        )
    return out


def length_note(effect: dict[str, Any]) -> str:
    """One line: the slope with its interval, then each quartile's error rate."""
    slope = (
        f"{100 * effect['slope']:+.1f} points of error per doubling of length "
        f"[{100 * effect['slope_lo']:+.1f}, {100 * effect['slope_hi']:+.1f}]"
    )
    parts = [
        f"{q['words_lo']}-{q['words_hi']} words {100 * q['error']:.1f}% "
        f"[{100 * q['error_lo']:.1f}, {100 * q['error_hi']:.1f}] (n {q['n']})"
        for q in effect["quartiles"]
    ]
    return f"{slope}; by length quartile: {'; '.join(parts)}"
