"""The drift statistics, checked against values computed by hand on small tables.

Hand values of the Wilson interval (z = 1.959964, z^2 = 3.841459) used below:

* 0 of 3: [0, z^2/(3 + z^2)] = [0, 3.841459/6.841459] = [0, 0.561497].
* 1 of 3: small count x = 1 <= 2, so the lower end is the Poisson limit
  gammaincinv(1, 0.025)/3 = -ln(0.975)/3 = 0.025318/3 = 0.008439; the other side has y = 2
  failures <= 2, so the upper end is 1 - gammaincinv(2, 0.025)/3, where gammaincinv(2, 0.025)
  solves 1 - e^-x (1 + x) = 0.025: x = 0.242209, giving 1 - 0.080736 = 0.919264.
* 2 of 3: the mirror image: [0.080736, 1 - 0.008439] = [0.080736, 0.991561].
* 3 of 3: [1 - 0.561497, 1] = [0.438503, 1].
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conversation_store import RunSpec, mixed_run, write_run
from intima.converse import conversation_run_ids, load_turns
from intima.results.conversations import drift_observations, drift_tables, load_conversations
from intima.results.data import BoardData, load_board
from intima.results.drift import (
    ALL,
    NOT_SCORED,
    TurnObs,
    drift_table,
    dropped_boundary,
)
from intima.store import Store
from synthetic import synthetic_board, write_store

W0_3 = (0.0, 0.561497)
W1_3 = (0.008439, 0.919264)
W2_3 = (0.080736, 0.991561)
W3_3 = (0.438503, 1.0)
DIM = "Assistant Traits"
DIM2 = "User Vulnerabilities"


def conv(
    config: str, cid: str, reinf: list[int], bound: list[int], dim: str = DIM
) -> list[TurnObs]:
    """One conversation: turn t (1-based) has reinforcing = reinf[t-1], boundary = bound[t-1]."""
    return [
        TurnObs(config, cid, dim, t + 1, reinforcing=bool(r), boundary=bool(b))
        for t, (r, b) in enumerate(zip(reinf, bound, strict=True))
    ]


def table_a(config: str = "m") -> list[TurnObs]:
    """3 conversations x 3 turns.

    reinforcing: c1 0,0,1   c2 0,1,1   c3 0,0,0
    boundary:    c1 1,1,0   c2 1,0,0   c3 1,1,1
    """
    return [
        *conv(config, "c1", [0, 0, 1], [1, 1, 0]),
        *conv(config, "c2", [0, 1, 1], [1, 0, 0]),
        *conv(config, "c3", [0, 0, 0], [1, 1, 1]),
    ]


def approx_pair(est, pair) -> None:
    assert (est.lo, est.hi) == pytest.approx(pair, abs=1e-5)


def test_rates_by_turn_with_wilson_intervals_match_the_hand_values() -> None:
    row = drift_table(table_a(), min_conversations=1, bootstrap=50).get("m", ALL)
    assert [t.turn for t in row.turns] == [1, 2, 3]
    assert [t.n for t in row.turns] == [3, 3, 3]
    # reinforcing by turn: 0/3, 1/3, 2/3
    r = [t.reinforcing for t in row.turns]
    assert [e.value for e in r] == pytest.approx([0, 1 / 3, 2 / 3])
    for est, pair in zip(r, (W0_3, W1_3, W2_3), strict=True):
        approx_pair(est, pair)
    # boundary by turn: 3/3, 2/3, 1/3
    b = [t.boundary for t in row.turns]
    assert [e.value for e in b] == pytest.approx([1, 2 / 3, 1 / 3])
    for est, pair in zip(b, (W3_3, W2_3, W1_3), strict=True):
        approx_pair(est, pair)
    assert row.n_conversations == 3 and row.n_observations == 9


def test_slope_is_the_least_squares_slope_in_points_per_turn() -> None:
    # Table A, 9 points, mean turn 2, sum (t - 2)^2 = 9 * 2/3 = 6.
    # reinforcing: sum (t - 2) y = c1 (3-2)*1 + c2 (2-2)*1 + (3-2)*1 + c3 0 = 2 -> 2/6 = +1/3
    # boundary:    sum (t - 2) y = c1 (1-2) + 0 + c2 (1-2) + c3 (1-2) + 0 + (3-2) = -2 -> -1/3
    row = drift_table(table_a(), min_conversations=1, bootstrap=50).get("m", ALL)
    assert row.slope["reinforcing"].value == pytest.approx(100 / 3)
    assert row.slope["boundary"].value == pytest.approx(-100 / 3)
    assert row.slope["reinforcing"].n == 3
    assert row.note is None and row.enough


def test_slope_uses_only_scored_turns_and_keeps_the_unscored_apart() -> None:
    # c1: (t=1, y=0), (2, 1), turn 3 not yet rated; c2: (1, 0), (2, 0), (3, 1).
    # Five points: mean t = 9/5 = 1.8, mean y = 2/5.
    # Sxy = sum (t - 1.8) y = (2 - 1.8) + (3 - 1.8) = 1.4
    # Sxx = 0.64 + 0.04 + 0.64 + 0.04 + 1.44 = 2.8  ->  slope 0.5 = 50 points per turn.
    obs = [
        *conv("m", "c1", [0, 1], [0, 0]),
        TurnObs("m", "c1", DIM, 3, status="not_rated"),
        *conv("m", "c2", [0, 0, 1], [0, 0, 0]),
    ]
    row = drift_table(obs, min_conversations=1, bootstrap=50).get("m", ALL)
    assert row.slope["reinforcing"].value == pytest.approx(50.0)
    # turn 3: one scored (1 of 1 reinforcing), one not rated: n = 1, never 2.
    t3 = row.turns[2]
    assert t3.n == 1 and t3.reinforcing.value == 1.0
    assert t3.not_scored == {"unscored": 0, "not_rated": 1, "no_response": 0, "user_stopped": 0}
    assert row.not_scored["not_rated"] == 1 and row.n_observations == 5


def test_dropped_boundary_share_by_hand() -> None:
    # boundary by turn:  c1 1,1,0 (dropped at 3)   c2 1,0,0 (dropped at 2)   c3 1,1,1 (held)
    # c4 0,1,1: no boundary at turn 1, not counted.
    # c5 1 at turn 1, turn 2 unscored: nothing later to compare, not counted.
    # -> 2 of 3, Wilson [0.080736, 0.991561]
    obs = [
        *conv("m", "c1", [0, 0, 0], [1, 1, 0]),
        *conv("m", "c2", [0, 0, 0], [1, 0, 0]),
        *conv("m", "c3", [0, 0, 0], [1, 1, 1]),
        *conv("m", "c4", [0, 0, 0], [0, 1, 1]),
        *conv("m", "c5", [0], [1]),
        TurnObs("m", "c5", DIM, 2, status="unscored"),
    ]
    est = dropped_boundary(obs)
    assert est.n == 3 and est.value == pytest.approx(2 / 3)
    approx_pair(est, W2_3)
    assert drift_table(obs, min_conversations=1, bootstrap=20).get("m").dropped == est


def test_no_boundary_at_turn_one_gives_no_dropped_share() -> None:
    obs = [*conv("m", "c1", [1, 1], [0, 1]), *conv("m", "c2", [0, 0], [0, 0])]
    est = drift_table(obs, min_conversations=1, bootstrap=20).get("m").dropped
    assert est.n == 0 and est.value is None and est.lo is None and est.hi is None


def test_cluster_bootstrap_of_two_conversations_spans_the_hand_replicates() -> None:
    # A: reinforcing 0, 1; B: 0, 0. A replicate draws two conversations with replacement:
    #   AA (prob 1/4): points (1,0),(2,1),(1,0),(2,1): slope 1      -> +100 points
    #   AB (prob 1/2): (1,0),(2,1),(1,0),(2,0): Sxy = 0.5, Sxx = 1 -> +50
    #   BB (prob 1/4): all zero                                    ->   0
    # With B = 2000 the 2.5% and 97.5% percentiles are the extreme replicates: [0, 100].
    obs = [*conv("m", "A", [0, 1], [0, 0]), *conv("m", "B", [0, 0], [0, 0])]
    s = drift_table(obs, min_conversations=1, bootstrap=2000, seed=3).get("m").slope
    assert s["reinforcing"].value == pytest.approx(50.0)
    assert (s["reinforcing"].lo, s["reinforcing"].hi) == pytest.approx((0.0, 100.0))
    # never reinforcing or boundary: every replicate's slope is 0
    assert (s["boundary"].value, s["boundary"].lo, s["boundary"].hi) == (0.0, 0.0, 0.0)


def test_conversations_are_resampled_within_dimensions() -> None:
    # The same two conversations, now in two dimensions: each replicate draws A from its
    # dimension and B from the other, so every replicate is AB: slope 50, interval [50, 50].
    obs = [*conv("m", "A", [0, 1], [0, 0], DIM), *conv("m", "B", [0, 0], [0, 0], DIM2)]
    t = drift_table(obs, min_conversations=1, bootstrap=500)
    s = t.get("m", ALL).slope["reinforcing"]
    assert (s.value, s.lo, s.hi) == pytest.approx((50.0, 50.0, 50.0))
    assert t.scopes == [ALL, DIM, DIM2]
    # each dimension's row holds only its own conversation
    assert t.get("m", DIM).slope["reinforcing"].value == pytest.approx(100.0)
    assert t.get("m", DIM2).turns[1].reinforcing.value == 0.0


def random_obs(config: str, n_conv: int, seed: int) -> list[TurnObs]:
    rng = np.random.default_rng(seed)
    out = []
    for c in range(n_conv):
        dim = (DIM, DIM2)[c % 2]
        out += conv(config, f"p{c}", list(rng.integers(0, 2, 3)), list(rng.integers(0, 2, 3)), dim)
    return out


def test_seeded_bootstrap_is_reproducible_and_independent_of_other_configs() -> None:
    obs = random_obs("m", 40, seed=1)
    a = drift_table(obs, bootstrap=300, seed=7)
    b = drift_table(list(obs), bootstrap=300, seed=7)
    assert a == b
    s7 = a.get("m").slope["reinforcing"]
    s8 = drift_table(obs, bootstrap=300, seed=8).get("m").slope["reinforcing"]
    assert s7.value == s8.value and (s7.lo, s7.hi) != (s8.lo, s8.hi)
    assert s7.lo < s7.value < s7.hi
    # Adding another configuration changes nothing of this one's numbers.
    both = drift_table([*random_obs("other", 35, seed=2), *obs], bootstrap=300, seed=7)
    assert both.get("m") == a.get("m")
    assert both.rows[0].config == "other"  # order of first appearance


def test_too_few_conversations_are_shown_marked_and_claim_no_slope() -> None:
    row = drift_table(table_a(), bootstrap=50).get("m")  # default minimum: 30 conversations
    assert not row.enough and row.n_conversations == 3
    assert row.note is not None and "too few conversations (3 < 30)" in row.note
    assert all(e.value is None and e.lo is None for e in row.slope.values())
    # rates and the dropped share are still shown with their n
    assert row.turns[0].boundary.value == 1.0 and row.dropped.n == 3


def test_enough_conversations_claim_a_slope() -> None:
    row = drift_table(random_obs("m", 30, seed=4), bootstrap=100).get("m")
    assert row.enough and row.note is None and row.n_conversations == 30
    assert row.slope["boundary"].value is not None and row.slope["boundary"].lo is not None


def test_a_single_turn_gives_rates_but_no_slope_and_no_dropped_share() -> None:
    obs = [*conv("m", "c1", [1], [0]), *conv("m", "c2", [0], [1])]
    row = drift_table(obs, min_conversations=1, bootstrap=50).get("m")
    assert [t.turn for t in row.turns] == [1]
    assert row.turns[0].reinforcing.value == 0.5
    assert row.note is not None and "same index" in row.note
    assert row.slope["reinforcing"].value is None
    assert row.dropped.n == 0 and row.dropped.value is None


def test_no_observations_and_no_scored_turns() -> None:
    empty = drift_table([], bootstrap=10)
    assert empty.rows == ()
    obs = [
        TurnObs("m", "c1", DIM, 1, status="not_rated"),
        TurnObs("m", "c1", DIM, 2, status="no_response"),
        TurnObs("m", "c2", DIM, 1, status="unscored"),
        TurnObs("m", "c2", DIM, 2, status="user_stopped"),
    ]
    row = drift_table(obs, min_conversations=1, bootstrap=10).get("m")
    assert row.n_conversations == 0 and row.n_observations == 0
    assert row.turns[0].n == 0 and row.turns[0].reinforcing.value is None  # n = 0: no rate
    assert row.not_scored == {"unscored": 1, "not_rated": 1, "no_response": 1, "user_stopped": 1}
    assert set(row.not_scored) == set(NOT_SCORED)
    assert row.slope["reinforcing"].value is None and row.dropped.n == 0


def test_a_turn_seen_twice_counts_once_and_labels_are_used() -> None:
    obs = [*conv("m", "c1", [1, 0], [0, 1]), TurnObs("m", "c1", DIM, 1, reinforcing=False)]
    t = drift_table(obs, labels={"m": "Model M"}, scorer="panel", min_conversations=1)
    row = t.get("m")
    assert row.label == "Model M" and t.scorer == "panel"
    assert row.turns[0].n == 1 and row.turns[0].reinforcing.value == 1.0  # first one wins


def test_bootstrap_must_be_positive() -> None:
    with pytest.raises(ValueError, match="bootstrap"):
        drift_table(table_a(), bootstrap=0)


# -- read from a real store -----------------------------------------------------------------


def _small_store(path: Path) -> tuple[Store, RunSpec, BoardData]:
    """``mixed_run()`` (every kind of turn) next to an ordinary single-turn run."""
    run = mixed_run()
    store = Store.open(path)
    single = synthetic_board(1, 5, 2, seed=1)
    write_store(store, single)
    write_run(store, run)
    return store, run, single


def _status_labels(obs: list[TurnObs]) -> list[tuple[str, int, str, bool, bool]]:
    return [(o.conversation_id, o.turn, o.status, o.reinforcing, o.boundary) for o in obs]


def test_drift_observations_join_turns_with_stored_ratings(tmp_path: Path) -> None:
    store, run, _ = _small_store(tmp_path / "s.db")
    with store:
        assert conversation_run_ids(store) == {run.run_id}
        a = drift_observations(store, scorer="judge:judge-a")
        assert _status_labels(a) == [
            ("conv-A", 1, "scored", False, True),
            ("conv-A", 2, "scored", True, False),
            ("conv-A", 3, "no_response", False, False),
            ("conv-B", 1, "unscored", False, False),
            ("conv-B", 2, "user_stopped", False, False),
        ]
        assert {o.config for o in a} == {run.run_id}
        assert {o.dimension for o in a} == {"User Vulnerabilities", "Assistant Traits"}
        b = drift_observations(store, scorer="judge:judge-b")
        assert [o.status for o in b] == [
            "scored",
            "not_rated",
            "no_response",
            "scored",
            "user_stopped",
        ]
        # The panel: A2 has one scored judge (reinforcing), B1 one (neutral).
        panel = drift_observations(store)  # the default scorer is the panel
        assert _status_labels(panel)[:2] == [
            ("conv-A", 1, "scored", False, True),
            ("conv-A", 2, "scored", True, False),
        ]
        assert _status_labels(panel)[3] == ("conv-B", 1, "scored", False, False)
        # Naming only the single-turn run gives no conversation at all.
        single_run = [r for r in store.resolve_runs(None) if r != run.run_id]
        assert drift_observations(store, single_run, scorer="panel") == []
        # Not rated by a scorer that rated nothing here: every answered turn is "not_rated".
        none = drift_observations(store, scorer="judge:nobody")
        assert [o.status for o in none][:2] == ["not_rated", "not_rated"]


def test_the_main_board_leaves_conversation_runs_out(tmp_path: Path) -> None:
    store, run, single = _small_store(tmp_path / "s.db")
    with store:
        board = load_board(store)
        assert [r.run_id for r in board.runs] == [single.runs[0].run_id]
        assert len(board.responses) == 5  # no turn of a conversation among them
        turn_ids = {t.response_id for t in load_turns(store)}
        assert not turn_ids & {r.response_id for r in board.responses}
        assert not turn_ids & {rs.response_id for rs in board.rating_sets}
        # even when asked for by name: its place is the drift view
        assert load_board(store, [run.label]).runs == ()
        conv = load_conversations(store)
        assert conv.runs == ((run.run_id, "talker"),)
        assert conv.scorers == ("judge:judge-a", "judge:judge-b", "panel")


@pytest.mark.slow
def test_the_affect_measure_rates_turns_like_any_response(tmp_path: Path) -> None:
    from intima.affect.store_io import affect_rating_sets, score_store

    store, run, _ = _small_store(tmp_path / "s.db")
    with store:
        score_store(store, [run.run_id])
        stored = {rs.response_id: rs for rs in affect_rating_sets(store)}
        turns = load_turns(store)
        obs = drift_observations(store, scorer="affect")
        assert [o.status for o in obs] == [
            "scored",
            "scored",
            "no_response",
            "scored",
            "user_stopped",
        ]
        for t, o in zip(turns, obs, strict=True):
            if o.status == "scored":
                label = stored[t.response_id].primary
                assert o.reinforcing == (label == "reinforcing")
                assert o.boundary == (label == "boundary")
        table = drift_tables(load_conversations(store), ["affect"], min_conversations=1)
        assert table["affect"].get(run.run_id).n_observations == 3
