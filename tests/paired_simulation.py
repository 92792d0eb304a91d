"""Simulated boards for :mod:`intima.results.paired`: do paired differences and rank intervals
keep their promises on INTIMA's design?

Design of one board: 368 prompts in 31 codes (27 x 12 + 4 x 11, INTIMA's layout). Each code
has an effect ``u_h ~ N(0, 0.8)`` and each prompt an effect ``v_i ~ N(0, 1.2)`` on the logit
scale, *shared by every configuration* (a prompt that draws reinforcing answers from one model
draws them from the others: correlated answers, as in the real data). Configuration ``c``
answers prompt ``i`` reinforcing with probability ``expit(alpha_c + u_h + v_i)``, one answer
per prompt, and one scorer labels it. ``alpha_c`` is set so that the configuration's true
share (over the prompt distribution) is the one asked for.

Each board goes through the real code: responses and rating sets into
:func:`intima.results.table.score_table` (the marginal intervals the side-by-side used to
compare) and :class:`intima.results.paired.PairedBoard` (the paired difference and the rank
intervals), with the board's own bootstrap (B replicates, a seed per board).

Three questions (issue 32):

* (a) ``null_rate``: with no true difference, how often the paired method says "different";
* (b) ``power``: at a true 10-point difference, how often the paired method says "different",
  and how often the marginal intervals are apart (no overlap);
* (c) ``rank_coverage``: how often the rank interval holds the configuration's true rank.

``benchmarks/bench_paired.py`` runs them at full size; ``tests/test_results_paired.py`` runs a
small version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Final

import numpy as np
from numpy.typing import NDArray

from intima.core.ratings import Primary, RatingSet
from intima.results.paired import PairedBoard
from intima.results.table import OVERALL, bootstrap_weights, score_table
from intima.store import StoredResponse

SIZES: Final = (12,) * 27 + (11,) * 4
SD_CODE: Final = 0.8
SD_PROMPT: Final = 1.2
SCORER: Final = "judge:sim"
METRIC: Final = "reinforcing"


def expit(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(1.0 / (1.0 + np.exp(-x)), dtype=np.float64)


@cache
def alpha_for(share: float) -> float:
    """The intercept whose true share over the prompt distribution is ``share`` (bisection on
    Gauss-Hermite quadrature of the shared effects)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    sd = float(np.hypot(SD_CODE, SD_PROMPT))
    w = weights / weights.sum()
    lo, hi = -20.0, 20.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if float((w * expit(mid + sd * nodes)).sum()) < share:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class Design:
    """Fixed parts of every board: its responses and both possible rating sets of each."""

    n_configs: int
    codes: NDArray[np.intp]  # code of each prompt
    responses: tuple[StoredResponse, ...]
    reinforcing: tuple[RatingSet, ...]  # per response, in the same order
    boundary: tuple[RatingSet, ...]

    @property
    def code_names(self) -> list[str]:
        return [f"code{h:02d}" for h in self.codes]

    @property
    def run_ids(self) -> list[str]:
        return [f"sim-run-{c}" for c in range(self.n_configs)]


@cache
def design(n_configs: int, sizes: Sequence[int] = SIZES) -> Design:
    codes = np.repeat(np.arange(len(sizes)), sizes)
    responses, reinf, bound = [], [], []
    for c in range(n_configs):
        for i, h in enumerate(codes):
            rid = f"sim-{c}-{i}"
            responses.append(
                StoredResponse(
                    rid,
                    f"sim-run-{c}",
                    f"sim-{c}",
                    "sim:model",
                    f"p{i:03d}",
                    f"code{h:02d}",
                    f"dimension{h % 4}",
                    "synthetic prompt",
                    "synthetic response",
                )
            )
            for label, out in ((Primary.REINFORCING, reinf), (Primary.BOUNDARY, bound)):
                out.append(
                    RatingSet(scorer=SCORER, response_id=rid, status="scored", primary=label)
                )
    return Design(n_configs, codes, tuple(responses), tuple(reinf), tuple(bound))


def draw_board(d: Design, shares: Sequence[float], rng: np.random.Generator) -> list[RatingSet]:
    """One board's ratings: configuration c has true share ``shares[c]``."""
    n_codes = int(d.codes.max()) + 1
    shared = rng.normal(0, SD_CODE, n_codes)[d.codes] + rng.normal(0, SD_PROMPT, len(d.codes))
    alphas = np.array([alpha_for(s) for s in shares])
    p = expit(alphas[:, None] + shared[None, :])
    y = (rng.random(p.shape) < p).ravel()
    return [r if hit else b for hit, r, b in zip(y, d.reinforcing, d.boundary, strict=True)]


def _excludes_zero(ends: NDArray[np.float64]) -> bool:
    return bool(ends[0] > 0 or ends[1] < 0)


@dataclass(frozen=True)
class PairResult:
    boards: int
    paired: float  # share of boards where the paired interval excludes 0
    marginal: float  # share of boards where the two marginal intervals do not overlap
    mean_mde: float  # mean smallest detectable difference (points)
    mean_diff: float
    # The alternatives weighed (module docstring of intima.results.paired), same boards:
    percentile: float  # percentile interval of the board's own replicates excludes 0
    percentile_rescaled: float  # the same on the Rao-Wu rescaled replicates
    uncorrected: float  # d +- 1.96 SE, no continuity correction


def pair_rates(
    boards: int,
    true_diff: float,
    *,
    base: float = 0.3,
    b: int = 1000,
    seed: int = 0,
    marginal_too: bool = True,
) -> PairResult:
    """(a) with ``true_diff = 0``, (b) with ``true_diff = 0.10``: two configurations.
    ``marginal_too=False`` skips the score table (NaN for the marginal rate), for speed."""
    d = design(2)
    rng = np.random.default_rng(seed)
    a_id, b_id = d.run_ids
    paired = marginal = pct = pct_rescaled = uncorrected = 0
    mdes, diffs = [], []
    for _ in range(boards):
        sets = draw_board(d, (base, base + true_diff), rng)
        board_seed = int(rng.integers(2**31))
        pb = PairedBoard(d.responses, sets, bootstrap=b, seed=board_seed)
        diff = pb.difference(SCORER, a_id, b_id, OVERALL, METRIC)
        if marginal_too:
            table = score_table(d.responses, sets, bootstrap=b, seed=board_seed, per_code=False)
            ra, rb = (table.get(SCORER, r, OVERALL, METRIC) for r in (a_id, b_id))
            assert None not in (ra.lo, ra.hi, rb.lo, rb.hi)
            marginal += ra.hi < rb.lo or rb.hi < ra.lo  # type: ignore[operator]
        paired += diff.different
        y = np.array([s.primary == Primary.REINFORCING for s in sets], dtype=np.float64)
        per_prompt = (y[len(y) // 2 :] - y[: len(y) // 2]) / (len(y) // 2)
        # The board's own replicates (its code names, so the very same draws), then rescaled.
        plain = bootstrap_weights(d.code_names, b, board_seed)[0] @ per_prompt
        pct += _excludes_zero(np.percentile(plain, [2.5, 97.5]))
        pct_rescaled += _excludes_zero(np.percentile(pb.weights @ per_prompt, [2.5, 97.5]))
        assert diff.diff is not None and diff.se is not None
        uncorrected += abs(diff.diff) > 1.959964 * diff.se
        mdes.append(diff.mde or np.nan)
        diffs.append(diff.diff or 0.0)
    return PairResult(
        boards, paired / boards, marginal / boards if marginal_too else float("nan"),
        100 * float(np.nanmean(mdes)),
        100 * float(np.mean(diffs)), pct / boards, pct_rescaled / boards, uncorrected / boards,
    )  # fmt: skip


@dataclass(frozen=True)
class RankResult:
    boards: int
    per_config: float  # share of (board, configuration) whose interval holds the true rank
    all_configs: float  # share of boards where every configuration's interval holds it
    mean_width: float  # mean hi - lo + 1


#: Eight configurations 5 points apart: close enough that ranks are uncertain on 368 prompts.
RANK_SHARES: Final = (0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50)


def rank_coverage(
    boards: int, shares: Sequence[float] = RANK_SHARES, *, b: int = 1000, seed: int = 0
) -> RankResult:
    """(c): rank intervals against the true ranks (1 = the highest true share)."""
    d = design(len(shares))
    rng = np.random.default_rng(seed)
    order = np.argsort(-np.asarray(shares), kind="stable")
    true_rank = {d.run_ids[c]: k + 1 for k, c in enumerate(order)}
    hits = all_hit = 0
    widths = []
    for _ in range(boards):
        sets = draw_board(d, shares, rng)
        board_seed = int(rng.integers(2**31))
        table = score_table(d.responses, sets, bootstrap=b, seed=board_seed, per_code=False)
        rows = [table.get(SCORER, r, OVERALL, METRIC) for r in d.run_ids]
        pb = PairedBoard(d.responses, sets, bootstrap=b, seed=board_seed)
        intervals = pb.rank_intervals(SCORER, OVERALL, METRIC, rows)
        ok = [lo <= true_rank[r] <= hi for r, (lo, hi) in intervals.items()]
        hits += sum(ok)
        all_hit += all(ok)
        widths += [hi - lo + 1 for lo, hi in intervals.values()]
    return RankResult(
        boards, hits / (boards * len(shares)), all_hit / boards, float(np.mean(widths))
    )


def expected_variance_null_rate(boards: int, *, base: float = 0.3, seed: int = 0) -> float:
    """(a) on many more boards, fast: the paired rule ``|d| > 1.96 SE + 1/(2n)`` with SE from
    what the rescaled bootstrap's variance converges to (sum over codes of
    ``n_h / (n_h - 1)`` times the within-code sum of squares of the per-prompt differences)
    and the independent-prompts floor, instead of 1000 replicates. It pins the rule's own
    false-positive rate down to a tenth of a point; the real code's figure above carries the
    Monte Carlo error of its boards."""
    d = design(2)
    rng = np.random.default_rng(seed)
    codes = d.codes
    n, n_codes = len(codes), int(codes.max()) + 1
    sizes = np.bincount(codes)
    alpha = alpha_for(base)
    hits = 0
    for _ in range(boards):
        shared = rng.normal(0, SD_CODE, n_codes)[codes] + rng.normal(0, SD_PROMPT, n)
        y = rng.random((2, n)) < expit(alpha + shared)
        rng.integers(2**31)  # what pair_rates draws for the board's seed: the same boards
        diff = y[1].astype(np.float64) - y[0]
        srs = n / (n - 1) * float(((diff - diff.mean()) ** 2).sum())
        means = np.bincount(codes, diff) / sizes
        strat = float(((sizes / (sizes - 1))[codes] * (diff - means[codes]) ** 2).sum())
        hits += abs(diff.sum()) > 1.959964 * np.sqrt(max(srs, strat)) + 0.5
    return hits / boards
