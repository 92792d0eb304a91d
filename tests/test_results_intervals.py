"""The rate intervals: coverage in a simulation of the stratified design (fixed seeds), never a
zero width, known values, and the ranking rule."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interval_simulation import (
    DESIGNS,
    PS,
    bootstrap_weights,
    coverage_table,
    format_table,
    simulate_cell,
)
from intima.results.intervals import (
    MIN_N,
    bootstrap_variance,
    design_effect,
    effective_n,
    intervals_from_replicates,
    rankable,
    wilson,
    wilson_effective,
)

Z2 = 1.959963984540054**2


# -- the coverage simulation -----------------------------------------------------------------


def test_coverage_at_least_93_percent_and_never_zero_width() -> None:
    t0 = time.perf_counter()
    rows = coverage_table(reps=2000, b=200)
    print("\n" + format_table(rows) + f"\n({time.perf_counter() - t0:.1f} s)")
    assert len(rows) == len(PS) * len(DESIGNS)
    for r in rows:
        assert r.coverage >= 0.93, r
        assert r.min_width > 0, r
    # and the percentile bootstrap it replaces does collapse (the bug being fixed)
    assert max(r.pct_zero_width for r in rows if r.n == 5) == 1.0


def test_design_effect_matters_when_prompts_are_clusters() -> None:
    # 3 responses per prompt, intra-prompt correlation 0.3, 12 prompts per code: the plain
    # Wilson interval (deff = 1) under-covers; the effective-n one recovers most of it.
    r = simulate_cell(0.3, DESIGNS[48], reps=1500, b=200, seed=7, per_prompt=3, icc=0.3)
    assert r.mean_deff > 1.2
    assert r.srs_coverage < 0.91
    assert r.coverage >= 0.92
    assert r.coverage > r.srs_coverage + 0.03


def test_simulation_bootstrap_weights_resample_within_codes() -> None:
    codes = np.array([0, 0, 0, 1, 1, 2], dtype=np.intp)
    w = bootstrap_weights(codes, 50, np.random.default_rng(0))
    assert w.shape == (50, 6)
    np.testing.assert_array_equal(w[:, :3].sum(axis=1), 3)
    np.testing.assert_array_equal(w[:, 3:5].sum(axis=1), 2)
    np.testing.assert_array_equal(w[:, 5], 1)  # a one-prompt code is always itself


# -- the reported failures ---------------------------------------------------------------------


def test_n14_all_zero_has_a_positive_upper_bound() -> None:
    # 14 responses, none shows the label; every bootstrap replicate is 0 (variance 0).
    ratio = np.zeros((1000, 1))
    lo, hi = intervals_from_replicates(ratio, np.array([0.0]), np.array([14]))
    assert lo[0] == 0.0
    # Wilson at x = 0: z^2 / (n + z^2) = 3.8415 / 17.8415
    assert hi[0] == pytest.approx(Z2 / (14 + Z2))
    assert hi[0] == pytest.approx(0.21531, abs=1e-5)


def test_n1_all_one_has_a_lower_bound_below_one() -> None:
    lo, hi = wilson_effective(np.array([1.0]), np.array([1]), np.array([0.0]))
    assert hi[0] == 1.0
    assert 0.0 < lo[0] < 1.0
    # x = 1 <= x*: the Poisson limit gammaincinv(1, 0.025) / 1 = -ln(0.975) = 0.02532
    assert lo[0] == pytest.approx(-math.log(0.975))


# -- the Wilson interval ------------------------------------------------------------------------


def test_wilson_known_values() -> None:
    # x = 5 of n = 10: centre (0.5 + 1.9207/10) / 1.38415 = 0.5; half-width
    # 1.96 * sqrt(0.025 + 3.8415/400) / 1.38415 = 0.26335 -> [0.23659, 0.76341]
    lo, hi = wilson(np.array([0.5]), np.array([10]), modified=False)
    assert lo[0] == pytest.approx(0.236593, abs=1e-6)
    assert hi[0] == pytest.approx(0.763407, abs=1e-6)
    # x = 2 of n = 20 is a small count: the lower end is the Poisson limit 0.24220 / 20
    lo2, _ = wilson(np.array([0.1]), np.array([20]))
    assert lo2[0] == pytest.approx(0.2422093 / 20, rel=1e-5)


def test_nan_in_nan_out() -> None:
    p = np.array([0.0, 0.5, np.nan, 0.2])
    n = np.array([0, 10, 10, 5])
    lo, hi = wilson_effective(p, n, np.array([np.nan, 0.01, 0.01, 0.0]))
    assert np.isnan(lo[0]) and np.isnan(hi[0])
    assert np.isnan(lo[2]) and np.isnan(hi[2])
    assert np.all(np.isfinite(lo[[1, 3]])) and np.all(hi[[1, 3]] > lo[[1, 3]])


def test_design_effect_fallbacks_and_clipping() -> None:
    p = np.array([0.5, 0.5, 0.5, 0.0, 1.0, 0.5, 0.5])
    n = np.array([100, 100, 100, 100, 100, 4, 100])
    v = np.array([0.005, 0.0001, 0.0, 0.01, 0.01, 10.0, np.nan])
    # 0.005 / (0.25 / 100) = 2; 0.0001 / 0.0025 = 0.04 -> floor 1; v = 0, p in {0, 1} and NaN
    # -> 1; 10 / (0.25 / 4) = 160 -> ceiling n = 4
    np.testing.assert_allclose(design_effect(p, n, v), [2, 1, 1, 1, 1, 4, 1])
    np.testing.assert_allclose(effective_n(p, n, v), [50, 100, 100, 100, 100, 1, 100])
    np.testing.assert_array_equal(design_effect(p, n, None), 1)


def test_bootstrap_variance_drops_nan_replicates() -> None:
    ratio = np.array([[0.0, np.nan, 1.0], [1.0, np.nan, np.nan], [np.nan, np.nan, np.nan]])
    v = bootstrap_variance(ratio)
    assert v[0] == pytest.approx(0.5)  # var([0, 1], ddof=1)
    assert np.isnan(v[1]) and np.isnan(v[2])


def test_plugs_into_table_shapes() -> None:
    rng = np.random.default_rng(1)
    ratio = rng.uniform(size=(200, 3, 4)).astype(np.float32)
    ratio[:10, 0, 0] = np.nan
    p = np.nanmean(ratio, axis=0)
    n = np.full((3, 4), 40)
    n[2, 3] = 0
    lo, hi = intervals_from_replicates(ratio, p, n)
    assert lo.shape == hi.shape == (3, 4)
    assert np.isnan(lo[2, 3])
    ok = n > 0
    assert np.all(lo[ok] < p[ok]) and np.all(p[ok] < hi[ok])


@settings(max_examples=300, deadline=None)
@given(
    x=st.integers(0, 400),
    extra=st.integers(0, 400),
    v=st.one_of(st.none(), st.floats(0, 1, allow_nan=False)),
    confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_interval_properties(x: int, extra: int, v: float | None, confidence: float) -> None:
    n = x + max(extra, 1 if x == 0 else 0)
    p = np.array([x / n])
    var = None if v is None else np.array([v])
    lo, hi = wilson_effective(p, np.array([n]), var, confidence)
    assert 0.0 <= lo[0] <= p[0] <= hi[0] <= 1.0
    assert hi[0] - lo[0] > 0.0  # never zero width for finite n
    # contains the plain (unmodified) Wilson interval at the actual n
    plo, phi = wilson(p, np.array([n]), confidence, modified=False)
    assert lo[0] <= plo[0] + 1e-12 and hi[0] >= phi[0] - 1e-12


def test_rejects_bad_confidence() -> None:
    with pytest.raises(ValueError, match="confidence"):
        wilson(np.array([0.5]), np.array([10]), 1.0)


# -- ranking rule ---------------------------------------------------------------------------------


def test_rankable() -> None:
    assert MIN_N == 30
    assert not rankable(0, 368)
    assert not rankable(0, 368, min_n=0, min_share=0)
    assert not rankable(29, 40)  # too few responses
    assert rankable(30, 40)
    assert rankable(184, 368)  # exactly half of the prompt set
    assert not rankable(183, 368)
    assert not rankable(300, 368, n_prompts=100)  # many responses, but on 100 prompts only
    assert rankable(300, 368, n_prompts=200)
    assert not rankable(6, 6)  # a 6-prompt demo set: shown, never ranked
    assert rankable(6, 6, min_n=5)
