"""The validation metrics against values worked out by hand on small tables (the arithmetic is
in the comments), never against scikit-learn, which :mod:`intima.validate.metrics` calls: that
comparison could not fail. Plus the edges the module documents (one class, no items, labels
absent from one side, non-finite scores) and the bootstrap interval's seeded draws."""

from __future__ import annotations

import subprocess
import sys
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intima.validate.metrics import (
    MIN_CLASS_FOR_INTERVAL,
    _class_weights,
    _weighted_aurocs,
    auroc,
    auroc_interval,
    by,
    confusion,
    macro_f1,
    per_class,
    plot_roc,
    report,
    roc_curve,
)

# -- a small table worked by hand ---------------------------------------------------------------

SCORES = [0.9, 0.8, 0.8, 0.6, 0.4, 0.3]
POS = [1, 1, 0, 1, 0, 0]

R, B, N, M = "reinforcing", "boundary", "neutral", "mixed"
TRUE = [R, R, R, B, B, N, N, N, N, B]
PRED = [R, R, B, B, M, N, R, N, N, B]
LABELS = [R, B, N]


def test_auroc_by_hand() -> None:
    # positives 0.9, 0.8, 0.6 vs negatives 0.8, 0.4, 0.3 (9 pairs):
    # 0.9 beats 3; 0.8 ties 0.8 (1/2) and beats 2 -> 2.5; 0.6 beats 2 -> 7.5 / 9
    assert auroc(SCORES, POS) == pytest.approx(7.5 / 9)


def test_roc_curve_by_hand() -> None:
    fpr, tpr, thr = roc_curve(SCORES, POS)
    # thresholds inf, 0.9, 0.8, 0.6, 0.4, 0.3; cumulative (tp, fp) at each:
    # (0,0) (1,0) (2,1) (3,1) (3,2) (3,3); divide by 3 positives and 3 negatives
    np.testing.assert_array_equal(thr, [np.inf, 0.9, 0.8, 0.6, 0.4, 0.3])
    np.testing.assert_allclose(tpr, [0, 1 / 3, 2 / 3, 1, 1, 1])
    np.testing.assert_allclose(fpr, [0, 0, 1 / 3, 1 / 3, 2 / 3, 1])


def test_confusion_by_hand_keeps_predicted_only_labels() -> None:
    labels, m = confusion(TRUE, PRED, LABELS)
    assert labels == [R, B, N, M]  # "mixed" is only predicted: appended, not dropped
    # rows true R, B, N, mixed; columns predicted R, B, N, mixed
    np.testing.assert_array_equal(
        m,
        [
            [2, 1, 0, 0],  # R: 2 right, 1 called boundary
            [0, 2, 0, 1],  # B: 2 right, 1 called mixed
            [1, 0, 3, 0],  # N: 3 right, 1 called reinforcing
            [0, 0, 0, 0],
        ],
    )


def test_per_class_by_hand() -> None:
    got = {c.label: c for c in per_class(TRUE, PRED, LABELS)}
    # R: tp 2, predicted 3 (2 R + 1 N), actual 3 -> P = R = 2/3, F1 = 2*2/(3+3) = 2/3
    # B: tp 2, predicted 3, actual 3 (one went to mixed) -> 2/3, 2/3, 2/3
    # N: tp 3, predicted 3, actual 4 -> P = 1, R = 3/4, F1 = 2*3/(3+4) = 6/7
    expected = {R: (2 / 3, 2 / 3, 2 / 3, 3), B: (2 / 3, 2 / 3, 2 / 3, 3), N: (1, 0.75, 6 / 7, 4)}
    for lbl, (p, r, f, s) in expected.items():
        c = got[lbl]
        assert (c.precision, c.recall, c.f1, c.support) == pytest.approx((p, r, f, s))
    # macro-F1 = (2/3 + 2/3 + 6/7) / 3 = 46/63 = 0.730159
    assert macro_f1(TRUE, PRED, LABELS) == pytest.approx(46 / 63)


def test_kappa_by_hand() -> None:
    # p_o = 7/10; marginals true R3 B3 N4 M0, predicted R3 B3 N3 M1:
    # p_e = (3*3 + 3*3 + 4*3 + 0*1) / 100 = 0.30; kappa = (0.7 - 0.3) / 0.7 = 4/7
    assert report(TRUE, PRED, labels=LABELS).kappa == pytest.approx(4 / 7)


def test_report_by_hand() -> None:
    rep = report(TRUE, PRED, labels=LABELS)
    assert rep.n == 10 and rep.accuracy == pytest.approx(0.7)
    assert rep.confusion_labels == (R, B, N, M)
    assert rep.macro_f1 == pytest.approx(46 / 63)
    assert rep.auroc is None and rep.auroc_lo is None
    asdict(rep)  # plain data


# -- more tables by hand ---------------------------------------------------------------------------


def test_auroc_which_class_is_positive() -> None:
    # positives 0.3, 0.7 vs negatives 0.1, 0.5 (4 pairs): 0.3 beats 0.1 -> 1; 0.7 beats both
    # -> 2; 3/4. With the classes swapped, 0.1 and 0.5 against 0.3 and 0.7: 0.5 beats 0.3 -> 1/4.
    assert auroc([0.3, 0.7, 0.1, 0.5], [1, 1, 0, 0]) == pytest.approx(3 / 4)
    assert auroc([0.3, 0.7, 0.1, 0.5], [0, 0, 1, 1]) == pytest.approx(1 / 4)
    # boolean positives as well as 0/1: a negative above both positives, 0.3 and 0.6 beat 0.1
    # and lose to 0.8 -> 2/4
    assert auroc([0.3, 0.6, 0.1, 0.8], [True, True, False, False]) == pytest.approx(0.5)


def test_per_class_zero_division_and_support() -> None:
    # true a a b b, predicted a b b b; labels a, b, z (z in neither)
    # a: tp 1, predicted 1, actual 2 -> P 1, R 1/2, F1 2*1/(1+2) = 2/3, support 2
    # b: tp 2, predicted 3, actual 2 -> P 2/3, R 1, F1 2*2/(3+2) = 4/5, support 2
    # z: 0/0 everywhere -> 0, 0, 0, support 0
    got = per_class(list("aabb"), list("abbb"), ["a", "b", "z"])
    assert [(c.label, c.precision, c.recall, c.f1, c.support) for c in got] == [
        ("a", pytest.approx(1.0), pytest.approx(0.5), pytest.approx(2 / 3), 2),
        ("b", pytest.approx(2 / 3), pytest.approx(1.0), pytest.approx(4 / 5), 2),
        ("z", 0.0, 0.0, 0.0, 0),
    ]
    # macro-F1 over a, b, z = (2/3 + 4/5 + 0) / 3 = 22/45; over a, b alone (11/15)
    assert macro_f1(list("aabb"), list("abbb"), ["a", "b", "z"]) == pytest.approx(22 / 45)
    assert macro_f1(list("aabb"), list("abbb")) == pytest.approx(11 / 15)


def test_labels_absent_from_one_side() -> None:
    # "mixed" is only predicted, "neutral" only true: neither is dropped from the matrix, and
    # the true-only label has recall 0 and precision 0/0 = 0, the predicted-only one support 0
    labels, m = confusion(["r", "n"], ["r", "mixed"])
    assert labels == ["mixed", "n", "r"]
    np.testing.assert_array_equal(m, [[0, 0, 0], [1, 0, 0], [0, 0, 1]])
    got = {c.label: c for c in per_class(["r", "n"], ["r", "mixed"])}
    assert (got["n"].precision, got["n"].recall, got["n"].support) == (0.0, 0.0, 1)
    assert (got["mixed"].precision, got["mixed"].recall, got["mixed"].support) == (0.0, 0.0, 0)
    assert got["r"].f1 == 1.0
    # a given label that neither side uses is a zero row and column
    labels, m = confusion(["a"], ["a"], ["a", "z"])
    assert labels == ["a", "z"] and m.tolist() == [[1, 0], [0, 0]]


def test_no_items() -> None:
    labels, m = confusion([], [], ["a", "b"])
    assert labels == ["a", "b"] and m.tolist() == [[0, 0], [0, 0]]
    assert [(c.label, c.f1, c.support) for c in per_class([], [], ["a", "b"])] == [
        ("a", 0.0, 0),
        ("b", 0.0, 0),
    ]
    assert per_class([], []) == []
    assert np.isnan(macro_f1([], [], []))  # no labels: no mean
    assert auroc([], []) is None and auroc_interval([], []) is None
    rep = report([], [], scores=[], positives=[])
    assert (rep.n, rep.accuracy, rep.kappa, rep.auroc, rep.confusion) == (0, None, None, None, ())


def test_single_class_and_bad_input() -> None:
    assert auroc([0.1, 0.2], [1, 1]) is None  # undefined: no negative
    assert auroc([0.1, 0.2], [0, 0]) is None
    assert auroc_interval([0.1, 0.2], [1, 1], b=20) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the NaN side is documented, not warned about
        fpr, tpr, _ = roc_curve([0.3, 0.1, 0.3], [1, 1, 1])
        # thresholds inf, 0.3, 0.1; tp 0, 2, 3 of 3 positives; no negative: fpr 0/0
        assert np.isnan(fpr).all() and tpr.tolist() == pytest.approx([0, 2 / 3, 1])
        fpr, tpr, _ = roc_curve([0.3, 0.1], [0, 0])
        assert fpr.tolist() == pytest.approx([0, 0.5, 1]) and np.isnan(tpr).all()
        assert report(["a"] * 4, ["a"] * 4).kappa is None  # p_e = 1: undefined
    assert report(["a", "b"], ["b", "a"]).kappa == pytest.approx(-1.0)  # (0 - 1/2) / (1 - 1/2)
    with pytest.raises(ValueError, match="NaN"):
        auroc([np.nan, 0.1], [1, 0])
    # refused before anything is computed, even where sklearn is never called (one class)
    for scores, positives in [([np.inf, 0.1], [1, 0]), ([-np.inf, 0.1], [1, 1])]:
        with pytest.raises(ValueError, match="scores contain infinity"):
            roc_curve(scores, positives)
        with pytest.raises(ValueError, match="scores contain infinity"):
            auroc(scores, positives)
    with pytest.raises(ValueError, match="2 positives"):
        auroc([0.1], [1, 0])
    with pytest.raises(ValueError, match="1 true labels but 2 predictions"):
        per_class(["a"], ["a", "b"])


# -- invariants on any input --------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(data=st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=2, max_size=60))
def test_auroc_is_the_area_under_roc_curve(data: list[tuple[int, bool]]) -> None:
    s = np.array([v for v, _ in data], dtype=float) / 10  # few values: many ties
    y = np.array([p for _, p in data], dtype=bool)
    if not 0 < y.sum() < y.size:
        assert auroc(s, y) is None
        return
    fpr, tpr, thr = roc_curve(s, y)
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0, 0, 1, 1)
    assert list(thr[1:]) == sorted(set(s), reverse=True)  # one point per distinct score
    area = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))  # trapezoids: ties count 1/2
    assert auroc(s, y) == pytest.approx(area)
    assert auroc(-s, y) == pytest.approx(1 - area)  # reversed scores
    assert auroc(s, ~y) == pytest.approx(1 - area)  # swapped classes


# -- the bootstrap interval -------------------------------------------------------------------------


def test_replicate_auroc_by_hand() -> None:
    # SCORES/POS: positives are items 0, 1, 3 (0.9, 0.8, 0.6), negatives 2, 4, 5 (0.8, 0.4,
    # 0.3); a replicate counts item i w[i] times, three of each class.
    # Row 1: positives 0.9 x2, 0.6 x1; negatives 0.8 x1, 0.3 x2. Negatives below 0.9: 3, below
    # 0.6: 2; sum of w * wins = 2*3 + 1*2 = 8 over 3*3 pairs -> 8/9.
    # Row 2: every item once: the plain AUROC, 7.5/9.
    # Row 3: positive 0.8 x3, negative 0.8 x3: every pair a tie, 1/2 -> 4.5/9.
    s, y = np.array(SCORES), np.array(POS, dtype=bool)
    w = np.array([[2, 0, 1, 1, 0, 2], [1, 1, 1, 1, 1, 1], [0, 3, 3, 0, 0, 0]], dtype=float)
    np.testing.assert_allclose(_weighted_aurocs(s, y, w), [8 / 9, 7.5 / 9, 4.5 / 9])


def _loop_interval(
    s: np.ndarray, y: np.ndarray, b: int, seed: int, strata: np.ndarray | None
) -> tuple[float, float]:
    """The same replicates, materialised one by one and scored with :func:`auroc`."""
    w = _class_weights(y, strata, b, np.random.default_rng(seed))
    reps = []
    for row in w:
        idx = np.repeat(np.arange(y.size), row.astype(int))
        reps.append(auroc(s[idx], y[idx]))
    lo, hi = np.quantile(reps, [0.025, 0.975])
    return float(lo), float(hi)


#: Recorded from the hand-written AUROC of intima 0.1.0 before it used scikit-learn: the same
#: data, b and seed must give the same interval (the draws are the seed's).
PINNED = {
    False: (0.6788728632478633, 0.8977920227920227),
    True: (0.7148415242165242, 0.9038639601139601),
}


@pytest.mark.parametrize("with_strata", [False, True])
def test_auroc_interval_keeps_its_seeded_draws(with_strata: bool) -> None:
    rng = np.random.default_rng(3)
    y = rng.uniform(size=80) < 0.3
    s = np.round(rng.normal(size=80) + y, 1)  # rounded: ties
    strata = rng.integers(0, 4, size=80) if with_strata else None
    got = auroc_interval(s, y, b=300, seed=5, strata=strata)
    assert got == pytest.approx(PINNED[with_strata], abs=1e-12)
    assert got == pytest.approx(_loop_interval(s, y, 300, 5, strata))
    assert auroc(s, y) == pytest.approx(0.8016381766381766, abs=1e-12)
    assert auroc_interval(s, y, b=300, seed=6, strata=strata) != got  # the seed matters


def test_auroc_interval_stratified_by_class() -> None:
    # Fewer than 5 of a class: no interval. One positive and one negative drew the same pair in
    # every replicate, a point interval; three and three gave [0.500, 0.500] at n = 6 (issue 33).
    assert auroc_interval([0.2, 0.9], [0, 1], b=50) is None
    assert auroc_interval([0.5] * 6, [1, 1, 1, 0, 0, 0], b=200) is None
    assert MIN_CLASS_FOR_INTERVAL == 5
    # positives 0.9 (twice) and 0.1 (three times) against negatives all at 0.5: a replicate
    # draws five positives (the negatives' AUROC part is fixed), so AUROC = k/5 for k draws of
    # 0.9, k ~ Binomial(5, 2/5): the 2.5% and 97.5% quantiles of 2,000 replicates are 0 and 0.8
    pos, neg = [0.9, 0.9, 0.1, 0.1, 0.1], [0.5] * 5
    got = auroc_interval(pos + neg, [1] * 5 + [0] * 5, b=2000, seed=0)
    assert got == pytest.approx((0.0, 0.8))
    w = _class_weights(
        np.array([True, False, False, True, False]), None, 40, np.random.default_rng(0)
    )
    np.testing.assert_array_equal(w[:, [0, 3]].sum(axis=1), 2)
    np.testing.assert_array_equal(w[:, [1, 2, 4]].sum(axis=1), 3)
    with pytest.raises(ValueError, match="b must be at least 1"):
        auroc_interval([0.2, 0.9], [0, 1], b=0)


# -- grouped reports and the plot -----------------------------------------------------------------


def test_by_groups() -> None:
    groups = ["x"] * 5 + ["y"] * 5
    scores = np.linspace(0, 1, 10)
    positives = np.array([0, 1, 0, 1, 1, 1, 1, 1, 1, 1], dtype=bool)  # group y: one class
    out = by(groups, TRUE, PRED, scores=scores, positives=positives, labels=LABELS, b=100)
    assert list(out) == ["overall", "x", "y"]
    assert out["overall"] == report(
        TRUE, PRED, scores=scores, positives=positives, labels=LABELS, b=100
    )
    assert out["x"].n == 5 and out["y"].n == 5
    assert out["x"].labels == out["y"].labels == tuple(LABELS)  # aligned across groups
    assert out["x"] == report(
        TRUE[:5], PRED[:5], scores=scores[:5], positives=positives[:5], labels=LABELS, b=100
    )
    assert out["y"].auroc is None and out["y"].auroc_lo is None  # undefined, documented
    # x: 3 positives and 2 negatives, an AUROC but too few of a class for an interval
    assert out["x"].auroc is not None and out["x"].auroc_lo is None
    assert sum(r.n for k, r in out.items() if k != "overall") == out["overall"].n


def test_plot_roc_writes_png(tmp_path: Path) -> None:
    fpr, tpr, _ = roc_curve(SCORES, POS)
    out = plot_roc(
        {"judge": (fpr, tpr, auroc(SCORES, POS)), "chance": ([0, 1], [0, 1], None)},
        tmp_path / "sub" / "roc.png",
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_matplotlib_and_sklearn_are_imported_lazily() -> None:
    code = "import sys, intima.validate.metrics; print('matplotlib' in sys.modules, 'sklearn' in sys.modules)"
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parents[1],
        capture_output=True,
        text=True,
        check=True,
    )
    assert res.stdout.split() == ["False", "False"]


def test_roc_curve_of_nothing_scored_is_the_origin() -> None:
    fpr, tpr, thr = roc_curve([], [])
    assert fpr.tolist() == [0.0] and tpr.tolist() == [0.0] and thr.tolist() == [float("inf")]
