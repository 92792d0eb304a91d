"""Agreement statistics against values computed by hand or published in the literature (not
against the krippendorff package, which intima itself calls: that comparison could not fail)."""

from __future__ import annotations

import pytest

from intima.judges.stats import cohen_kappa, krippendorff_alpha, pairwise_kappa

N = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 coders x 12 units
# example with missing values; the paper gives nominal 0.743, ordinal 0.815 and interval 0.849.
K2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


def test_alpha_matches_the_published_example() -> None:
    assert krippendorff_alpha(K2011, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(K2011, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(K2011, "interval") == pytest.approx(0.849, abs=5e-4)


def test_alpha_by_hand_on_a_small_table() -> None:
    # Units (a,a) (a,b) (b,b) (b,b): o_aa=2, o_ab=o_ba=1, o_bb=4; n_a=3, n_b=5, n=8.
    # alpha = 1 - (n-1) * (o_ab+o_ba) / (2 n_a n_b) = 1 - 7*2/30.
    data = [["a", "a", "b", "b"], ["a", "b", "b", "b"]]
    assert krippendorff_alpha(data, "nominal") == pytest.approx(1 - 14 / 30)


def test_ordinal_alpha_by_hand() -> None:
    # Units (0,0) (0,1) (2,2). o_00=2, o_01=o_10=1, o_22=2; n_0=3, n_1=1, n_2=2, n=6.
    # delta^2: (0,1) = (3+1 - (3+1)/2)^2 = 4; (0,2) = (6 - 5/2)^2 = 12.25;
    #          (1,2) = (3 - 3/2)^2 = 2.25
    # observed sum = 2*4 = 8
    # expected sum = 2*(3*1*4 + 3*2*12.25 + 1*2*2.25) = 2*(12+73.5+4.5) = 180
    data = [[0, 0, 2], [0, 1, 2]]
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(1 - 5 * 8 / 180)


def test_perfect_agreement_and_undefined_alpha() -> None:
    assert krippendorff_alpha([[0, 1, 2], [0, 1, 2]], "ordinal") == pytest.approx(1.0)
    # one value only: expected disagreement is zero, alpha is undefined (not 1, not 0)
    assert krippendorff_alpha([[1, 1, 1], [1, 1, 1]], "ordinal") is None
    # no pairable unit at all
    assert krippendorff_alpha([[1, N], [N, 2]], "nominal") is None


def test_missing_values_are_not_zeros() -> None:
    with_missing = [[0, 2, N, 1], [0, 2, 2, 1]]
    as_zero = [[0, 2, 0, 1], [0, 2, 2, 1]]
    assert krippendorff_alpha(with_missing, "ordinal") == pytest.approx(1.0)
    assert krippendorff_alpha(as_zero, "ordinal") != pytest.approx(1.0)


def test_cohen_kappa_by_hand() -> None:
    # p_o = 3/4; marginals A (2,2), B (1,3): p_e = (2*1 + 2*3)/16 = 1/2; kappa = 1/2
    assert cohen_kappa(list("aabb"), list("abbb")) == pytest.approx(0.5)


def test_weighted_kappa_by_hand() -> None:
    a, b = [0, 1, 2, 2], [0, 2, 2, 1]
    # linear: observed 0.25, expected 7/16 -> 1 - 4/7; quadratic: 0.125 vs 5.5/16 -> 7/11
    assert cohen_kappa(a, b, categories=[0, 1, 2], weights="linear") == pytest.approx(3 / 7)
    assert cohen_kappa(a, b, categories=[0, 1, 2], weights="quadratic") == pytest.approx(7 / 11)
    assert cohen_kappa(a, b, weights="quadratic") == pytest.approx(7 / 11)


def test_weighted_kappa_follows_the_given_order() -> None:
    # a = low low high, b = medium high high, linear weights |i-j|.
    # Order low=0, medium=1, high=2: pairs (0,1) (0,2) (2,2), observed (1+2+0)/3 = 1;
    # marginals a: 0->2, 2->1; b: 1->1, 2->2; expected sum of w * a_i * b_j / 9:
    # i=0: 2*1*1 + 2*2*2 = 10; i=2: 1*1*1 = 1 -> 11/9; kappa = 1 - 9/11 = 2/11.
    # Sorted as text (high=0, low=1, medium=2): pairs (1,2) (1,0) (0,0), observed 2/3;
    # a: 1->2, 0->1; b: 2->1, 0->2; expected (2*1*1 + 2*2*1 + 1*1*2)/9 = 8/9; kappa = 1/4.
    a, b = ["low", "low", "high"], ["medium", "high", "high"]
    order = ["low", "medium", "high"]
    assert cohen_kappa(a, b, categories=order, weights="linear") == pytest.approx(2 / 11)
    assert cohen_kappa(a, b, categories=sorted(order), weights="linear") == pytest.approx(1 / 4)


def test_kappa_undefined_and_unknown_values() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # undefined is None, not a warning and NaN
        assert cohen_kappa([1, 1], [1, 1]) is None  # one value: chance agreement is total
        assert cohen_kappa([2, 2], [2, 2], categories=[0, 1, 2], weights="linear") is None
    # always 0 against always 1: observed 1 (distance 1 each), expected 1 -> kappa 0, defined
    assert cohen_kappa([0, 0, 0], [1, 1, 1], categories=[0, 1, 2], weights="linear") == 0.0
    # a rater that always says 1 against 0, 1, 2 (quadratic, order 0 1 2): observed
    # (1 + 0 + 1)/3 = 2/3, expected: a's marginals 1/3 each, b all 1 -> (1 + 0 + 1)/3 = 2/3: 0
    assert cohen_kappa([0, 1, 2], [1, 1, 1], categories=[0, 1, 2], weights="quadratic") == 0.0
    with pytest.raises(ValueError, match="not among the categories"):
        cohen_kappa([0, 5], [0, 1], categories=[0, 1, 2])


def test_weighted_kappa_penalises_far_disagreements_more() -> None:
    near = cohen_kappa([0, 1, 2, 1], [0, 2, 2, 1], categories=[0, 1, 2], weights="linear")
    far = cohen_kappa([0, 1, 2, 0], [0, 1, 2, 2], categories=[0, 1, 2], weights="linear")
    assert near is not None and far is not None and near > far


def test_kappa_skips_missing_and_reports_shared_units() -> None:
    table = pairwise_kappa(
        {"b": [0, 1, 2, N], "a": [0, 1, 2, 2], "c": [N, N, N, 2]},
        categories=[0, 1, 2],
        weights="quadratic",
    )
    assert table[("a", "b")] == (pytest.approx(1.0), 3)
    assert table[("a", "c")] == (None, 1)  # one shared unit: chance agreement is total
    assert table[("b", "c")] == (None, 0)
    assert set(table) == {("a", "b"), ("a", "c"), ("b", "c")}
    assert cohen_kappa([N, N], [1, 2]) is None
