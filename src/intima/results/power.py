"""The smallest difference a paired comparison detects with 80% power at alpha 0.05, at the
variance *at* that difference (:mod:`intima.results.paired` has the method and why; the
power it keeps is ``benchmarks/bench_mde.py``'s).

Reference: Plackett, R. L. (1965), A class of bivariate distributions, *JASA* 60(310),
516-522 (the constant odds ratio).
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Final

import numpy as np
from numpy.typing import NDArray

POWER: Final = 0.8
#: The MDE's multiple of the standard error at the difference: z_0.975 + z_0.8 = 2.80.
MDE_FACTOR: Final = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(POWER)

#: Fewest judged pairs (prompts both configurations were scored on) for a paired difference;
#: under it the pages say "too few judged pairs" and give no number and no verdict. Chosen by
#: ``benchmarks/bench_paired_minimum.py``: from 10 pairs the largest smallest-detectable
#: difference is under 100 points (94 at 10, 120 at 8); the false-positive rate stays under 5%.
MIN_JUDGED_PAIRS: Final = 10

Float = NDArray[np.float64]


def detectable_difference(
    se: Float, srs: Float, rate_a: Float, rate_b: Float, n: NDArray[np.int64]
) -> Float:
    """The smallest true difference found with 80% power at alpha 0.05 (module docstring):
    the root ``d`` of ``d = 2.80 SE(d) + 1/(2n)``, ``SE(d)^2 = se^2 + deff (v(d) - v(0)) / n``,
    from the observed ``se``, the independent-prompts variance ``srs`` (``se^2 >= srs``),
    the two rates and the ``n`` prompts both answered. NaN where any is NaN, or where even
    the largest possible difference would be found less than 80% of the time."""
    se, srs, ra, rb, n_ = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (se, srs, rate_a, rate_b, n))
    )
    out = np.full(se.shape, np.nan)
    # Only where every input is a number (a board's NaN pairs are many): the same numbers,
    # element by element, for a fraction of the work.
    ok = np.isfinite(se) & np.isfinite(srs) & np.isfinite(ra + rb)
    if not ok.any():
        return out
    se, srs, ra, rb, nn = se[ok], srs[ok], ra[ok], rb[ok], np.maximum(n_[ok], 1.0)
    q = np.minimum((ra + rb) / 2, 1 - (ra + rb) / 2)
    c = 0.5 / nn  # half a response: the continuity correction of the paired interval
    with np.errstate(invalid="ignore", divide="ignore"):
        deff = np.where(srs > 0, np.maximum(se * se / np.where(srs > 0, srs, 1.0), 1.0), 1.0)
        # The observed 2 x 2 table of the answers (one per prompt), half a count added to
        # each cell (Haldane), for the odds ratio that stays fixed as a share moves.
        d_obs = rb - ra
        psi = (nn - 1) * srs + d_obs * d_obs  # the share of prompts answered differently
        n10 = np.clip(nn * (psi - d_obs) / 2, 0, None)
        n01 = np.clip(nn * (psi + d_obs) / 2, 0, None)
        n11 = np.clip(nn * ra - n10, 0, None)
        n00 = np.clip(nn - n11 - n10 - n01, 0, None)
        odds = (n11 + 0.5) * (n00 + 0.5) / ((n10 + 0.5) * (n01 + 0.5))
        v = _Plackett(q, odds)
        v0 = v.variance(0.0)
        se2 = se * se

        def gap(d: Float) -> Float:
            # d - 2.80 sqrt(max(se^2 + deff (v(d) - v0) / n, 0)) - c, in place (52 calls of
            # thousands of pairs): the same operations in the same order, the same numbers
            var = v.variance(d)
            var -= v0
            var *= deff
            var /= nn
            var += se2
            np.sqrt(np.maximum(var, 0.0, out=var), out=var)
            var *= MDE_FACTOR
            out = d - var
            out -= c
            return out

        lo, hi = c.copy(), 1.0 - q
        reachable = gap(hi) >= 0
        # Bisection, on every pair at once (a board has thousands; scipy's bracketing
        # root-finders take one at a time): gap(lo) <= 0 <= gap(hi), 50 halvings.
        for _ in range(50):
            mid = (lo + hi) / 2
            up = gap(mid) < 0
            np.copyto(lo, mid, where=up)
            np.copyto(hi, mid, where=~up)
    out[ok] = np.where(reachable, hi, np.nan)
    return out


class _Plackett:
    """``Var(B - A)`` of one prompt's answers with A's share ``q`` and B's ``q + d`` at the
    odds ratio ``odds`` (Plackett 1965: the both-reinforcing share is the root of
    ``p11 p00 / (p10 p01) = odds`` given the two shares): ``psi - d^2``, ``psi`` the share
    answered differently. What does not move with ``d`` is worked out once (the bisection
    asks for 52 ``d``). Call under ``np.errstate(invalid="ignore", divide="ignore")``."""

    def __init__(self, q: Float, odds: Float) -> None:
        self.q, self.odds_m1 = q, odds - 1
        self.k4a = 4 * odds * self.odds_m1 * q  # 4 odds (odds - 1) a b, in that order
        self.near = np.abs(self.odds_m1) < 1e-9  # odds 1: independent answers, p11 = a b
        self.any_near = bool(self.near.any())
        self.two = 2 * self.odds_m1

    def variance(self, d: Float | float) -> Float:
        # a + b - 2 p11 - (b - a)^2, p11 the root below (or a b), in place: the same
        # operations in the same order as written out, on fewer fresh arrays
        a = self.q
        b = a + d
        both = a + b
        s = both * self.odds_m1
        s += 1
        root = s * s
        root -= self.k4a * b
        np.sqrt(np.maximum(root, 0.0, out=root), out=root)
        np.subtract(s, root, out=root)
        root /= self.two
        p11 = np.where(self.near, a * b, root) if self.any_near else root
        both -= 2 * p11
        both -= (b - a) ** 2
        return both


def mde_note() -> str:
    """How the pages' paired numbers are made, in one sentence for the methodology."""
    return (
        "B − A over the n judged pairs (prompts both configurations were scored on; under "
        f"{MIN_JUDGED_PAIRS}: too few judged pairs, no number), with a 95% interval "
        "d ± (1.96 SE + 1/(2n)) (half a response of continuity correction); "
        "SE from the board's own bootstrap replicates (the same prompts drawn for both, each "
        "code's deviation rescaled by sqrt(n/(n−1))), never under the SE of independent "
        "prompts; 'different' only when the interval excludes 0. Smallest detectable "
        f"difference: the d with d = {MDE_FACTOR:.2f} × SE(d) + 1/(2n), SE(d) the standard "
        "error at that difference (80% power, alpha 0.05). Rank interval: the 2.5–97.5% range "
        "of the rank over the replicates, with the board's rank; a configuration shares the "
        "group leader's rank (=k) when its rank interval reaches it."
    )
