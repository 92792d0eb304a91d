from __future__ import annotations

import subprocess
import sys
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

from intima.validate.metrics import (
    _class_weights,
    auroc,
    auroc_interval,
    by,
    cohen_kappa,
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
    assert cohen_kappa(TRUE, PRED) == pytest.approx(4 / 7)


def test_report_by_hand() -> None:
    rep = report(TRUE, PRED, labels=LABELS)
    assert rep.n == 10 and rep.accuracy == pytest.approx(0.7)
    assert rep.confusion_labels == (R, B, N, M)
    assert rep.macro_f1 == pytest.approx(46 / 63)
    assert rep.auroc is None and rep.auroc_lo is None
    asdict(rep)  # plain data


# -- against scikit-learn -------------------------------------------------------------------------


def _both_classes(y: np.ndarray) -> bool:
    return 0 < int(y.sum()) < y.size


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=60),
    scale=st.sampled_from([1.0, 0.1, 1e-3]),
)
def test_binary_metrics_match_sklearn(data: list[tuple[int, bool]], scale: float) -> None:
    s = np.array([v for v, _ in data], dtype=float) * scale  # few values: many ties
    y = np.array([p for _, p in data], dtype=bool)
    fpr, tpr, thr = roc_curve(s, y)
    if _both_classes(y):
        assert auroc(s, y) == pytest.approx(skm.roc_auc_score(y, s))
        ref = skm.roc_curve(y, s, drop_intermediate=False)
        np.testing.assert_allclose(fpr, ref[0])
        np.testing.assert_allclose(tpr, ref[1])
        np.testing.assert_array_equal(thr, ref[2])
    else:
        assert auroc(s, y) is None
        assert auroc_interval(s, y, b=20) is None
        nan_side = fpr if y.all() else tpr
        assert np.isnan(nan_side).all()


@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from("abcd"), st.sampled_from("abcde")), min_size=1, max_size=50
    ),
    given_labels=st.booleans(),
)
def test_label_metrics_match_sklearn(pairs: list[tuple[str, str]], given_labels: bool) -> None:
    t = [a for a, _ in pairs]
    p = [b for _, b in pairs]
    labels = ["a", "b", "c", "d"] if given_labels else None
    ref_labels = labels if labels is not None else sorted({*t, *p})
    pr, rc, f1, sup = skm.precision_recall_fscore_support(t, p, labels=ref_labels, zero_division=0)
    got = per_class(t, p, labels)
    assert [c.label for c in got] == ref_labels
    np.testing.assert_allclose([c.precision for c in got], pr)
    np.testing.assert_allclose([c.recall for c in got], rc)
    np.testing.assert_allclose([c.f1 for c in got], f1)
    np.testing.assert_array_equal([c.support for c in got], sup)
    assert macro_f1(t, p, labels) == pytest.approx(
        skm.f1_score(t, p, labels=ref_labels, average="macro", zero_division=0)
    )
    names, m = confusion(t, p, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns when there is a single label
        ref_m = skm.confusion_matrix(t, p, labels=names)
    np.testing.assert_array_equal(m, ref_m)
    assert m.sum() == len(t)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # sklearn warns when kappa is undefined
        ref_kappa = skm.cohen_kappa_score(t, p)
    k = cohen_kappa(t, p)
    if np.isnan(ref_kappa):
        assert k is None
    else:
        assert k == pytest.approx(ref_kappa)


def test_single_class_and_empty_edges() -> None:
    assert auroc([0.1, 0.2], [1, 1]) is None
    assert auroc([0.1, 0.2], [0, 0]) is None
    assert cohen_kappa(["a"] * 4, ["a"] * 4) is None  # p_e = 1: undefined (sklearn: nan)
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    assert macro_f1([], [], []) != macro_f1([], [], [])  # NaN: no labels
    assert report([], []).accuracy is None
    with pytest.raises(ValueError, match="NaN"):
        auroc([np.nan, 0.1], [1, 0])
    with pytest.raises(ValueError):
        per_class(["a"], ["a", "b"])


# -- the bootstrap interval -------------------------------------------------------------------------


def _loop_interval(
    s: np.ndarray, y: np.ndarray, b: int, seed: int, strata: np.ndarray | None
) -> tuple[float, float]:
    """The same replicates, materialised one by one and scored with sklearn."""
    w = _class_weights(y, strata, b, np.random.default_rng(seed))
    reps = []
    for row in w:
        idx = np.repeat(np.arange(y.size), row.astype(int))
        assert _both_classes(y[idx])
        reps.append(skm.roc_auc_score(y[idx], s[idx]))
    lo, hi = np.quantile(reps, [0.025, 0.975])
    return float(lo), float(hi)


@pytest.mark.parametrize("with_strata", [False, True])
def test_auroc_interval_equals_materialised_bootstrap(with_strata: bool) -> None:
    rng = np.random.default_rng(3)
    y = rng.uniform(size=80) < 0.3
    s = np.round(rng.normal(size=80) + y, 1)  # rounded: ties
    strata = rng.integers(0, 4, size=80) if with_strata else None
    got = auroc_interval(s, y, b=300, seed=5, strata=strata)
    assert got is not None
    assert got == pytest.approx(_loop_interval(s, y, 300, 5, strata))
    point = auroc(s, y)
    assert point is not None and got[0] <= point <= got[1]
    assert got == auroc_interval(s, y, b=300, seed=5, strata=strata)  # seeded


def test_auroc_interval_stratified_by_class() -> None:
    # one positive and one negative: every replicate is the same pair, so the interval is a point
    assert auroc_interval([0.2, 0.9], [0, 1], b=50) == (1.0, 1.0)
    w = _class_weights(
        np.array([True, False, False, True, False]), None, 40, np.random.default_rng(0)
    )
    np.testing.assert_array_equal(w[:, [0, 3]].sum(axis=1), 2)
    np.testing.assert_array_equal(w[:, [1, 2, 4]].sum(axis=1), 3)


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
    assert out["x"].auroc is not None and out["x"].auroc_lo is not None
    assert sum(r.n for k, r in out.items() if k != "overall") == out["overall"].n


def test_plot_roc_writes_png(tmp_path: Path) -> None:
    fpr, tpr, _ = roc_curve(SCORES, POS)
    out = plot_roc(
        {"judge": (fpr, tpr, auroc(SCORES, POS)), "chance": ([0, 1], [0, 1], None)},
        tmp_path / "sub" / "roc.png",
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_matplotlib_is_imported_lazily() -> None:
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
