"""Many pairs of configurations, each over its own judged pairs (the prompts both were scored
on), at once: what :mod:`intima.results.paired` works out for one pair with its own product
and :func:`~intima.results.paired._column`, for every such pair of a column in a few array
operations (a loop over the pairs took most of a board's build). Each prompt outside a
pair's judged ones is weighted 0."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

Float = NDArray[np.float64]


def weighted(weights: Float, vals: Float) -> Float:
    """``weights`` (B, n) times ``vals`` (n, pairs, ...) over the prompts: (B, pairs, ...),
    a block of pairs at a time (the product of every pair at once can take gigabytes)."""
    n, n_p = vals.shape[:2]
    rest = vals.shape[2:]
    width = int(np.prod(rest))
    step = max(1, (1 << 22) // max(1, width * max(n, weights.shape[0])))
    out = np.empty((weights.shape[0], n_p, *rest))
    for s in range(0, n_p, step):
        block = vals[:, s : s + step].reshape(n, -1)
        out[:, s : s + step] = (weights @ block).reshape(weights.shape[0], -1, *rest)
    return out


def pair_columns(
    reps: tuple[Float, Float],
    vals: tuple[Float, Float],
    tot: tuple[Float, Float],
    both: NDArray[np.bool_],
    n_p: NDArray[np.intp],
) -> tuple[Float, Float, Float]:
    """The paired module's ``_column`` of many pairs, each over its own judged prompts
    (``both``, ``n_p`` of them): the point rates (pairs, 2), the replicates' variance of
    B - A and its simple-random-sample variance (pairs). ``reps``: the numerator and
    denominator replicates (B, pairs, 2); ``vals``: the per-prompt counts (n, pairs, 2), 0
    outside the judged prompts; ``tot``: their sums (pairs, 2)."""
    (num_rep, den_rep), (num, den), (num_sum, den_sum) = reps, vals, tot
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = num_sum / den_sum
        rr = np.where(den_rep > 0, num_rep / np.where(den_rep > 0, den_rep, 1.0), np.nan)
        z = (num - rate[None] * den) / den_sum[None]
    z = np.where(np.isfinite(z) & both[..., None], z, 0.0)
    zc = (z - (z.sum(axis=0) / n_p[:, None])[None]) * both[..., None]
    g_aa, g_bb = (zc[..., 0] ** 2).sum(axis=0), (zc[..., 1] ** 2).sum(axis=0)
    g_ab = (zc[..., 0] * zc[..., 1]).sum(axis=0)
    srs = (g_aa + g_bb - 2 * g_ab) * (n_p / (n_p - 1))
    b = rr.shape[0]
    # The replicates' covariance of the two rates (np.cov's), or where a replicate has no rate,
    # the variance of B - A over the replicates that have one.
    xc = rr - rr.mean(axis=0)
    c_aa, c_bb = (xc[..., 0] ** 2).sum(axis=0), (xc[..., 1] ** 2).sum(axis=0)
    c_ab = (xc[..., 0] * xc[..., 1]).sum(axis=0)
    boot = (c_aa + c_bb - 2 * c_ab) * (1.0 / (b - 1))
    gaps = np.isnan(rr).any(axis=(0, 2))
    if gaps.any():
        with warnings.catch_warnings():  # a pair with under 2 valid replicates: NaN, said so
            warnings.simplefilter("ignore", RuntimeWarning)
            d = rr[:, gaps, 1] - rr[:, gaps, 0]
            boot[gaps] = np.nanvar(d, axis=0, ddof=1)
    return rate, boot, srs
