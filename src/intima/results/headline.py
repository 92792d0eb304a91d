"""B − A on the headline's scale: two configurations' prediction-powered shares
(:mod:`intima.results.prediction`, the share a judge would give every response) compared,
with a 95% interval.

**Two independent samples.** ``intima judge --sample N`` orders each configuration's responses
by a hash of the seed, *the run* and the prompt (:mod:`intima.judges.samples`), so the two
configurations' samples are drawn independently of each other (mostly different prompts).
A shared prompt sample would allow pairing, but it would redraw every recorded sample (a
sample only grows: its order cannot change), and configurations that answered different
prompts could not share one. Given the two configurations' responses, the two estimates'
errors are independent, so the interval of the difference combines the two shares' own
95% intervals by the method of variance estimates recovery (MOVER; Newcombe 1998, method 10;
Zou & Donner 2008)::

    lo = d - sqrt((b - lo_b)^2 + (hi_a - a)^2),   hi = d + sqrt((hi_b - b)^2 + (a - lo_a)^2)

with ``d = b - a``, each share's interval continuity-corrected at both ends first (half a
response; the score interval corrects only the end toward the nearer extreme): Newcombe's
method 11. It keeps what the shares' score intervals do at rare shares (asymmetric ends, a
share at 0 that cannot fall below it) instead of a symmetric normal interval. Without the
second correction the simulation of ``benchmarks/bench_ppi_difference.py`` covered 0.904 in
its worst cell (84 responses, 60 labelled of each, shares 2%); with it >= 0.93 in every cell.

**Too few.** Each side needs :data:`intima.results.prediction.MIN_LABELLED` labelled
responses in the scope, the minimum its own share needs; under it the pages say "too few
judged responses" and give no number and no verdict.

References: Newcombe, R. G. (1998), Interval estimation for the difference between independent
proportions, *Statistics in Medicine* 17, 873-890. Zou, G. Y. & Donner, A. (2008),
Construction of confidence limits about effect measures: a general approach, *Statistics in
Medicine* 27, 1693-1702.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from intima.results.prediction import MIN_LABELLED, PredictionRow


class HeadlineDifference(NamedTuple):
    """B − A of two prediction-powered shares on one scope and label."""

    diff: float | None
    lo: float | None
    hi: float | None
    n_a: int  # labelled responses of A in the scope
    n_b: int
    different: bool  # the interval excludes 0
    too_few: bool  # a side has fewer than MIN_LABELLED labelled


def headline_difference(a: PredictionRow, b: PredictionRow) -> HeadlineDifference:
    """B − A of ``b`` and ``a`` (the same judge, scope and label, two configurations)."""
    n_a, n_b = a.n_labelled, b.n_labelled
    too_few = min(n_a, n_b) < MIN_LABELLED
    if too_few or None in (a.estimate, a.lo, a.hi, b.estimate, b.lo, b.hi):
        return HeadlineDifference(None, None, None, n_a, n_b, False, too_few)
    assert a.estimate is not None and a.lo is not None and a.hi is not None
    assert b.estimate is not None and b.lo is not None and b.hi is not None
    (a_lo, a_hi), (b_lo, b_hi) = _reach(a), _reach(b)
    d = b.estimate - a.estimate
    lo = max(-1.0, d - math.hypot(b_lo, a_hi))
    hi = min(1.0, d + math.hypot(b_hi, a_lo))
    return HeadlineDifference(d, lo, hi, n_a, n_b, lo > 0 or hi < 0, False)


def _reach(r: PredictionRow) -> tuple[float, float]:
    """How far a share's interval reaches below and above its estimate, with half a response
    of continuity correction on both ends: the score interval has it only on the end toward
    the nearer extreme (:mod:`intima.results.ppi`); Newcombe's method 11 corrects both. A
    share known exactly (every response labelled) reaches nowhere."""
    assert r.estimate is not None and r.lo is not None and r.hi is not None
    below, above = r.estimate - r.lo, r.hi - r.estimate
    if r.n_labelled >= r.n_total:
        return below, above
    half = 0.5 / r.n_labelled
    return (below, above + half) if r.estimate <= 0.5 else (below + half, above)
