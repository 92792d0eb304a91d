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

The replicates are made one column at a time, part by part: a part is the sides counted over
one configuration's scored prompts (at most k - 1 sides), small enough to stay in the
processor's cache while its counts, its rates and, for the A sides, its pairs' B - A and their
variance are made. Only the sides' denominators (made once for every column over them:
:mod:`~intima.results.paired` gives the categories whose denominator equals the labels' with
the labels) and one column's B sides' rates are board-sized, and they are reused: the rates of
every column of a denominator at once were a hundred megabytes of fresh pages per call, whose
page faults and cache misses took most of the time. A column of zeros (``no_majority`` for
one judge) is 0 in every replicate with a rate: no product."""

from __future__ import annotations

import itertools
import warnings
from functools import cached_property
from typing import NamedTuple

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
        self._denominators(weights_t.shape[1])

    def _denominators(self, b: int) -> None:
        """Every side's denominator in every replicate, kept for every column, and where a
        replicate has no rate; the arrays every column reuses."""
        sides, n_pairs = self._sides, len(self.ii)
        self._den = np.empty((2 * n_pairs, b))
        for part in sides.parts():
            sides.count(part, 0, self._den[part.lo : part.hi])
        has_rate = self._den > 0
        both = has_rate[sides.b_row] & has_rate[sides.a_row]  # (pairs, B)
        # pairs with a replicate where A or B has no rate
        self.gaps: NDArray[np.bool_] = np.asarray(~both.all(axis=1))
        self._n_valid = both[self.gaps].sum(axis=1)
        self._holes = {p.lo: _holes(has_rate[p.lo : p.hi]) for p in sides.parts()}
        self._gaps = [g if (g := self.gaps[at]).any() else None for _, at, _ in sides.a_parts]
        self._rb = np.empty((n_pairs, b))  # the B sides' rates of the column at hand
        self._buf = np.empty((2, sides.widest, b))  # an A part's rates, its pairs' B sides

    def column(self, c: int) -> tuple[Float, Float, Float]:
        """Column ``c``'s point rates (pairs, 2: A, B), the replicates' variance of B - A and
        its simple-random-sample variance (pairs), as :func:`~intima.results.paired._column`
        gives each pair over its judged prompts."""
        ii, jj, tot = self.ii, self.jj, self.tot
        den = np.stack([tot[jj, ii, 0], tot[ii, jj, 0]], axis=1)  # (pairs, A/B)
        rate = np.stack([tot[jj, ii, c], tot[ii, jj, c]], axis=1) / den
        return rate, self._boot(c), self._srs(c, rate, den)

    @cached_property
    def _den_squares(self) -> tuple[Float, Float]:
        """The denominator's sums of squares over ``S_m`` [m, i] and over ``S_i & S_j``
        [i, j], the same for every column."""
        o = self.x[..., 0]
        return self.s.T @ (o * o), o.T @ o

    def _srs(self, c: int, rate: Float, den: Float) -> Float:
        """The simple-random-sample variance of B - A: of the linearised ratios' per-prompt
        differences ``z_B - z_A``, ``z = (num - rate den) / sum(den)`` over the pair's judged
        prompts (whose mean is 0), from sums of products over the prompts (k x k) instead of
        per-prompt arrays of every pair."""
        ii, jj, s = self.ii, self.jj, self.s
        a, o = self.x[..., c], self.x[..., 0]  # 0 where unscored: a_i a_j sums over S_i & S_j
        oo_own, oo = self._den_squares
        sq = [s.T @ (a * a), s.T @ (a * o), oo_own]  # [m, i]: over S_m

        def own(m: NDArray[np.intp], i: NDArray[np.intp], r: Float, d: Float) -> Float:
            return (sq[0][m, i] - 2 * r * sq[1][m, i] + r * r * sq[2][m, i]) / (d * d)

        ra, rb, da, db = rate[:, 0], rate[:, 1], den[:, 0], den[:, 1]
        aa, ao = a.T @ a, a.T @ o  # [i, j]: over S_i & S_j
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
        boot = np.empty(len(gaps))
        with np.errstate(invalid="ignore", divide="ignore"):  # no rate: NaN (_rates)
            for part in self._sides.b_parts:  # the B sides' rates, kept for the A sides
                self._rates(part, c, self._rb[part.lo : part.hi])
            for (part, pairs, b_rows), at_gaps in zip(self._sides.a_parts, self._gaps, strict=True):
                rows = self._buf[:, : part.hi - part.lo]
                d = self._rates(part, c, rows[0])
                got = np.take(self._rb, b_rows, axis=0, out=rows[1], mode="clip")
                boot[pairs] = _variance(np.subtract(got, d, out=d), at_gaps)
        return boot

    def _rates(self, part: _Part, c: int, out: Float) -> Float:
        """Column ``c``'s rates of ``part``'s sides in every replicate, in ``out``: NaN where
        the replicate weighs no judged answer."""
        self._sides.count(part, c, out)
        np.divide(out, self._den[part.lo : part.hi], out=out)
        if (holes := self._holes[part.lo]) is not None:
            at, has = holes
            out[at] = np.where(has, out[at], np.nan)
        return out


def _variance(d: Float, gaps: NDArray[np.bool_] | None) -> Float:
    """Each row's variance (ddof 1), over its numbers where it has a NaN (``gaps``); ``d`` is
    centred in place."""
    if gaps is not None:
        with warnings.catch_warnings():  # a pair with under 2 valid replicates: NaN, said so
            warnings.simplefilter("ignore", RuntimeWarning)
            at_gaps = np.nanvar(d[gaps], axis=1, ddof=1)
    # the mean as d.mean gives it, without its Python layer (called for every part)
    d -= np.add.reduce(d, axis=1, keepdims=True) / d.shape[1]  # (a gap's row: NaN)
    out = np.einsum("pb,pb->p", d, d) / (d.shape[1] - 1)
    if gaps is not None:
        out[gaps] = at_gaps
    return out


def _holes(has_rate: NDArray[np.bool_]) -> tuple[IntArray, NDArray[np.bool_]] | None:
    """The rows of sides with a replicate that has no rate, and where they have one."""
    at = np.flatnonzero(~has_rate.all(axis=1))
    return (at, has_rate[at]) if len(at) else None


class _Sides:
    """Each pair's two sides' weighted counts of one column in every replicate, made part by
    part (a part is small enough to stay in the processor's cache while its rates and B - A
    are made): rows [0, P) the B sides (configuration ``jj`` over the prompts ``ii`` was scored
    on), rows [P, 2P) the A sides (``ii`` over ``jj``'s), each half in parts by the
    configuration whose scored prompts the side is counted over, the B sides' parts first.
    Only the sides of the given pairs are made (a short run's pairs with the others are not
    every pair). ``x`` (n, k, columns) is 0 where unscored."""

    def __init__(
        self,
        weights_t: Float,
        x: Float,
        scored: NDArray[np.bool_],
        pairs: tuple[IntArray, IntArray],
    ) -> None:
        ii, jj = pairs
        n, k, n_col = x.shape
        n_pairs = len(ii)
        ob, oa = np.argsort(ii, kind="stable"), np.argsort(jj, kind="stable")
        self.b_row, self.a_row = _inverse(ob), n_pairs + _inverse(oa)  # each pair's sides
        most = 2 * scored.sum(axis=0) > n  # on most: all the prompts less the few unscored
        full = None  # every configuration over every prompt (k, columns, B), when needed
        if most.any():
            full = (x.reshape(n, -1).T @ weights_t).reshape(k, n_col, weights_t.shape[1])
        rows = [~scored[:, m] if most[m] else scored[:, m] for m in range(k)]
        w = [np.ascontiguousarray(weights_t[r]) for r in rows]
        parts: list[list[_Part]] = [[], []]
        for half, (over, cfg) in enumerate(((ii[ob], jj[ob]), (jj[oa], ii[oa]))):
            for m, lo, hi in _blocks(over, k):
                got = cfg[lo:hi]
                runs = []
                if full is not None and most[m]:  # full's rows of consecutive configurations
                    runs = [(a, z, full[got[a] : got[a] + z - a]) for a, z in _runs(got)]
                xs = np.ascontiguousarray(x[rows[m]][:, got, :].transpose(2, 1, 0))
                off = half * n_pairs
                parts[half].append(_Part(off + lo, off + hi, xs, w[m], runs))
        self.b_parts = parts[0]
        at = [oa[p.lo - n_pairs : p.hi - n_pairs] for p in parts[1]]
        #: the A sides' parts, each with its pairs and those pairs' B sides' rows
        self.a_parts = [(p, a, self.b_row[a]) for p, a in zip(parts[1], at, strict=True)]
        self.widest = max((p.hi - p.lo for p in parts[1]), default=0)

    def parts(self) -> list[_Part]:
        return [*self.b_parts, *(p for p, _, _ in self.a_parts)]

    def count(self, part: _Part, c: int, out: Float) -> None:
        """Column ``c``'s counts of ``part``'s sides (sides, B) in ``out``: over prompts its
        configuration was scored on few of, the product over those; over most, the product
        over all of them less the one over the few unscored."""
        np.matmul(part.xs[c], part.w, out=out)
        for a, z, full in part.runs:
            np.subtract(full[:, c], out[a:z], out=out[a:z])


class _Part(NamedTuple):
    """Sides ``lo:hi``, all counted over the prompts one configuration was scored on: ``xs``
    (columns, their configurations, ``w``'s prompts), ``w`` the replicate weights of those
    prompts (the scored ones, or the few unscored, then ``runs``: positions ``a:z`` of the
    part with the rows of the product over all prompts they are subtracted from)."""

    lo: int
    hi: int
    xs: Float
    w: Float
    runs: list[tuple[int, int, Float]]


def _blocks(over: IntArray, k: int) -> list[tuple[int, int, int]]:
    """``(m, lo, hi)``: ``over[lo:hi] == m`` in the sorted ``over``, for each ``m`` present."""
    ends = np.searchsorted(over, np.arange(k + 1))
    return [(m, int(ends[m]), int(ends[m + 1])) for m in range(k) if ends[m] < ends[m + 1]]


def _inverse(order: IntArray) -> IntArray:
    """Where each item went under ``order``."""
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return back


def _runs(cfg: IntArray) -> list[tuple[int, int]]:
    """``cfg[a:z]``, runs of consecutive configurations (a board's every pair: two a block)."""
    cut = [0, *(np.flatnonzero(np.diff(cfg) != 1) + 1).tolist(), len(cfg)]
    return list(itertools.pairwise(cut))
