"""Comparisons that use the pairing: B - A with its interval, rank intervals, and the smallest
difference the board can detect. Pure (no UI): the site, the app, the Space and
``intima compare`` all read these numbers.

Every configuration on a board answered the same prompts, and the score table's bootstrap
(:func:`intima.results.table.bootstrap_weights`: prompts resampled within codes, one weight
matrix for every configuration and scorer) draws the *same* prompts for all of them. Here the
same replicates are used for differences:

* **B - A** on one column (scorer, scope, metric) is the difference of the two rates over the
  *judged pairs*: the prompts both configurations answered and the scorer scored in both (a
  judge on a sample of each configuration scores few prompts of both). Under
  :data:`MIN_JUDGED_PAIRS` judged pairs there is no difference: the pages say "too few judged
  pairs".
* **Its standard error** is the larger of two: the standard deviation of B - A over the
  board's replicates, each code's deviation rescaled by ``sqrt(n_h / (n_h - 1))`` (Rao & Wu
  1988: the plain with-replacement bootstrap within a code of ``n_h`` prompts under-states the
  variance by ``(n_h - 1) / n_h``, 8% at INTIMA's 12 prompts a code), and the standard error of
  the mean of the paired per-prompt differences (linearised for the ratio) as if the prompts
  were a simple random sample: never more precision than independent prompts, as the board's
  intervals never claim a design effect under 1 (:mod:`intima.results.intervals`).
* **The interval** is ``d ± (1.96 SE + 1/(2n))``, ``n`` the prompts both answered: half a
  response of continuity correction, as in McNemar's test with Edwards' correction, because a
  share of 368 answers moves in steps of 1/368. The two configurations are called *different*
  only when the interval excludes 0. What the simulation of ``benchmarks/bench_paired.py``
  (368 prompts in 31 codes, prompt effects shared by the configurations, no true difference)
  showed of the other choices: the percentile interval of the board's 1000 replicates said
  "different" on 6.5% of boards (5.3% with the rescaling; its 2.5% and 97.5% quantiles rest on
  25 replicates each), and ``d ± 1.96 SE`` without the correction on 6.0%.
* **The smallest detectable difference** (MDE) of a pair on a column is the true difference
  ``d`` this design detects with 80% power at alpha = 0.05: the root of
  ``d = (z_0.975 + z_0.8) SE(d) + 1/(2n)``, ``z_0.975 + z_0.8 = 2.80``, with ``SE(d)`` the
  standard error *at that difference*, not the one observed under no difference: a share
  that moves from 5% to 10% answers more unevenly, and the test that would find it uses the
  larger standard error it would then see (with the observed SE, the shown difference was
  found 66-75% of the time at a share of 5%, not 80%). The model of ``SE(d)`` keeps the
  odds ratio of the pair's 2 x 2 table of answers fixed as B's share moves from ``q`` to
  ``q + d`` (``q`` the pair's mean share, folded to at most 1/2: the harder direction;
  Plackett's constant-odds-ratio model, which matches a latent normal model of correlated
  answers to within a few percent of the variance): ``SE(d)^2 = SE^2 + deff (v(d) - v(0)) / n``,
  ``v`` the per-prompt variance of B - A under the model and ``deff = SE^2 / SE_srs^2`` the
  design effect the board's SE already carries. The root is found by bisection
  (:func:`intima.results.power.detectable_difference`). ``benchmarks/bench_mde.py`` checks
  the power at the shown value by simulation (78-85% over shares 0.02-0.5 and within-prompt
  correlations 0-0.8).
* **Rank intervals**: each rankable configuration's rank (1 = highest rate) in every replicate,
  and the 2.5-97.5% range of those ranks, widened to include its rank on the board. Ties (the
  ``=k`` of :mod:`intima.results.rank`) come from these intervals: a configuration shares the
  group leader's rank when its rank interval reaches that rank.

Reference: Miller, E. (2024), Adding error bars to evals: a statistical approach to language
model evaluations, arXiv:2411.00640 (cluster by prompt, pair the differences, report power).
Rao, J. N. K. & Wu, C. F. J. (1988), Resampling inference with complex survey data, *JASA*
83(401), 231-241.
Plackett, R. L. (1965), A class of bivariate distributions, *JASA* 60(310), 516-522.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from intima.core.ratings import RatingSet
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.results.judged import JudgedPairs
from intima.results.pairs import Difference, Float, Pairs, find_mdes
from intima.results.power import MIN_JUDGED_PAIRS
from intima.results.rank import Ranked, is_rankable, rank_groups
from intima.results.table import (
    _N_NUM,
    LABEL_METRICS,
    METRICS,
    OVERALL,
    Placed,
    ScoreRow,
    board_layout,
    bootstrap_weights,
    code_scope,
    dims_in,
    indicator_cube,
)

#: How many scopes' products a board keeps (:meth:`PairedBoard._scope_block`): the site's two
#: walks over the scopes (pairs, ranks) stay within a scope or two of each other.
_BLOCKS_KEPT = 4


def _metric_cols(metric: str) -> tuple[int, int]:
    m = METRICS.index(metric)
    n_lab = len(LABEL_METRICS)
    return m, _N_NUM + (0 if m < n_lab else 1 + m - n_lab)


@dataclass
class PairedBoard:
    """A board's responses and ratings with the score table's bootstrap replicates, for
    paired comparisons. Build it with the table's ``bootstrap`` and ``seed``: the same store,
    B and seed give the same numbers here as on every page."""

    responses: Sequence[Placed]
    rating_sets: Iterable[RatingSet]
    bootstrap: int = DEFAULT_BOOTSTRAP
    seed: int = DEFAULT_SEED
    #: each scorer's ``X`` (:func:`intima.results.table.indicator_cube`); give the dict
    #: :func:`~intima.results.table.score_table` filled (its ``cubes``) to build them once
    cubes: dict[str, NDArray[np.float32]] = field(default_factory=dict, repr=False)
    #: the last few scopes' products (:meth:`_scope_block`), shared by threads
    _blocks: OrderedDict[tuple[str, str], tuple[Float, Float]] = field(
        default_factory=OrderedDict, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.bootstrap < 2:
            raise ValueError("a paired comparison needs at least 2 bootstrap replicates")
        lay = board_layout(self.responses, self.rating_sets)
        self.layout = lay
        self.configs = list(lay.configs)
        self.scorers = list(lay.scorers)
        weights, codes, members = bootstrap_weights(
            [lay.code_of[p] for p in lay.p_index], self.bootstrap, self.seed
        )
        self.codes, self.members = codes, members
        # Rao-Wu rescaling, code by code: w~ = f w + (1 - f), f = sqrt(n_h / (n_h - 1)); a code
        # of one prompt has no variance to rescale (f = 1).
        rescaled = weights.astype(np.float64)
        for idx in members.values():
            k = len(idx)
            f = np.sqrt(k / (k - 1)) if k > 1 else 1.0
            rescaled[:, idx] = f * rescaled[:, idx] + (1.0 - f)
        self.weights = rescaled
        self._weights_t = np.ascontiguousarray(rescaled.T)  # (prompts, B): rows taken by prompt
        answered = np.zeros((len(lay.p_index), len(self.configs)), dtype=bool)
        for r in self.responses:
            answered[lay.p_index[r.prompt_id], lay.c_index[r.run_id]] = True
        self.answered = answered

    # -- look-ups ------------------------------------------------------------------------

    def scopes(self) -> list[str]:
        """overall, the dimensions, then every code's scope."""
        dims = dims_in(set(self.layout.dim_of_code.values()))
        return [OVERALL, *dims, *(code_scope(c) for c in self.codes)]

    def prompts_of(self, scope: str) -> NDArray[np.intp]:
        if scope == OVERALL:
            return np.arange(len(self.layout.p_index))
        if scope.startswith("code:"):
            code = scope[len("code:") :]
            if code not in self.members:
                raise KeyError(scope)
            return self.members[code]
        codes = [c for c in self.codes if self.layout.dim_of_code[c] == scope]
        if not codes:
            raise KeyError(scope)
        return np.sort(np.concatenate([self.members[c] for c in codes]))

    def _cube(self, scorer: str) -> NDArray[np.float32]:
        if scorer not in self.cubes:
            lay = self.layout
            if scorer not in lay.grouped:
                raise KeyError(scorer)
            x, _, _ = indicator_cube(
                lay.grouped[scorer], self.responses, lay.by_response, lay.c_index, lay.p_index
            )
            self.cubes[scorer] = x
        return self.cubes[scorer]

    def _scope_block(self, scorer: str, scope: str) -> tuple[Float, Float]:
        """``X`` of the scope's prompts (n, configs, columns) and its replicates
        (B, configs, columns): one product for every metric, ranks and pairs of a scope. Only
        the last few scopes are kept: a site walks scorer by scorer, scope by scope, its pairs
        in one thread and its ranks in another (:mod:`intima.leaderboard.site`)."""
        key = (scorer, scope)
        with self._lock:  # the other thread, after the same scope, waits for this product
            if (block := self._blocks.get(key)) is None:
                block = self._blocks[key] = self._product(scorer, scope)
                while len(self._blocks) > _BLOCKS_KEPT:
                    self._blocks.popitem(last=False)
            self._blocks.move_to_end(key)
            return block

    def _product(self, scorer: str, scope: str) -> tuple[Float, Float]:
        idx = self.prompts_of(scope)
        cube = self._cube(scorer)[idx]
        n, n_c, k = cube.shape
        # float32 for the one large product (as the score table's): its sums of weighted
        # counts lose nothing a standard error could show.
        w32 = self.weights[:, idx].astype(np.float32)
        reps = (w32 @ cube.reshape(n, n_c * k)).astype(np.float64).reshape(-1, n_c, k)
        return cube.astype(np.float64), reps

    # -- differences ---------------------------------------------------------------------

    def pair_matrix(
        self, scorer: str, scope: str, metrics: Sequence[str] = METRICS
    ) -> dict[str, Pairs]:
        """Per metric, B - A for every pair of configurations ``(i, j)``, ``i < j`` in table
        order (row-major: (0,1), (0,2), ..., (1,2), ...), with A = i and B = j, as arrays;
        every metric's smallest detectable differences worked out together."""
        n_c = len(self.configs)
        pairs = [(i, j) for i in range(n_c) for j in range(i + 1, n_c)]
        out = self._pairs(scorer, scope, pairs, metrics)
        find_mdes(list(out.values()))
        return out

    def difference(
        self, scorer: str, run_a: str, run_b: str, scope: str, metric: str
    ) -> Difference:
        """B - A on one column (see the module docstring)."""
        c = self.layout.c_index
        got = self._pairs(scorer, scope, [(c[run_a], c[run_b])], [metric])[metric]
        return got.one(0, run_a, run_b)

    def _pairs(
        self,
        scorer: str,
        scope: str,
        pairs: Sequence[tuple[int, int]],
        metrics: Sequence[str],
    ) -> dict[str, Pairs]:
        # Many small products (a pair's judged prompts, by configuration): a second BLAS thread
        # only waits, spinning, between them (it doubled the CPU time of a board's pairs).
        with threadpool_limits(1, user_api="blas"):
            return self._pairs_in(scorer, scope, pairs, metrics)

    def _pairs_in(
        self,
        scorer: str,
        scope: str,
        pairs: Sequence[tuple[int, int]],
        metrics: Sequence[str],
    ) -> dict[str, Pairs]:
        x = self._cube(scorer)
        idx = self.prompts_of(scope)
        ans = self.answered[idx]
        # Pairs answering the same prompts share one product with the weights (on a board of
        # complete runs, every pair).
        groups: dict[bytes, list[int]] = {}
        for k, (i, j) in enumerate(pairs):
            groups.setdefault((ans[:, i] & ans[:, j]).tobytes(), []).append(k)
        out = {m: Pairs.empty(len(pairs)) for m in metrics}
        cols = [_metric_cols(m) for m in metrics]
        for members in groups.values():
            i0, j0 = pairs[members[0]]
            q = idx[ans[:, i0] & ans[:, j0]]
            if len(q) == 0:  # no prompt both answered (a short run): no difference to give
                continue
            cfgs = sorted({c for k in members for c in pairs[k]})
            pos = {c: n for n, c in enumerate(cfgs)}
            if len(q) == len(idx):  # both answered the whole scope: the scope's own product
                sub, reps = self._scope_block(scorer, scope)
                if len(cfgs) < sub.shape[1]:
                    sub, reps = sub[:, cfgs, :], reps[:, cfgs, :]
            else:
                sub = x[q][:, cfgs, :].astype(np.float64)  # (n_q, k, cols)
                flat = self.weights[:, q] @ sub.reshape(len(q), -1)
                reps = flat.reshape(flat.shape[0], len(cfgs), -1)
            ii = np.array([pos[pairs[k][0]] for k in members], dtype=np.intp)
            jj = np.array([pos[pairs[k][1]] for k in members], dtype=np.intp)
            at = np.array(members, dtype=np.intp)
            for den, wanted in _by_denominator(sub, metrics, cols).items():
                self._fill_group(out, wanted, den, (sub, reps), (ii, jj, at), q)
        return out

    def _fill_group(
        self,
        out: dict[str, Pairs],
        wanted: Sequence[tuple[str, int]],
        den: int,
        block: tuple[Float, Float],
        where: tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]],
        q: NDArray[np.intp],
    ) -> None:
        """Pairs (A = ``ii``, B = ``jj`` in ``block``'s configurations, kept at ``at``) that
        answered prompts ``q``, on the metrics ``wanted`` of denominator column ``den``. A pair
        counts a prompt only where both configurations were scored on it (a judge on a sample
        of each scores few prompts of both): pairs scored on all of ``q`` share the block's
        product, the others get their own over their judged pairs."""
        (sub, reps), (ii, jj, at) = block, where
        scored = sub[..., den] > 0
        both = scored[:, ii] & scored[:, jj]
        whole = both.all(axis=0)
        if whole.any():
            # each column contiguous, once: read in place (a stride of every column) they
            # took half of _column's time
            cols = [den, *(num for _, num in wanted)]
            r, x = (np.ascontiguousarray(np.moveaxis(a[..., cols], -1, 0)) for a in (reps, sub))
            for t, (metric, _) in enumerate(wanted, start=1):
                col = _column(r[t], r[0], x[t], x[0])
                out[metric].fill(at[whole], col, ii[whole], jj[whole], len(q))
        rest = np.flatnonzero(~whole)
        if len(rest):  # each over its own judged pairs, all such pairs at once
            self._fill_judged(
                out, wanted, den, sub, (ii[rest], jj[rest], at[rest]), both[:, rest], q
            )

    def _fill_judged(
        self,
        out: dict[str, Pairs],
        wanted: Sequence[tuple[str, int]],
        den: int,
        sub: Float,
        where: tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]],
        both: NDArray[np.bool_],
        q: NDArray[np.intp],
    ) -> None:
        """Pairs each counted over their own judged pairs (``both[:, p]``: the prompts of ``q``
        both were scored on): what :func:`_column` gives one pair over its judged prompts, for
        every pair at once (:class:`~intima.results.judged.JudgedPairs`)."""
        ii, jj, at = where
        n_p = both.sum(axis=0)
        for metric, _ in wanted:
            out[metric].n_common[at] = n_p
        keep = n_p >= MIN_JUDGED_PAIRS  # under it: no number (Pairs.empty's NaN)
        if not keep.any():
            return
        cols = [den, *(num for _, num in wanted)]
        judged = JudgedPairs(self._weights_t[q], sub[..., cols], ii[keep], jj[keep])
        for t, (metric, _) in enumerate(wanted, start=1):
            rate, boot, srs = judged.column(t)
            out[metric].put(at[keep], (rate[:, 0], rate[:, 1]), boot, srs, judged.n_p)

    # -- ranks ---------------------------------------------------------------------------

    def rank_intervals(
        self, scorer: str, scope: str, metric: str, rows: Sequence[ScoreRow]
    ) -> dict[str, tuple[int, int]]:
        """Each rankable row's rank interval: the 2.5-97.5% range of its rank (1 = highest
        rate, 1 + the configurations rated higher) over the replicates, widened to include its
        position on the board (:func:`intima.results.rank.rank_groups`'s order)."""
        ranked = sorted(
            (r for r in rows if is_rankable(r)), key=lambda r: (-(r.rate or 0.0), r.label, r.run_id)
        )
        if not ranked:
            return {}
        num, den = _metric_cols(metric)
        cfg = [self.layout.c_index[r.run_id] for r in ranked]
        sub, reps = self._scope_block(scorer, scope)
        point = sub[:, cfg, num].sum(axis=0) / sub[:, cfg, den].sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            d_rep = reps[:, cfg, den]
            rate = np.where(d_rep > 0, reps[:, cfg, num] / np.where(d_rep > 0, d_rep, 1.0), np.nan)
        rate = np.where(np.isnan(rate), point[None, :], rate)  # a degenerate replicate: no vote
        lo, hi = _rank_range(rate)
        return {
            r.run_id: (int(min(lo[n], n + 1)), int(max(hi[n], n + 1))) for n, r in enumerate(ranked)
        }

    def ranks(self, scorer: str, scope: str, metric: str, rows: Sequence[ScoreRow]) -> list[Ranked]:
        """:func:`intima.results.rank.rank_groups` with this column's rank intervals."""
        return rank_groups(rows, self.rank_intervals(scorer, scope, metric, rows))


def _by_denominator(
    sub: Float, metrics: Sequence[str], cols: Sequence[tuple[int, int]]
) -> dict[int, list[tuple[str, int]]]:
    """The metrics (name, numerator column) by denominator column of ``sub``, a denominator
    equal to an earlier one in ``sub`` counted as that one: a scorer leaves a judgment
    unscored on every category at once, so one set of judged pairs and one pass over the
    replicates serves them all (the same numbers: the same denominators)."""
    out: dict[int, list[tuple[str, int]]] = {}
    for metric, (num, den) in zip(metrics, cols, strict=True):
        same = next((d for d in out if np.array_equal(sub[..., d], sub[..., den])), den)
        out.setdefault(same, []).append((metric, num))
    return out


def _rank_range(rate: Float) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Per column of ``rate`` (B, k): the 2.5% and 97.5% points of its rank over the B rows
    (rank = 1 + the columns rated higher in that row), as ``np.quantile`` with ``method="lower"``
    and ``"higher"`` would give them, from counts instead of k sorts."""
    b, k = rate.shape
    order = np.argsort(-rate, axis=1)
    ordered = np.take_along_axis(-rate, order, axis=1)
    # Rank of each place in the order: the first place of its run of equal rates, plus 1.
    new = np.ones((b, k), dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(new, np.arange(k), 0), axis=1)
    ranks = np.empty((b, k), dtype=np.intp)
    np.put_along_axis(ranks, order, first + 1, axis=1)  # (B, k), 1..k
    flat = (np.arange(k)[None, :] * (k + 1) + ranks).ravel()
    cum = (
        np.bincount(flat, minlength=k * (k + 1)).reshape(k, k + 1).cumsum(axis=1)
    )  # cum[c, r]: replicates where c ranked r or better
    lo_at = int(np.floor(0.025 * (b - 1))) + 1  # the (lo_at)-th smallest rank
    hi_at = int(np.ceil(0.975 * (b - 1))) + 1
    return (cum >= lo_at).argmax(axis=1), (cum >= hi_at).argmax(axis=1)


def _column(num_rep: Float, den_rep: Float, num: Float, den: Float) -> tuple[Float, Float, Float]:
    """Point rates (k), the replicates' covariance of the rates (k, k) and the simple-random-
    sample variance of every paired difference (k, k) for one column."""
    n = num.shape[0]
    den_sum = den.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = num.sum(axis=0) / den_sum
        reps = np.where(den_rep > 0, num_rep / np.where(den_rep > 0, den_rep, 1.0), np.nan)
        # Linearised ratio: each prompt's contribution to the rate's error.
        z = (num - rate[None, :] * den) / den_sum[None, :]
    z = np.where(np.isfinite(z), z, 0.0)
    zc = z - z.mean(axis=0)
    g = zc.T @ zc
    srs = (np.diag(g)[:, None] + np.diag(g)[None, :] - 2 * g) * (n / (n - 1) if n > 1 else np.nan)
    if np.isnan(reps).any():
        d = reps[:, None, :] - reps[:, :, None]  # d[b, i, j] = r_j - r_i
        with warnings.catch_warnings():  # a pair with under 2 valid replicates: NaN, said so
            warnings.simplefilter("ignore", RuntimeWarning)
            boot = np.nanvar(d, axis=0, ddof=1)
    else:
        cov = np.cov(reps, rowvar=False, ddof=1).reshape(len(rate), len(rate))
        boot = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    return rate, boot, srs
