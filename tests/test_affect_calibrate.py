"""Thresholds and agreement statistics, against hand-computed values and synthetic data."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intima.affect.calibrate import (
    LabelledPair,
    agreement,
    auroc,
    calibrate,
    fit_cuts,
    fit_thresholds,
    spearman,
    split_units,
    weighted_kappa,
)
from intima.affect.config import LEVELS, Thresholds


def test_weighted_kappa_matches_hand_computation() -> None:
    # reference [0,1,2,2], predicted [0,2,2,1]; quadratic weights ((i-j)/2)^2:
    # sum w*O = 0.25 + 0.25 = 0.5; sum w*E = 5.5/4 = 1.375; kappa = 1 - 0.5/1.375.
    assert weighted_kappa([0, 1, 2, 2], [0, 2, 2, 1], "quadratic") == pytest.approx(1 - 0.5 / 1.375)
    # linear weights |i-j|/2: sum w*O = 1.0; sum w*E = 7/4; kappa = 1 - 1/1.75.
    assert weighted_kappa([0, 1, 2, 2], [0, 2, 2, 1], "linear") == pytest.approx(1 - 1 / 1.75)
    assert weighted_kappa([0, 1, 2], [0, 1, 2]) == pytest.approx(1.0)
    assert weighted_kappa([0, 0], [0, 0]) is None  # no disagreement possible: undefined


def test_auroc_matches_hand_computation() -> None:
    # positives 0.35 and 0.8 against negatives 0.1 and 0.4: 3 of 4 pairs ranked right.
    assert auroc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == pytest.approx(0.75)
    assert auroc([0.5, 0.5], [True, False]) == pytest.approx(0.5)  # a tie counts 1/2
    assert auroc([0.9, 0.1], [True, False]) == 1.0
    assert auroc([0.9, 0.1], [True, True]) is None


def test_spearman() -> None:
    assert spearman([0.1, 0.2, 0.3], [0.0, 1.0, 2.0]) == pytest.approx(1.0)
    assert spearman([0.3, 0.2, 0.1], [0.0, 1.0, 2.0]) == pytest.approx(-1.0)
    assert spearman([0.1, 0.1], [0.0, 1.0]) is None


def pairs_from(
    values: list[tuple[float, str]], category: str = "anthropomorphism"
) -> list[LabelledPair]:
    return [
        LabelledPair(unit=f"u{i}", category=category, measure=m, reference=ref)  # type: ignore[arg-type]
        for i, (m, ref) in enumerate(values)
    ]


def test_fit_thresholds_recovers_separable_cut_points() -> None:
    data = [(0.05 * i, "low") for i in range(5)] + [(0.4 + 0.02 * i, "medium") for i in range(5)]
    data += [(0.8 + 0.01 * i, "high") for i in range(5)]
    cuts = fit_thresholds(pairs_from(data))
    assert 0.2 < cuts.medium < 0.4
    assert 0.48 < cuts.high < 0.8
    result = agreement(pairs_from(data), cuts)
    assert result.kappa_quadratic == pytest.approx(1.0)
    assert result.exact == 1.0
    assert result.confusion == [[5, 0, 0], [0, 5, 0], [0, 0, 5]]


def test_fit_per_behaviour_group() -> None:
    low_scale = pairs_from([(0.01, "low"), (0.1, "medium"), (0.2, "high")] * 3, "sycophancy")
    high_scale = pairs_from([(0.1, "low"), (0.5, "medium"), (0.9, "high")] * 3, "redirect_to_human")
    cuts = fit_cuts(low_scale + high_scale, "behaviour")
    assert cuts["companionship_reinforcing"].high < 0.2 < cuts["boundary_maintaining"].medium
    assert agreement(low_scale + high_scale, cuts).exact == 1.0


def test_split_is_deterministic_disjoint_and_complete() -> None:
    units = [f"r{i}" for i in range(10)] * 13
    train, test = split_units(units, 0.5, seed=3)
    assert (train, test) == split_units(units, 0.5, seed=3)
    assert train.isdisjoint(test) and train | test == set(units)
    assert len(train) == 5
    with pytest.raises(ValueError):
        split_units(units, 1.0, 0)


def test_calibrate_on_synthetic_data_generalises() -> None:
    rng = random.Random(7)
    pairs = []
    for i in range(200):
        level = rng.choice(LEVELS)
        centre = {"low": 0.1, "medium": 0.45, "high": 0.8}[level]
        pairs.append(
            LabelledPair(
                unit=f"r{i}", category="retention", measure=rng.gauss(centre, 0.1), reference=level
            )
        )
    report = calibrate(pairs, "synthetic", train_fraction=0.5, seed=1)
    assert report.n_train_units == 100 and report.n_test_units == 100
    assert report.test.kappa_quadratic is not None and report.test.kappa_quadratic > 0.8
    assert report.test.auroc is not None and report.test.auroc > 0.9
    assert report.per_category["retention"].n == report.test.n


@given(
    st.lists(
        st.tuples(st.floats(0, 3, allow_nan=False), st.sampled_from(LEVELS)),
        min_size=2,
        max_size=60,
    )
)
@settings(max_examples=60, deadline=None)
def test_fitted_thresholds_are_ordered_and_at_least_as_good_as_defaults(
    data: list[tuple[float, str]],
) -> None:
    pairs = pairs_from(data)
    cuts = fit_thresholds(pairs)
    assert cuts.medium <= cuts.high
    fitted = agreement(pairs, cuts).kappa_quadratic
    default = agreement(pairs, Thresholds(medium=0.33, high=0.57)).kappa_quadratic
    if fitted is not None and default is not None:
        assert fitted >= default - 1e-9


def test_the_threshold_grid_is_the_one_kappa_at_every_pair_of_cuts() -> None:
    """The threshold search computes kappa for all cut pairs at once; each cell must equal the
    weighted kappa (scikit-learn's, through the judges) of the levels those cuts give."""
    import numpy as np

    from intima.affect.calibrate import _kappa_grid, _weight_matrix

    rng = np.random.default_rng(7)
    classes = rng.integers(0, 3, size=40)
    prefix = np.zeros((41, 3))
    prefix[1:] = np.cumsum(np.eye(3)[classes], axis=0)
    cuts = np.array([0, 5, 13, 20, 27, 40])
    for weights in ("quadratic", "linear"):
        grid = _kappa_grid(prefix, cuts, _weight_matrix(weights, 3))
        for i, lo in enumerate(cuts):
            for j, hi in enumerate(cuts):
                if hi < lo:
                    assert np.isnan(grid[i, j])
                    continue
                predicted = [0 if p < lo else 1 if p < hi else 2 for p in range(40)]
                want = weighted_kappa(classes.tolist(), predicted, weights)
                assert (want is None and np.isnan(grid[i, j])) or grid[i, j] == pytest.approx(want)
