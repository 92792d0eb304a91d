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
configurations.

The replicates are made one column at a time, into the same arrays for every column (the
sides' denominators, kept; one column's rates; its pairs' B - A), the denominator's once for
all its columns (:mod:`~intima.results.paired` gives the categories whose denominator equals
the labels' with the labels): the rates of several columns at once were a hundred megabytes of
fresh pages per call, and their page faults and cache misses most of the time. A column of
zeros (``no_majority`` for one judge) is 0 in every replicate with a rate: no product."""

from __future__ import annotations

import itertools
import warnings
from typing import Any, NamedTuple

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
        self._live = np.concatenate([[True], self.x[..., 1:].any(axis=(0, 1))])
        self._sides = _Sides(weights_t, self.x, scored, (self.ii, self.jj))
        self._den = self._sides.counts(0, np.empty((2 * len(ii), weights_t.shape[1])))
        has_rate = self._den > 0
        # sides with a replicate that weighs no judged answer: NaN there, in every column
        self._side_gaps = np.flatnonzero(~has_rate.all(axis=1))
        self._side_has = has_rate[self._side_gaps]
        both = self._sides.b_side(has_rate) & self._sides.a_side(has_rate)
        self.gaps = ~both.all(axis=1)  # pairs with a replicate where A or B has no rate
        self._n_valid = both[self.gaps].sum(axis=1)
        self._rates = np.empty_like(self._den)  # each column's rates, in turn
        self._d = np.empty((len(ii), weights_t.shape[1]))  # and its pairs' B - A

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
        gaps = self.gaps
        if not self._live[c]:  # a column of zeros: B - A is 0 wherever both have a rate
            boot = np.zeros(len(gaps))
            boot[gaps] = np.where(self._n_valid >= 2, 0.0, np.nan)  # nanvar's under 2: NaN
            return boot
        d = self._differences(c)
        if gaps.any():
            with warnings.catch_warnings():  # a pair with under 2 valid replicates: NaN, said so
                warnings.simplefilter("ignore", RuntimeWarning)
                at_gaps = np.nanvar(d[gaps], axis=1, ddof=1)
        d -= d.mean(axis=1, keepdims=True)  # (a gap's row turns NaN: replaced below)
        boot = np.einsum("pb,pb->p", d, d) / (d.shape[1] - 1)
        if gaps.any():
            boot[gaps] = at_gaps
        return boot

    def _differences(self, c: int) -> Float:
        """Every pair's B - A of column ``c`` in every replicate (NaN where either side has no
        rate), in the one array every column reuses."""
        rates = self._sides.counts(c, self._rates)
        with np.errstate(invalid="ignore", divide="ignore"):  # no rate there: NaN just below
            np.divide(rates, self._den, out=rates)
        if len(at := self._side_gaps):
            rates[at] = np.where(self._side_has, rates[at], np.nan)
        sides, d = self._sides, self._d
        return np.subtract(sides.b_side(rates), sides.a_side(rates, out=d), out=d)


class _Sides:
    """Each pair's two sides' weighted counts of one column in every replicate: rows [0, P)
    the B sides (configuration ``jj`` over the prompts ``ii`` was scored on), rows [P, 2P) the
    A sides (``ii`` over ``jj``'s), each half in blocks by the configuration whose scored
    prompts the side is counted over (a pair matrix's row-major pairs: the B sides already in
    pair order). Only the sides of the given pairs are made (a short run's pairs with the
    others are not every pair). ``x`` (n, k, columns) is 0 where unscored."""

    def __init__(
        self,
        weights_t: Float,
        x: Float,
        scored: NDArray[np.bool_],
        pairs: tuple[IntArray, IntArray],
    ) -> None:
        ii, jj = pairs
        n, k, _ = x.shape
        self.n_pairs = len(ii)
        ob, oa = np.argsort(ii, kind="stable"), np.argsort(jj, kind="stable")
        self._back_b, self._back_a = _inverse(ob), _inverse(oa)
        most = 2 * scored.sum(axis=0) > n  # on most: all the prompts less the few unscored
        full = None  # every configuration over every prompt (k, columns, B), when needed
        if most.any():
            full = (x.reshape(n, -1).T @ weights_t).reshape(k, x.shape[2], weights_t.shape[1])
        self._blocks: list[tuple[Float, list[_Part]]] = []
        for m in range(k):
            rows = ~scored[:, m] if most[m] else scored[:, m]
            parts = []
            for off, over, cfg in ((0, ii[ob], jj[ob]), (self.n_pairs, jj[oa], ii[oa])):
                lo, hi = np.searchsorted(over, [m, m + 1])
                if lo < hi:
                    got = cfg[lo:hi]
                    xs = np.ascontiguousarray(x[rows][:, got, :].transpose(2, 1, 0))
                    runs = []
                    if full is not None and most[m]:  # full's rows of consecutive configurations
                        runs = [(a, z, full[got[a] : got[a] + z - a]) for a, z in _runs(got)]
                    parts.append(_Part(off + lo, off + hi, xs, runs))
            if parts:
                self._blocks.append((np.ascontiguousarray(weights_t[rows]), parts))

    def counts(self, c: int, out: Float) -> Float:
        """Column ``c``'s sides (2P, B) in ``out``: a side counted over prompts its
        configuration was scored on few of is the product over those; over most, the product
        over all of them less the one over the few unscored."""
        for w, parts in self._blocks:
            for part in parts:
                t = out[part.lo : part.hi]
                np.matmul(part.xs[c], w, out=t)
                for a, z, full in part.runs:
                    np.subtract(full[:, c], t[a:z], out=t[a:z])
        return out

    def b_side(self, sides: NDArray[Any]) -> NDArray[Any]:
        """The B sides of ``sides`` (2P, ...) in pair order (a view when already so)."""
        half = sides[: self.n_pairs]
        return half if self._back_b is None else half[self._back_b]

    def a_side(self, sides: NDArray[Any], out: NDArray[Any] | None = None) -> NDArray[Any]:
        """The A sides in pair order: a view when already so, else taken (into ``out``)."""
        half = sides[self.n_pairs :]
        if self._back_a is None:
            return half
        # mode="clip": "raise" buffers the output (the positions are in range)
        return np.take(half, self._back_a, axis=0, out=out, mode="clip")


class _Part(NamedTuple):
    """Sides ``lo:hi`` of one block: ``xs`` (columns, their configurations, the block's
    prompts), and where those prompts are the few unscored, ``runs``: positions ``a:z`` of the
    part with the rows of the product over all prompts they are subtracted from."""

    lo: int
    hi: int
    xs: Float
    runs: list[tuple[int, int, Float]]


def _inverse(order: IntArray) -> IntArray | None:
    """Where each item went under ``order``; None when nowhere (``order`` is the identity)."""
    if (order == np.arange(len(order))).all():
        return None
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return back


def _runs(cfg: IntArray) -> list[tuple[int, int]]:
    """``cfg[a:z]``, runs of consecutive configurations (a board's every pair: two a block)."""
    cut = [0, *(np.flatnonzero(np.diff(cfg) != 1) + 1).tolist(), len(cfg)]
    return list(itertools.pairwise(cut))
