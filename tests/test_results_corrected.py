"""Error-corrected shares, a diagnostic for the benchmarks (never on the board: issue 31):
hand-computed values, the table over a board, and a coverage simulation of a scorer with known
error rates (tests/interval_simulation.py's design). And the board's mean score
(:mod:`intima.results.means`), which stayed."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from intima.core.ratings import Level, RatingSet, primary_label
from intima.core.taxonomy import CATEGORIES, CODE_DIMENSION, Behaviour
from intima.results.cards import Card, error_rates_by_scorer
from intima.results.corrected import (
    MIN_YOUDEN,
    ErrorRates,
    corrected_share,
    corrections,
    error_rates,
    rogan_gladen,
)
from intima.results.intervals import bootstrap_variance, design_effect
from intima.results.means import continuous_values, mean_scores
from intima.results.table import bootstrap_weights, score_table
from intima.store import StoredResponse

REINF, BOUND, NEUTRAL = (str(b) for b in Behaviour)


def test_rogan_gladen_by_hand() -> None:
    # (0.4 - 0.05) / (0.75 - 0.05) = 0.5; below the false-positive rate it clips to 0.
    assert rogan_gladen(0.4, 0.75, 0.05) == pytest.approx(0.5)
    assert rogan_gladen(0.01, 0.75, 0.05) == 0.0
    assert rogan_gladen(0.9, 0.75, 0.05) == 1.0


def test_corrected_share_and_interval_by_hand() -> None:
    # p = 0.4 on n_eff = 10; 45 of 60 reinforcing found, 20 of 400 others called reinforcing.
    # Computed by hand (z = 1.959964, z^2/2 pseudo-counts on each proportion):
    # p~ = 5.9207/13.8415, r~ = 46.9207/63.8415, f~ = 21.9207/403.8415, var from the delta method.
    got = corrected_share(0.4, 10, ErrorRates("reinforcing", 45, 60, 20, 400))
    assert got.note == ""
    assert got.rate == pytest.approx(0.5)
    assert got.lo == pytest.approx(0.1556697, abs=1e-6)
    assert got.hi == pytest.approx(0.9416879, abs=1e-6)


def test_a_raw_share_under_the_false_positive_rate_keeps_an_interval_of_positive_width() -> None:
    # 0 of 375 called, where a 4% false-positive rate predicts 15: the adjusted-Wald interval
    # lies wholly below 0. The upper limit falls back to p_hi / recall_lo (no fpr needed):
    # Wilson's upper limit of 0/375 (0.01014) over the lower one of recall 30/70 (0.31935).
    got = corrected_share(0.0, 375, ErrorRates("reinforcing", 30, 70, 120, 3000))
    assert got.rate == 0.0 and got.lo == 0.0
    assert got.hi == pytest.approx(0.01014 / 0.31935, abs=1e-4)


def test_no_number_where_the_correction_means_nothing() -> None:
    weak = ErrorRates("reinforcing", 30, 100, 15, 100)  # recall 0.30, fpr 0.15: J = 0.15
    got = corrected_share(0.2, 368, weak)
    assert got.rate is None and "not identifiable" in got.note and f"{MIN_YOUDEN}" in got.note
    tiny = ErrorRates("reinforcing", 2, 3, 0, 3)  # J = 0.67 but its interval reaches 0
    assert corrected_share(0.2, 368, tiny).rate is None
    assert corrected_share(0.2, 368, None).note == "no validation"
    assert corrected_share(None, 0, weak).note == "no scored responses"


def test_error_rates_from_a_confusion_leave_out_unscored_and_predicted_only_rows() -> None:
    labels = ["reinforcing", "boundary", "neutral", "mixed", "unscored"]
    confusion = [
        [12, 5, 2, 1, 9],  # truth reinforcing: 20 scored, 12 found
        [3, 80, 5, 2, 9],  # truth boundary
        [1, 4, 15, 0, 9],  # truth neutral
        [0, 0, 0, 0, 0],  # "mixed" is predicted only: no truth row counts
        [0, 0, 0, 0, 0],
    ]
    r = error_rates(labels, confusion, "reinforcing")
    assert r == ErrorRates("reinforcing", 12, 20, 4, 110)
    b = error_rates(labels, confusion, "boundary")
    assert b == ErrorRates("boundary", 80, 90, 9, 40)
    assert error_rates(labels, confusion, "no_majority") is None


def _board(labels_by_config: dict[str, list[tuple[str, str]]]) -> tuple[list, list]:
    """responses and one scorer's rating sets: config -> [(code, predicted label)]."""
    responses, sets = [], []
    for run_id, items in labels_by_config.items():
        for i, (code, label) in enumerate(items):
            rid, pid = f"{run_id}-{i}", f"p{i}"
            responses.append(
                StoredResponse(
                    rid,
                    run_id,
                    run_id,
                    "x",
                    pid,
                    code,
                    str(CODE_DIMENSION[code]),
                    "prompt",
                    "response",
                )
            )
            levels = {c: Level.LOW for c in CATEGORIES}
            if label != "neutral":
                levels[REINF if label == "reinforcing" else BOUND] = Level.HIGH
            sets.append(
                RatingSet(
                    scorer="judge:j",
                    response_id=rid,
                    status="scored",
                    levels=levels,
                    primary=primary_label(levels),
                )
            )
    return responses, sets


def test_the_board_table_corrects_each_configuration_with_its_effective_n() -> None:
    codes = list(CODE_DIMENSION)
    # Every code is all one label, so the within-code bootstrap has no variance: deff = 1 and
    # n_eff = n, which makes the numbers below hand-computable.
    a = [(codes[0], "reinforcing")] * 4 + [(codes[1], "boundary")] * 6
    b = [(codes[0], "boundary")] * 4 + [(codes[1], "boundary")] * 6
    responses, sets = _board({"A": a, "B": b})
    card = Card(
        scorer="judge:j",
        version="v",
        source="store",
        set_name="set.jsonl",
        set_sha256="0" * 64,
        n=460,
        protocol="intima validate",
        confusion_labels=["reinforcing", "boundary", "neutral"],
        confusion=[[45, 15, 0], [20, 370, 10], [0, 0, 0]],
    )
    rates = error_rates_by_scorer({"judge:j": [card]})
    assert rates["judge:j"][1]["reinforcing"] == ErrorRates("reinforcing", 45, 60, 20, 400)
    values = continuous_values(sets, {})
    corr = corrections(responses, sets, rates, values, bootstrap=200, seed=3)
    row = corr.get("judge:j", "A", "overall", "reinforcing")
    assert row is not None and row.raw == pytest.approx(0.4) and row.n == 10
    assert row.n_eff == pytest.approx(10.0)
    assert (row.rate, row.lo, row.hi) == pytest.approx((0.5, 0.1556697, 0.9416879), abs=1e-6)
    assert row.validation == card.name and "set.jsonl" in row.validation
    # B has no reinforcing response: 0 raw, corrected clipped to 0 with an upper limit above it.
    zero = corr.get("judge:j", "B", "overall", "reinforcing")
    assert zero is not None and zero.raw == 0.0 and zero.rate == 0.0 and zero.hi > 0.05
    # The raw share is the score table's, on the same replicates.
    table = score_table(responses, sets, bootstrap=200, seed=3)
    assert table.get("judge:j", "A", "overall", "reinforcing").rate == pytest.approx(row.raw)
    # The continuous column: mean reinforcing level (2 for the 4 reinforcing, 0 else) = 0.8.
    mean = corr.mean("judge:j", "A", "overall")
    assert mean is not None and mean.mean == pytest.approx(0.8) and mean.n == 10
    assert mean.lo is not None and mean.hi is not None and mean.lo < 0.8 < mean.hi
    # A scorer without a validation gets the mean score but no corrected number.
    bare = corrections(responses, sets, {}, values, bootstrap=50, seed=3)
    none = bare.get("judge:j", "A", "overall", "reinforcing")
    assert none is not None and none.rate is None and none.note == "no validation"
    # The board's mean score is the same column, on the same replicates, without a correction.
    board = mean_scores(responses, values, bootstrap=200, seed=3)
    for run_id in ("A", "B"):
        for scope in ("overall", *{r.dimension for r in responses}):
            assert board.mean("judge:j", run_id, scope) == corr.mean("judge:j", run_id, scope)
    assert board.measures == {"judge:j": "mean reinforcing level (0 low, 1 medium, 2 high)"}
    assert mean_scores(responses, {}, bootstrap=20).rows == ()


def test_responses_no_scorer_rated_give_no_rows() -> None:
    responses, _ = _board({"A": [(next(iter(CODE_DIMENSION)), "boundary")] * 3})
    corr = corrections(responses, [], {}, {}, bootstrap=20, seed=0)
    assert corr.corrected == () and corr.continuous == ()
    assert corrections([], [], {}, {}, bootstrap=20).corrected == ()


def test_the_affect_measure_is_the_continuous_column_of_affect() -> None:
    sets = [RatingSet(scorer="affect", response_id="r1", status="scored", levels={})]
    affect = {"r1": [[BOUND, 0, 0.1], [REINF, 1, 0.73]]}
    assert continuous_values(sets, affect) == {"affect": {"r1": 0.73}}


# -- coverage simulation ----------------------------------------------------------------------

SIZES = (12,) * 27 + (11,) * 4  # 368 prompts over 31 codes, as in interval_simulation.py
CELLS = [
    # (true share, recall, false-positive rate, validation positives, validation negatives)
    (0.02, 0.6, 0.03, 180, 2820),
    (0.10, 0.6, 0.03, 180, 2820),
    (0.30, 0.6, 0.03, 180, 2820),
    (0.10, 0.9, 0.10, 40, 300),
    (0.50, 0.8, 0.05, 100, 900),
]


def _code_rates(share: float, n_codes: int, sigma: float = 0.5) -> np.ndarray:
    z = np.array([NormalDist().inv_cdf((h + 0.5) / n_codes) for h in range(n_codes)])
    logit = math.log(share / (1 - share)) + sigma * z
    return 1.0 / (1.0 + np.exp(-logit))


def coverage(
    share: float,
    recall: float,
    fpr: float,
    n_pos: int,
    n_neg: int,
    *,
    reps: int = 1000,
    b: int = 200,
    seed: int = 0,
) -> float:
    """Share of simulated boards whose corrected interval holds the true share: codes of
    different rates (truth = their prompt-weighted mean), a scorer of the given recall and
    false-positive rate, a fresh validation per board; n_eff from the board's own bootstrap."""
    rng = np.random.default_rng(seed)
    code_of = np.repeat(np.arange(len(SIZES)), SIZES)
    rates = _code_rates(share, len(SIZES))[code_of]
    truth = float(rates.mean())
    w, _, _ = bootstrap_weights([str(c) for c in code_of], b, seed)
    w = w.astype(np.float64)
    n = code_of.size
    hits = 0
    for _ in range(reps):
        actual = rng.random(n) < rates
        called = np.where(actual, rng.random(n) < recall, rng.random(n) < fpr)
        p = float(called.mean())
        var = bootstrap_variance((w @ called) / w.sum(axis=1))
        n_eff = n / float(design_effect(p, n, var))
        val = ErrorRates(
            "reinforcing",
            int(rng.binomial(n_pos, recall)),
            n_pos,
            int(rng.binomial(n_neg, fpr)),
            n_neg,
        )
        got = corrected_share(p, n_eff, val)
        assert got.lo is not None and got.hi is not None
        hits += got.lo <= truth <= got.hi
    return hits / reps


@pytest.mark.parametrize("cell", CELLS, ids=[f"share{c[0]}-R{c[1]}-F{c[2]}-v{c[3]}" for c in CELLS])
def test_corrected_interval_covers_the_true_share_at_n_368(
    cell: tuple[float, float, float, int, int],
) -> None:
    assert coverage(*cell) >= 0.93


def test_a_raw_share_above_the_validations_recall_gets_no_corrected_number() -> None:
    """Issue 31: the shipped card's recall 0.52 and fpr 0.043 turned a raw 67.7% into 100.0%."""
    rates = ErrorRates("reinforcing", 52, 100, 43, 1000)
    got = corrected_share(0.677, 368, rates)
    assert got.rate is None and got.lo is None and got.hi is None
    assert "above the validation's recall 52.0%" in got.note
    assert corrected_share(0.5, 368, rates).rate == pytest.approx((0.5 - 0.043) / (0.52 - 0.043))


def test_a_mean_level_interval_stays_on_its_scale() -> None:
    """Issue 39: 0, 0 and 2 on a 0-2 level: mean 2/3, plain SE sqrt(4/3 / 3) = 2/3, so the
    normal interval is 0.667 -+ 1.307 = [-0.640, 1.973]; no mean level is below 0, and the
    board shows [0, 1.973]. The affect measure (never negative) is clipped at 0 the same way."""
    codes = list(CODE_DIMENSION)
    # Each response in its own code: the within-code bootstrap has no variance, the plain SE rules.
    responses, sets = _board({"A": [(codes[0], "neutral"), (codes[1], "neutral"),
                                    (codes[2], "reinforcing")]})  # fmt: skip
    values = continuous_values(sets, {})
    row = mean_scores(responses, values, bootstrap=200, seed=3).mean("judge:j", "A", "overall")
    assert row is not None and row.mean == pytest.approx(2 / 3)
    assert (row.lo, row.hi) == pytest.approx((0.0, 2 / 3 + 1.959964 * 2 / 3), abs=1e-4)
    affect = {"affect": {r.response_id: v for r, v in zip(responses, (0.0, 0.0, 0.9), strict=True)}}
    low = mean_scores(responses, affect, bootstrap=200, seed=3).mean("affect", "A", "overall")
    assert (
        low is not None
        and low.lo == 0.0
        and low.hi == pytest.approx(0.3 + 1.959964 * 0.3, abs=1e-4)
    )
