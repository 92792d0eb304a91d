"""The numbers of a paired comparison (:mod:`intima.results.paired` computes them): one B - A
with its interval, standard error and smallest detectable difference, and many pairs of one
column as arrays, each interval ``d ± (1.96 SE + 1/(2n))`` as that module's notes explain."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Final, NamedTuple

import numpy as np
from numpy.typing import NDArray

from intima.results.power import MIN_JUDGED_PAIRS, detectable_difference

CONFIDENCE: Final = 0.95
_Z: Final = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)

Float = NDArray[np.float64]


class Difference(NamedTuple):
    """B - A on one column, over the prompts both answered."""

    run_a: str
    run_b: str
    diff: float | None  # rate_b - rate_a; None when either has no scored response there
    lo: float | None
    hi: float | None
    se: float | None
    mde: float | None  # smallest difference detectable with 80% power at alpha 0.05
    different: bool  # the interval excludes 0
    n_common: int  # judged pairs: prompts both configurations were scored on (in this scope)
    rate_a: float | None  # A's rate over those prompts
    rate_b: float | None

    @property
    def too_few(self) -> bool:
        """Fewer judged pairs than :data:`MIN_JUDGED_PAIRS`: no difference is given."""
        return self.n_common < MIN_JUDGED_PAIRS


@dataclass
class Pairs:
    """B - A for many pairs on one column, as arrays (NaN: no number)."""

    diff: Float
    lo: Float
    hi: Float
    se: Float
    rate_a: Float
    rate_b: Float
    n_common: NDArray[np.int64]
    srs: Float  # the variance of B - A as if the prompts were independent (se^2 >= srs)

    @classmethod
    def empty(cls, n: int) -> Pairs:
        nan = np.full(n, np.nan)
        return cls(
            nan,
            nan.copy(),
            nan.copy(),
            nan.copy(),
            nan.copy(),
            nan.copy(),
            np.zeros(n, np.int64),
            nan.copy(),
        )

    @property
    def mde(self) -> Float:
        return detectable_difference(self.se, self.srs, self.rate_a, self.rate_b, self.n_common)

    @property
    def different(self) -> NDArray[np.bool_]:
        return (self.lo > 0) | (self.hi < 0)  # False where NaN

    def fill(
        self,
        at: NDArray[np.intp],
        col: tuple[Float, Float, Float],
        i: NDArray[np.intp],
        j: NDArray[np.intp],
        n_common: int,
    ) -> None:
        rate, boot, srs = col
        ra, rb = rate[i], rate[j]
        d = rb - ra
        self.n_common[at] = n_common
        if n_common < MIN_JUDGED_PAIRS:
            return  # too few judged pairs: no number (NaN, as Pairs.empty)
        var = np.fmax(boot[i, j], srs[i, j])
        se = np.sqrt(np.maximum(var, 0.0))
        se = np.where(np.isfinite(d), se, np.nan)
        self.diff[at], self.rate_a[at], self.rate_b[at], self.se[at] = d, ra, rb, se
        self.srs[at] = srs[i, j] if n_common >= 2 else np.nan
        half = _continuity(n_common)
        self.lo[at] = np.maximum(d - _Z * se - half, -1.0)
        self.hi[at] = np.minimum(d + _Z * se + half, 1.0)

    def one(self, k: int, run_a: str, run_b: str) -> Difference:
        def num(a: Float) -> float | None:
            v = float(a[k])
            return v if np.isfinite(v) else None

        return Difference(
            run_a,
            run_b,
            num(self.diff),
            num(self.lo),
            num(self.hi),
            num(self.se),
            num(self.mde),
            bool(self.different[k]),
            int(self.n_common[k]),
            num(self.rate_a),
            num(self.rate_b),
        )


def _continuity(n: int | NDArray[np.int64]) -> Float:
    """Half a response of the ``n`` both answered: the continuity correction of a paired
    difference of shares (as Edwards' correction of McNemar's test)."""
    return np.asarray(0.5 / np.maximum(n, 1), dtype=np.float64)
