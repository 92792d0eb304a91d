"""The quantifiers ``benchmarks/bench_corrected.py`` compares with the board's corrected share
(``benchmarks/_quantify.py``): Forman's thresholds and Median Sweep against values worked out
by hand on an 8-row validation, the calibrations against their definitions, and the
distribution-matching estimates against mixtures of known prevalence."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "_quantify.py"
_spec = importlib.util.spec_from_file_location("_quantify", _PATH)
assert _spec is not None and _spec.loader is not None
q = importlib.util.module_from_spec(_spec)
sys.modules["_quantify"] = q
_spec.loader.exec_module(q)

# Negatives 0.1-0.4, positives 0.35-0.7: tpr / fpr of "score >= t" at each distinct score
#   t    0.1  0.2  0.3  0.35 0.4  0.5  0.6  0.7
#   tpr  1    1    1    1    .75  .75  .5   .25
#   fpr  1    .75  .5   .25  .25  0    0    0
VAL = q.Validation(
    np.array([0.1, 0.2, 0.3, 0.4, 0.35, 0.5, 0.6, 0.7]),
    np.array([False] * 4 + [True] * 4),
)
CONFIG = np.array([0.05, 0.38, 0.45, 0.55, 0.65])


def test_roc_table_by_hand() -> None:
    t, tpr, fpr = q.roc_table(VAL)
    assert t.tolist() == [0.1, 0.2, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7]
    assert tpr.tolist() == [1, 1, 1, 1, 0.75, 0.75, 0.5, 0.25]
    assert fpr.tolist() == [1, 0.75, 0.5, 0.25, 0.25, 0, 0, 0]


def test_forman_thresholds_by_hand() -> None:
    # MAX: first largest tpr - fpr (0.75) at 0.35; X: fpr = 1 - tpr at 0.4; T50: tpr = .5 at 0.6
    assert q.threshold(VAL, "max") == (0.35, 1.0, 0.25)
    assert q.threshold(VAL, "x") == (0.4, 0.75, 0.25)
    assert q.threshold(VAL, "t50") == (0.6, 0.5, 0.0)
    est = q.methods()
    assert est["ACC-MAX"](CONFIG, VAL) == pytest.approx((4 / 5 - 0.25) / 0.75)
    assert est["ACC-X"](CONFIG, VAL) == pytest.approx((3 / 5 - 0.25) / 0.5)
    assert est["ACC-T50"](CONFIG, VAL) == pytest.approx((1 / 5) / 0.5)


def test_median_sweep_by_hand() -> None:
    # thresholds with tpr - fpr > 0.25: 0.3, 0.35, 0.4, 0.5, 0.6; their ACC estimates
    by_t = [(0.8 - 0.5) / 0.5, (0.8 - 0.25) / 0.75, (0.6 - 0.25) / 0.5, 0.4 / 0.75, 0.2 / 0.5]
    assert q.median_sweep(CONFIG, VAL) == pytest.approx(float(np.median(by_t)))
    assert q.median_sweep(CONFIG, VAL) == pytest.approx(0.6)


def test_acc_is_clipped_and_undefined_without_separation() -> None:
    assert q.acc_at(np.array([0.0, 0.0]), 0.5, 0.8, 0.1) == 0.0
    assert q.acc_at(np.array([1.0, 1.0]), 0.5, 0.8, 0.1) == 1.0
    assert np.isnan(q.acc_at(np.array([1.0]), 0.5, 0.3, 0.3))


def test_isotonic_pcc_and_pacc_by_hand() -> None:
    # PAV blocks: 0 (0.1-0.3, mean score 0.2), 0.5 (0.35 and 0.4, mean 0.375), 1 (0.5-0.7,
    # mean 0.6); linear between the blocks' mean scores.
    cal = q.fit_isotonic(VAL)
    got = cal(np.array([0.05, 0.2, 0.3, 0.375, 0.5, 0.6, 0.9]))
    assert got == pytest.approx([0, 0, 0.5 * 0.1 / 0.175, 0.5, 0.5 + 0.5 * 0.125 / 0.225, 1, 1])
    config = [0.0, 0.5 + 0.5 * 0.005 / 0.225, 0.5 + 0.5 * 0.075 / 0.225, 0.5 + 0.5 * 0.175 / 0.225]
    pcc = (sum(config) + 1.0) / 5
    assert q.pcc(CONFIG, cal) == pytest.approx(pcc)
    neg = (0.5 * 0.1 / 0.175 + 0.5 + 0.5 * 0.025 / 0.225) / 4
    pos = (0.5 * 0.15 / 0.175 + 0.5 + 0.5 * 0.125 / 0.225 + 2) / 4
    assert q.pacc(CONFIG, VAL, cal) == pytest.approx((pcc - neg) / (pos - neg))


def _mixture(rng: np.random.Generator, n: int, share: float) -> tuple[np.ndarray, np.ndarray]:
    pos = rng.random(n) < share
    return np.where(pos, rng.normal(1.0, 0.5, n), rng.normal(0.0, 0.5, n)), pos


def test_logistic_calibration_is_the_maximum_likelihood_fit() -> None:
    rng = np.random.default_rng(7)
    s, pos = _mixture(rng, 4000, 0.2)
    p = q.fit_logistic(q.Validation(s, pos))(s)
    # zero gradient of the log-loss in (a, b): sum(p - y) * (s, 1) = 0
    assert abs(float(np.sum(p - pos))) < 1e-3
    assert abs(float((p - pos) @ s)) < 1e-3
    # two normals with equal variance: the true log-odds slope is (1 - 0) / 0.5^2 = 4
    a = np.log(p[1] / (1 - p[1])) - np.log(p[0] / (1 - p[0]))
    assert a / (s[1] - s[0]) == pytest.approx(4.0, rel=0.1)


@pytest.mark.parametrize("share", [0.05, 0.3, 0.6])
def test_distribution_matching_recovers_a_shifted_prevalence(share: float) -> None:
    # The validation has 10% positives; the configuration another share of the same two
    # classes: the adjusted and distribution-matching methods (prior shift is their
    # assumption) recover it; PCC is pulled towards the validation's 10%.
    rng = np.random.default_rng(11)
    val = q.Validation(*_mixture(rng, 20000, 0.1))
    scores, _ = _mixture(rng, 20000, share)
    est = q.methods()
    for name in ("PACC-logistic", "HDy", "SLD", "ACC-MAX", "MedianSweep"):
        assert est[name](scores, val) == pytest.approx(share, abs=0.03), name
    pcc = est["PCC-logistic"](scores, val)
    assert (pcc - share) * (0.1 - share) > 0
    assert abs(pcc - share) > 0.02
