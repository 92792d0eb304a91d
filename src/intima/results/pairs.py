"""The numbers of a paired comparison (:mod:`intima.results.paired` computes them): one B - A
with its interval, standard error and smallest detectable difference, and many pairs of one
column as arrays, each interval ``d ± (1.96 SE + 1/(2n))`` as that module's notes explain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
    #: ``mde`` once worked out (:func:`find_mdes`: many columns in one call); filled pairs only
    _mde: Float | None = field(default=None, repr=False)

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
        if self._mde is None:
            find_mdes([self])
        assert self._mde is not None
        return self._mde

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
        """Pairs ``(i, j)`` of one column's rates, replicate and independent-prompts
        variances (k, k), all over the same ``n_common`` judged pairs, kept at ``at``."""
        rate, boot, srs = col
        n = np.full(len(at), n_common, dtype=np.int64)
        self.put(at, (rate[i], rate[j]), boot[i, j], srs[i, j], n)

    def put(
        self,
        at: NDArray[np.intp],
        rates: tuple[Float, Float],
        boot: Float,
        srs: Float,
        n_common: NDArray[np.int64],
    ) -> None:
        """Pairs kept at ``at`` from their rates (A, B), the replicates' and the independent
        prompts' variance of B - A and their judged pairs, each its own."""
        self.n_common[at] = n_common
        ok = n_common >= MIN_JUDGED_PAIRS  # under it: no number (NaN, as Pairs.empty)
        at, n, boot, srs = at[ok], n_common[ok], boot[ok], srs[ok]
        ra, rb = rates[0][ok], rates[1][ok]
        d = rb - ra
        var = np.fmax(boot, srs)
        se = np.sqrt(np.maximum(var, 0.0))
        se = np.where(np.isfinite(d), se, np.nan)
        self.diff[at], self.rate_a[at], self.rate_b[at], self.se[at] = d, ra, rb, se
        self.srs[at] = np.where(n >= 2, srs, np.nan)
        half = _continuity(n)
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


def find_mdes(columns: Sequence[Pairs]) -> None:
    """Every column's smallest detectable differences, in one call of
    :func:`~intima.results.power.detectable_difference` (element by element the same numbers
    as one call per column, for a fraction of the calls: a board asks for thousands)."""
    if not columns:
        return
    got = detectable_difference(
        *(np.concatenate([getattr(c, k) for c in columns]) for k in _MDE_INPUTS)
    )
    for c, part in zip(
        columns, np.split(got, np.cumsum([len(c.se) for c in columns])[:-1]), strict=True
    ):
        c._mde = part


_MDE_INPUTS: Final = ("se", "srs", "rate_a", "rate_b", "n_common")


def _continuity(n: int | NDArray[np.int64]) -> Float:
    """Half a response of the ``n`` both answered: the continuity correction of a paired
    difference of shares (as Edwards' correction of McNemar's test)."""
    return np.asarray(0.5 / np.maximum(n, 1), dtype=np.float64)
