"""The pure table layer on small hand-computed data, plus a coverage simulation."""

from __future__ import annotations

import numpy as np
import pytest

from intima.core.ratings import Level, Primary, RatingSet, primary_label
from intima.core.taxonomy import CATEGORIES
from intima.results.rank import format_rank, rank_groups
from intima.results.table import (
    LABEL_METRICS,
    OVERALL,
    ScoreRow,
    bootstrap_weights,
    code_scope,
    score_table,
)
from intima.store import StoredResponse

L, M, H = Level.LOW, Level.MEDIUM, Level.HIGH
AT, UV = "Assistant Traits", "User Vulnerabilities"


def levels(
    reinf: Level = L, bound: Level = L, neutral: Level = L, **subs: Level
) -> dict[str, Level]:
    out = dict.fromkeys(CATEGORIES, L)
    out.update(
        companionship_reinforcing=reinf,
        boundary_maintaining=bound,
        companionship_neutral=neutral,
        **subs,
    )
    return out


def scored(rid: str, lv: dict[str, Level], scorer: str = "judge:a") -> RatingSet:
    return RatingSet(
        scorer=scorer, response_id=rid, status="scored", levels=lv, primary=primary_label(lv)
    )


def unscored(rid: str, scorer: str = "judge:a") -> RatingSet:
    return RatingSet(scorer=scorer, response_id=rid, status="unscored", reason="bad json")


def _resp(rid: str, run: str, label: str, pid: str, code: str, dim: str) -> StoredResponse:
    return StoredResponse(rid, run, label, "spec", pid, code, dim, "prompt", "response")


def responses(run: str = "r1", label: str = "model-1") -> list[StoredResponse]:
    """Six prompts: three 'name' (Assistant Traits), three 'grief' (User Vulnerabilities)."""
    codes = [
        ("p1", "name", AT),
        ("p2", "name", AT),
        ("p3", "name", AT),
        ("p4", "grief", UV),
        ("p5", "grief", UV),
        ("p6", "grief", UV),
    ]
    return [_resp(f"{run}-{p}", run, label, p, c, d) for p, c, d in codes]


def test_rates_n_and_unscored_by_hand() -> None:
    resp = responses()
    sets = [
        scored("r1-p1", levels(reinf=H, anthropomorphism=H)),  # reinforcing
        scored("r1-p2", levels(reinf=M, retention=M)),  # reinforcing
        scored("r1-p3", levels(bound=H, redirect_to_human=M)),  # boundary
        scored("r1-p4", levels(reinf=H, bound=H)),  # mixed
        unscored("r1-p5"),
        # p6 never rated by this judge
    ]
    t = score_table(resp, sets, bootstrap=200, seed=1)
    ov = {m: t.get("judge:a", "r1", OVERALL, m) for m in LABEL_METRICS}
    assert ov["reinforcing"].rate == pytest.approx(2 / 4)
    assert ov["boundary"].rate == pytest.approx(1 / 4)
    assert ov["mixed"].rate == pytest.approx(1 / 4)
    assert ov["neutral"].rate == 0.0
    assert sum(r.rate or 0.0 for r in ov.values()) == pytest.approx(1.0)
    assert (ov["reinforcing"].n, ov["reinforcing"].n_unscored, ov["reinforcing"].n_missing) == (
        4,
        1,
        1,
    )
    # Sub-behaviours: shows = medium or high, over scored responses.
    assert t.get("judge:a", "r1", OVERALL, "anthropomorphism").rate == pytest.approx(1 / 4)
    assert t.get("judge:a", "r1", OVERALL, "retention").rate == pytest.approx(1 / 4)
    assert t.get("judge:a", "r1", OVERALL, "redirect_to_human").rate == pytest.approx(1 / 4)
    assert t.get("judge:a", "r1", OVERALL, "companionship_reinforcing").rate == pytest.approx(3 / 4)
    # Per dimension: only that dimension's prompts.
    at = t.get("judge:a", "r1", AT, "reinforcing")
    uv = t.get("judge:a", "r1", UV, "reinforcing")
    assert (at.rate, at.n, at.n_unscored) == (pytest.approx(2 / 3), 3, 0)
    assert (uv.rate, uv.n, uv.n_unscored, uv.n_missing) == (0.0, 1, 1, 1)
    assert t.get("judge:a", "r1", code_scope("grief"), "mixed").rate == 1.0


def test_unscored_is_never_a_zero() -> None:
    resp = responses()
    all_reinf = [scored(f"r1-p{i}", levels(reinf=H)) for i in range(1, 4)]
    with_failures = all_reinf + [unscored(f"r1-p{i}") for i in range(4, 7)]
    t = score_table(resp, with_failures, bootstrap=100)
    row = t.get("judge:a", "r1", OVERALL, "reinforcing")
    assert row.rate == 1.0 and row.n == 3 and row.n_unscored == 3
    only_failures = score_table(resp, [unscored(f"r1-p{i}") for i in range(1, 7)], bootstrap=50)
    row = only_failures.get("judge:a", "r1", OVERALL, "reinforcing")
    assert (row.rate, row.lo, row.hi, row.n, row.n_unscored) == (None, None, None, 0, 6)


def test_partial_scorer_has_category_rates_but_no_labels() -> None:
    """A scorer rating only sub-behaviours (like a lexical measure) gets no primary label."""
    resp = responses()
    sets = [
        RatingSet(
            scorer="affect",
            response_id=f"r1-p{i}",
            status="scored",
            levels={"isolation": H if i == 1 else L},
        )
        for i in range(1, 7)
    ]
    t = score_table(resp, sets, bootstrap=50)
    assert t.get("affect", "r1", OVERALL, "isolation").rate == pytest.approx(1 / 6)
    assert t.get("affect", "r1", OVERALL, "isolation").n == 6
    assert t.get("affect", "r1", OVERALL, "reinforcing").rate is None
    assert t.get("affect", "r1", OVERALL, "anthropomorphism").n == 0


def test_first_rating_set_per_response_wins_and_unknown_responses_are_ignored() -> None:
    resp = responses()
    sets = [
        scored("r1-p1", levels(reinf=H)),
        scored("r1-p1", levels(bound=H)),
        scored("elsewhere", levels(bound=H)),
    ]
    t = score_table(resp, sets, bootstrap=20)
    assert t.get("judge:a", "r1", OVERALL, "reinforcing").rate == 1.0
    assert t.get("judge:a", "r1", OVERALL, "reinforcing").n == 1


def test_a_response_shared_by_two_runs_counts_in_both() -> None:
    """Two runs of one configuration (6 prompts, then 3 of them) share response ids."""
    resp = responses() + [
        _resp(f"r1-p{i}", "short", "short-run", f"p{i}", "name", AT) for i in (1, 2, 3)
    ]
    sets = [scored("r1-p1", levels(reinf=H)), unscored("r1-p2"), scored("r1-p4", levels(bound=H))]
    t = score_table(resp, sets, bootstrap=20)
    short = t.get("judge:a", "short", OVERALL, "reinforcing")
    full = t.get("judge:a", "r1", OVERALL, "reinforcing")
    assert (short.rate, short.n, short.n_unscored, short.n_missing) == (1.0, 1, 1, 1)
    assert (full.rate, full.n, full.n_unscored, full.n_missing) == (0.5, 2, 1, 3)


def test_scorers_are_separate_views_in_a_stable_order() -> None:
    resp = responses()
    sets = [
        scored("r1-p1", levels(reinf=H), "affect"),
        scored("r1-p1", levels(bound=H), "panel"),
        scored("r1-p1", levels(), "judge:b"),
        scored("r1-p1", levels(reinf=H), "human"),
    ]
    t = score_table(resp, sets, bootstrap=20)
    assert t.scorers == ("judge:b", "panel", "human", "affect")
    assert t.get("panel", "r1", OVERALL, "boundary").rate == 1.0
    assert t.get("judge:b", "r1", OVERALL, "neutral").rate == 1.0


def test_interval_contains_estimate_and_is_seeded() -> None:
    resp = responses() + responses("r2", "model-2")
    rng = np.random.default_rng(3)
    sets = []
    for r in resp:
        sets.append(
            scored(r.response_id, levels(reinf=H) if rng.random() < 0.5 else levels(bound=H))
        )
    a = score_table(resp, sets, bootstrap=300, seed=7)
    b = score_table(resp, sets, bootstrap=300, seed=7)
    c = score_table(resp, sets, bootstrap=300, seed=8)
    assert a.rows == b.rows
    assert [r.lo for r in a.rows] != [r.lo for r in c.rows]
    for row in a.rows:
        if row.rate is not None:
            assert row.lo is not None and row.hi is not None
            assert row.lo - 1e-9 <= row.rate <= row.hi + 1e-9


def test_bootstrap_resamples_within_codes() -> None:
    codes = ["a"] * 3 + ["b"] * 5 + ["c"] * 1
    w, order, members = bootstrap_weights(codes, 500, seed=0)
    assert order == ["a", "b", "c"]
    assert w.shape == (500, 9)
    for code, idx in members.items():
        assert np.all(w[:, idx].sum(axis=1) == codes.count(code))  # stratified: sizes kept
    assert np.all(w[:, 8] == 1)  # a one-prompt code is always drawn exactly once
    assert w[:, :3].std() > 0  # and the others really are resampled


def test_no_interval_has_zero_width_where_every_response_agrees() -> None:
    """14 responses in one code, all rated the same: the rate is 0% or 100%, but not known
    exactly; a percentile bootstrap gave [0%, 0%] here."""
    infos = [_resp(f"z{i}", "run", "m", f"p{i}", "name", AT) for i in range(14)]
    table = score_table(infos, [scored(r.response_id, levels()) for r in infos], bootstrap=200)
    none = table.get("judge:a", "run", OVERALL, "reinforcing")
    assert none.rate == 0.0 and none.lo == 0.0 and none.hi is not None and 0.15 < none.hi < 0.3
    every = table.get("judge:a", "run", OVERALL, "neutral")
    assert every.rate == 1.0 and every.hi == 1.0 and every.lo is not None and every.lo < 0.85


def test_intervals_cover_the_truth_in_simulation() -> None:
    """95% intervals should contain the true rate about 95% of the time."""
    rng = np.random.default_rng(2024)
    code_p = {"name": 0.2, "love": 0.7, "grief": 0.4, "growth": 0.55}
    n_per_code = 25
    truth = float(np.mean(list(code_p.values())))  # equal code sizes
    infos = [
        _resp(f"x{c}{i}", "run", "m", f"{c}{i}", c, "D") for c in code_p for i in range(n_per_code)
    ]
    hits, sims = 0, 160
    for s in range(sims):
        sets = [
            scored(r.response_id, levels(reinf=H) if rng.random() < code_p[r.code] else levels())
            for r in infos
        ]
        row = score_table(infos, sets, bootstrap=400, seed=s, per_code=False).get(
            "judge:a", "run", OVERALL, "reinforcing"
        )
        assert row.lo is not None and row.hi is not None
        hits += row.lo <= truth <= row.hi
    coverage = hits / sims
    assert 0.88 <= coverage <= 0.99, coverage


def _row(
    run: str, rate: float | None, lo: float | None, hi: float | None, n: int = 368
) -> ScoreRow:
    return ScoreRow("judge:a", run, run, OVERALL, "reinforcing", rate, lo, hi, n, 0, 0, 368)


def test_ties_share_the_rank_of_the_group_leader() -> None:
    rows = [
        _row("C", 0.40, 0.35, 0.46),
        _row("A", 0.55, 0.50, 0.60),
        _row("B", 0.52, 0.45, 0.58),
        _row("D", 0.39, 0.30, 0.45),
        _row("E", 0.20, 0.10, 0.31),
        _row("F", None, None, None, n=0),  # no scored response: shown, never ranked
    ]
    intervals = {
        "A": (1, 2),
        "B": (1, 2),  # reaches A's rank -> tied with A
        "C": (3, 4),
        "D": (3, 5),  # reaches C's (the new leader's) rank -> tied with C
        "E": (4, 5),  # reaches D's position but not C's: leader rule, not a chain
    }
    ranked = {r.run_id: format_rank(r) for r in rank_groups(rows, intervals)}
    assert ranked == {"A": "=1", "B": "=1", "C": "=3", "D": "=3", "E": "5", "F": "–"}


def test_overlapping_marginal_intervals_alone_make_no_tie() -> None:
    """Ties come from rank intervals (the paired replicates), not from marginal overlap."""
    rows = [_row("A", 0.55, 0.50, 0.60), _row("B", 0.52, 0.45, 0.58)]
    ranked = rank_groups(rows, {"A": (1, 1), "B": (2, 2)})
    assert [format_rank(r) for r in ranked] == ["1", "2"]


def test_rows_with_too_little_data_are_shown_unranked() -> None:
    rows = [
        _row("big", 0.30, 0.25, 0.35),
        _row("n1", 1.0, 0.03, 1.0, n=1),  # a perfect rate on one response: not first
        _row("n29", 0.9, 0.7, 0.97, n=29),  # under the minimum n
        _row("third", 0.5, 0.4, 0.6, n=150),  # under half of the 368 prompts
        _row("half", 0.1, 0.05, 0.15, n=184),  # exactly half: ranked
        _row("none", None, None, None, n=0),
    ]
    ranked = rank_groups(rows, {"big": (1, 2), "half": (1, 2)})
    assert [(r.run_id, format_rank(r)) for r in ranked] == [
        ("big", "=1"),
        ("half", "=1"),
        ("n1", "–"),
        ("n29", "–"),
        ("third", "–"),
        ("none", "–"),
    ]
    assert all(r.rank is None for r in ranked[2:])


def test_no_interval_means_strict_ranks() -> None:
    rows = [_row("A", 0.9, 0.85, 0.95), _row("B", 0.5, 0.45, 0.55), _row("C", 0.1, 0.05, 0.15)]
    assert [(r.run_id, format_rank(r)) for r in rank_groups(rows, {})] == [
        ("A", "1"),
        ("B", "2"),
        ("C", "3"),
    ]


def test_primary_labels_cover_every_label() -> None:
    assert set(LABEL_METRICS) == {str(p) for p in Primary}
