"""Many pairs of configurations, each over its own judged pairs (the prompts both were scored
on), at once: what :mod:`intima.results.paired` works out for one pair with its own product
and :func:`~intima.results.paired._column`, for every such pair of a column in a few array
operations.

The products are shared by configuration, not made per pair. A pair's A-side sum over its
judged prompts is configuration A's counts summed over the prompts *B* was scored on (A's
counts are already 0 where A was not scored): ``T[m, i]``, configuration ``i`` over the
prompts ``S_m`` configuration ``m`` was scored on, serves the A side of pair ``(i, m)`` and the
B side of pair ``(m, i)``. ``T[m]`` is one product over ``S_m``, or when ``m`` was scored on
most prompts, the product over all of them less the one over the few it was not: the cost
follows the smaller of the two sets, so a judge that leaves a few answers unscored and a judge
on a small sample both cost a fraction of the dense product of every pair (which took most of
a board's build). The subtraction rounds at ~1e-13 of a sum of hundreds of weights (exactly 0
with whole-number weights): a pair's denominator over its judged prompts, with the board's
Rao-Wu rescaled weights (never 0), is never that close to 0, so the rounding cannot change
which replicates have a rate. The same numbers as one pair alone, to 1e-15 on a board of 50
configurations."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

Float = NDArray[np.float64]
IntArray = NDArray[np.intp]


class JudgedPairs:
    """Pairs (A = ``ii``, B = ``jj``, positions in ``x``'s configurations), each counted over
    its own judged prompts: those where both have a positive denominator ``x[..., 0]``.

    ``weights_t``: the replicate weights of ``x``'s prompts, transposed (n, B); ``x``: the
    counts (n, configurations, columns), column 0 the denominator of the others."""

    def __init__(
        self, weights_t: Float, x: Float, ii: NDArray[np.intp], jj: NDArray[np.intp]
    ) -> None:
        used, inv = np.unique(np.concatenate([ii, jj]), return_inverse=True)
        self.ii, self.jj = inv[: len(ii)], inv[len(ii) :]  # positions in ``used``
        x = x[:, used, :]
        n, k, n_col = x.shape
        scored = x[:, :, 0] > 0  # S_m: scored[:, m]
        s = scored.astype(np.float64)
        self.n_p = (s.T @ s)[self.ii, self.jj].astype(np.int64)  # each pair's judged prompts
        self.x = x * s[..., None]  # a configuration's counts where it was scored
        # tot[m, i, c]: configuration i's count over S_m (the points of the pairs' rates)
        self.tot = (s.T @ self.x.reshape(n, k * n_col)).reshape(k, k, n_col)
        self.s = s
        pairs = (self.ii, self.jj)
        self.rates, has_rate, pos = _replicate_rates(weights_t, self.x, scored, pairs)
        self.pos_a, self.pos_b = pos[: len(ii)], pos[len(ii) :]
        # pairs with a replicate where A or B has no rate
        self.gaps = ~(has_rate[self.pos_a] & has_rate[self.pos_b]).all(axis=1)

    def column(self, c: int) -> tuple[Float, Float, Float]:
        """Column ``c``'s point rates (pairs, 2: A, B), the replicates' variance of B - A and
        its simple-random-sample variance (pairs), as :func:`~intima.results.paired._column`
        gives each pair over its judged prompts."""
        ii, jj, tot = self.ii, self.jj, self.tot
        den = np.stack([tot[jj, ii, 0], tot[ii, jj, 0]], axis=1)  # (pairs, A/B)
        rate = np.stack([tot[jj, ii, c], tot[ii, jj, c]], axis=1) / den
        return rate, self._boot(c), self._srs(c, rate, den)

    def _srs(self, c: int, rate: Float, den: Float) -> Float:
        """The simple-random-sample variance of B - A: of the linearised ratios' per-prompt
        differences ``z_B - z_A``, ``z = (num - rate den) / sum(den)`` over the pair's judged
        prompts (whose mean is 0), from sums of products over the prompts (k x k) instead of
        per-prompt arrays of every pair."""
        ii, jj, s = self.ii, self.jj, self.s
        a, o = self.x[..., c], self.x[..., 0]  # 0 where unscored: a_i a_j sums over S_i & S_j
        sq = [s.T @ v for v in (a * a, a * o, o * o)]  # [m, i]: over S_m

        def own(m: NDArray[np.intp], i: NDArray[np.intp], r: Float, d: Float) -> Float:
            return (sq[0][m, i] - 2 * r * sq[1][m, i] + r * r * sq[2][m, i]) / (d * d)

        ra, rb, da, db = rate[:, 0], rate[:, 1], den[:, 0], den[:, 1]
        aa, ao, oo = a.T @ a, a.T @ o, o.T @ o  # [i, j]: over S_i & S_j
        cross = (aa[ii, jj] - rb * ao[ii, jj] - ra * ao[jj, ii] + ra * rb * oo[ii, jj]) / (da * db)
        n_p = self.n_p
        return (own(jj, ii, ra, da) + own(ii, jj, rb, db) - 2 * cross) * (n_p / (n_p - 1))

    def _boot(self, c: int) -> Float:
        """The variance of B - A's rates over the replicates (ddof 1); where a replicate has
        no rate (no weighted judged answer), over the replicates that have one."""
        rates, gaps = self.rates[c - 1], self.gaps
        d = rates[self.pos_b]
        d -= rates[self.pos_a]
        boot = np.empty(len(d))
        whole = d[~gaps] if gaps.any() else d
        whole -= whole.mean(axis=1, keepdims=True)
        boot[~gaps] = np.einsum("pb,pb->p", whole, whole) / (d.shape[1] - 1)
        if gaps.any():
            with warnings.catch_warnings():  # a pair with under 2 valid replicates: NaN, said so
                warnings.simplefilter("ignore", RuntimeWarning)
                boot[gaps] = np.nanvar(d[gaps], axis=1, ddof=1)
        return boot


def _replicate_rates(
    weights_t: Float, x: Float, scored: NDArray[np.bool_], pairs: tuple[IntArray, IntArray]
) -> tuple[Float, NDArray[np.bool_], IntArray]:
    """``rates[c - 1, pos[p]]``: pair p's A-side rate of column c (over column 0) in every
    replicate (configuration ``ii`` over the prompts ``jj`` was scored on), at
    ``pos[pairs + p]`` its B side; NaN where the replicate weighs no judged answer
    (``has_rate`` False). ``x`` (n, k, columns) is 0 where unscored. Only the sides of the
    given pairs are made (a short run's pairs with the others are not every pair), in blocks
    by the configuration whose scored prompts they are counted over."""
    ii, jj = pairs
    n, k, n_col = x.shape
    b = weights_t.shape[1]
    over = np.concatenate([jj, ii])  # the side's prompts: those this configuration was scored on
    order = np.argsort(over, kind="stable")
    pos = np.empty_like(order)
    pos[order] = np.arange(len(order))
    cfg_of = np.concatenate([ii, jj])[order]
    ends = np.cumsum(np.bincount(over, minlength=k))
    rates = np.empty((n_col - 1, len(order), b))
    has_rate = np.empty((len(order), b), dtype=bool)
    full: Float | None = None
    # one product at a time into the same pages (fresh arrays of this size each cost page
    # faults); a block holds at most the k - 1 partners of one configuration
    buf = np.empty((2, k * n_col, b))
    for m in range(k):
        lo, hi = (ends[m - 1] if m else 0), ends[m]
        if lo == hi:
            continue
        cfg = cfg_of[lo:hi]
        sel = x[:, cfg, :].reshape(n, -1)
        t, part = buf[0, : sel.shape[1]], buf[1, : sel.shape[1]]
        on = scored[:, m]
        if 2 * on.sum() <= n:  # scored on few (a judge's sample): the product over those
            np.matmul(sel[on].T, weights_t[on], out=t)
        else:  # on most: the product over all of them less the one over the few unscored
            if full is None:
                full = (x.reshape(n, -1).T @ weights_t).reshape(k, n_col, b)
            # mode="clip": "raise" buffers the output (cfg is in range)
            np.take(full, cfg, axis=0, out=t.reshape(len(cfg), n_col, b), mode="clip")
            np.matmul(sel[~on].T, weights_t[~on], out=part)
            t -= part
        tm = t.reshape(len(cfg), n_col, b)
        ok = np.greater(tm[:, 0], 0.0, out=has_rate[lo:hi])
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(tm[:, 1:].transpose(1, 0, 2), tm[None, :, 0], out=rates[:, lo:hi])
        if not ok.all():
            rates[:, lo:hi][:, ~ok] = np.nan
    return rates, has_rate, pos
