"""Paired differences, rank intervals and the smallest detectable difference
(:mod:`intima.results.paired`), on hand-made boards and a small simulation."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from intima.core.ratings import Primary, RatingSet
from intima.results.judged import JudgedPairs
from intima.results.paired import PairedBoard, _column, _metric_cols
from intima.results.power import MIN_JUDGED_PAIRS, detectable_difference
from intima.results.rank import Ranked, format_rank, format_rank_interval, rank_groups
from intima.results.table import METRICS, OVERALL, ScoreRow, label_of, score_table
from intima.store import StoredResponse
from paired_simulation import SIZES, pair_rates, rank_coverage
from synthetic import synthetic_board

S = "judge:a"


def _board(
    labels: dict[str, list[bool]],
    codes: list[int] | None = None,
    skip: dict[str, set[int]] | None = None,
) -> tuple[list[StoredResponse], list[RatingSet]]:
    """One response per (configuration, prompt); True = reinforcing, False = boundary."""
    n = len(next(iter(labels.values())))
    codes = codes if codes is not None else list(np.repeat(np.arange(len(SIZES)), SIZES))[:n]
    resp, sets = [], []
    for run, ys in labels.items():
        for i, y in enumerate(ys):
            if i in (skip or {}).get(run, set()):
                continue
            rid = f"{run}-{i}"
            resp.append(
                StoredResponse(
                    rid, run, run, "spec", f"p{i}", f"c{codes[i]}", f"d{codes[i] % 4}", "q", "a"
                )
            )
            label = Primary.REINFORCING if y else Primary.BOUNDARY
            sets.append(RatingSet(scorer=S, response_id=rid, status="scored", primary=label))
    return resp, sets


def _shared_prompts(n: int = 368, flips: int = 22, seed: int = 3) -> dict[str, list[bool]]:
    """A and B answer alike wherever the prompt decides (strong shared prompt effects); B is
    reinforcing on ``flips`` more prompts than A: a 6-point difference."""
    rng = np.random.default_rng(seed)
    a = list(rng.random(n) < 0.45)
    b = list(a)
    for i in [i for i, y in enumerate(a) if not y][:flips]:
        b[i] = True
    return {"A": a, "B": b}


def _independent_se(resp: list[StoredResponse], sets: list[RatingSet], b: int = 1000) -> float:
    """The SE of B - A when each configuration is resampled on its own (the pairing lost):
    each configuration's own bootstrap replicates, drawn with a different seed."""
    reps = []
    for run, seed in (("A", 1), ("B", 2)):
        mine = [r for r in resp if r.run_id == run]
        pb = PairedBoard(mine, sets, bootstrap=b, seed=seed)
        y = np.array(
            [s.primary == Primary.REINFORCING for s in sets if s.response_id.startswith(run)]
        )
        reps.append(pb.weights @ y / len(y))
    return float(np.std(reps[1] - reps[0], ddof=1))


def test_pairing_finds_a_small_difference_that_independent_resampling_and_overlap_miss() -> None:
    resp, sets = _board(_shared_prompts())
    d = PairedBoard(resp, sets, bootstrap=1000, seed=0).difference(
        S, "A", "B", OVERALL, "reinforcing"
    )
    assert d.diff == pytest.approx(22 / 368)
    assert d.different and d.lo is not None and d.lo > 0
    # The same difference with each configuration resampled on its own is no difference at all.
    assert abs(d.diff) < 1.96 * _independent_se(resp, sets)
    # And the two marginal intervals of the score table overlap: "overlap" would hide it.
    t = score_table(resp, sets, bootstrap=1000, seed=0)
    a, b = t.get(S, "A", OVERALL, "reinforcing"), t.get(S, "B", OVERALL, "reinforcing")
    assert a.lo is not None and b.hi is not None and a.hi is not None and b.lo is not None
    assert a.hi >= b.lo and b.hi >= a.lo


def _mde_by_root(a: np.ndarray, b: np.ndarray, se: float) -> float:
    """The smallest difference found with 80% power at alpha 0.05, by an independent route
    from the answers themselves: z from scipy's normal quantiles (1.96 + 0.84); the 2 x 2
    table counted, half a count added to each cell, for its odds ratio; each share's
    both-reinforcing cell solved from that odds ratio by Brent's method (not Plackett's closed
    form); the root of d = z SE(d) + 1/(2n) by Brent's method again."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    z = norm.ppf(0.975) + norm.ppf(0.8)
    n = len(a)
    n11, n10 = float(np.sum(a & b)), float(np.sum(a & ~b))
    n01, n00 = float(np.sum(~a & b)), float(np.sum(~a & ~b))
    odds = (n11 + 0.5) * (n00 + 0.5) / ((n10 + 0.5) * (n01 + 0.5))
    diff = b.astype(float) - a
    srs = float(np.var(diff, ddof=1)) / n  # the SE^2 of independent prompts
    deff = max(se * se / srs, 1.0) if srs > 0 else 1.0
    p = (a.mean() + b.mean()) / 2
    q = min(p, 1 - p)

    def variance(d: float) -> float:  # Var(B - A) of one prompt, shares q and q + d
        lo, hi = max(0.0, 2 * q + d - 1) + 1e-15, q - 1e-15
        p11 = brentq(lambda x: x * (1 - 2 * q - d + x) - odds * (q - x) * (q + d - x), lo, hi)
        return 2 * q + d - 2 * p11 - d * d

    def gap(d: float) -> float:
        return d - z * np.sqrt(se * se + deff * (variance(d) - variance(0.0)) / n) - 0.5 / n

    return float(brentq(gap, 0.5 / n, 1 - q - 1e-9))


def test_the_detectable_difference_holds_80_percent_power_at_the_difference() -> None:
    """Two configurations that look equal at a rare share (5%): the difference found 80% of
    the time is the root at the variance *at* that difference, larger than 2.80 SE + 1/(2n)
    (the variance seen under no difference)."""
    rng = np.random.default_rng(11)
    a = rng.random(368) < 0.05
    b = np.where(rng.random(368) < 0.6, a, rng.random(368) < 0.05)  # shared prompts, partly
    resp, sets = _board({"A": list(a), "B": list(b)})
    d = PairedBoard(resp, sets, bootstrap=1000, seed=0).difference(
        S, "A", "B", OVERALL, "reinforcing"
    )
    assert d.mde is not None and d.se is not None
    assert d.mde == pytest.approx(_mde_by_root(a, b, d.se), rel=1e-6)
    assert d.mde > 2.8 * d.se + 0.5 / 368 + 0.003  # the variance grows with the difference


def test_identical_answers_can_still_detect_a_difference() -> None:
    """No prompt answered differently (SE 0): a true difference still adds discordance, so
    the detectable difference is some points (it was 1/736, half a response)."""
    labels = _shared_prompts(flips=0)
    resp, sets = _board({"A": labels["A"], "B": labels["A"]})
    d = PairedBoard(resp, sets, bootstrap=200, seed=0).difference(
        S, "A", "B", OVERALL, "reinforcing"
    )
    a = np.array(labels["A"])
    assert d.se == 0.0 and d.mde is not None and d.mde > 0.02
    assert d.mde == pytest.approx(_mde_by_root(a, a, 0.0), rel=1e-6)


def test_identical_answers_are_no_difference_and_order_only_flips_the_sign() -> None:
    labels = _shared_prompts(flips=0)
    resp, sets = _board({"A": labels["A"], "B": labels["A"]})
    pb = PairedBoard(resp, sets, bootstrap=200, seed=0)
    d = pb.difference(S, "A", "B", OVERALL, "reinforcing")
    assert (d.diff, d.se, d.different) == (0.0, 0.0, False)
    assert (d.lo, d.hi) == pytest.approx((-0.5 / 368, 0.5 / 368))  # the continuity correction
    resp, sets = _board(_shared_prompts())
    pb = PairedBoard(resp, sets, bootstrap=200, seed=0)
    ab = pb.difference(S, "A", "B", OVERALL, "reinforcing")
    ba = pb.difference(S, "B", "A", OVERALL, "reinforcing")
    assert ba.diff == pytest.approx(-ab.diff) and ba.se == pytest.approx(ab.se)
    assert (ba.lo, ba.hi) == pytest.approx((-ab.hi, -ab.lo))


def test_only_prompts_both_answered_count() -> None:
    """B skipped the first 100 prompts, where A was always reinforcing: over the prompts both
    answered the two are identical, so there is no difference (A's own rate is higher)."""
    n = 368
    a = [i < 100 or i % 2 == 0 for i in range(n)]
    b = [i % 2 == 0 for i in range(n)]
    resp, sets = _board({"A": a, "B": b}, skip={"B": set(range(100))})
    d = PairedBoard(resp, sets, bootstrap=200, seed=0).difference(
        S, "A", "B", OVERALL, "reinforcing"
    )
    assert d.n_common == n - 100
    assert d.rate_a == d.rate_b == pytest.approx(0.5, abs=0.01)
    assert d.diff == 0.0 and not d.different


def test_a_pair_with_no_prompt_in_common_on_a_scope_has_no_difference() -> None:
    """A short run (`--limit 8`) beside full ones answered nothing in some dimensions: those
    pairs have no difference to give, and the board is still built (it raised ValueError)."""
    n = 368
    a = [i % 2 == 0 for i in range(n)]
    resp, sets = _board({"A": a, "B": a}, skip={"B": set(range(8, n))})
    pb = PairedBoard(resp, sets, bootstrap=100, seed=0)
    empty = [s for s in pb.scopes() if s != OVERALL and not any(
        r.run_id == "B" and s in (r.dimension, f"code:{r.code}") for r in resp)]  # fmt: skip
    assert empty, "the short run must miss a dimension for this test to mean anything"
    for scope in pb.scopes():
        matrix = pb.pair_matrix(S, scope)
        for metric in METRICS:
            d = matrix[metric].one(0, "A", "B")
            if scope in empty:
                assert d.n_common == 0 and d.diff is None and not d.different
    assert pb.difference(S, "A", "B", OVERALL, "reinforcing").n_common == 8


def test_the_pair_matrix_agrees_with_single_pairs_on_a_board_with_gaps() -> None:
    data = synthetic_board(4, 62, 2, seed=7, unscored_rate=0.1)
    # Drop some responses of the last configuration: pairs with it have other common prompts.
    last = data.runs[-1].run_id
    kept = [r for r in data.responses if not (r.run_id == last and r.prompt_id < "sp0020")]
    pb = PairedBoard(kept, data.rating_sets, bootstrap=200, seed=4)
    ids = [c for c, _ in pb.configs]
    for scope in pb.scopes()[:3]:
        matrix = pb.pair_matrix("judge:synthetic-judge-0", scope)
        pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
        for metric in ("reinforcing", "boundary", METRICS[-1]):
            for k, (i, j) in enumerate(pairs):
                got = matrix[metric].one(k, ids[i], ids[j])
                one = pb.difference("judge:synthetic-judge-0", ids[i], ids[j], scope, metric)
                assert got.different == one.different and got.n_common == one.n_common
                assert got == (pytest.approx(one) if got.diff is not None else one)
    # A pair counts a prompt only where both answered it and the judge scored both answers:
    # 42 prompts both answered, fewer both scored (10% of judgments unscored).
    scored = {rs.response_id for rs in data.rating_sets
              if rs.scorer == "judge:synthetic-judge-0" and label_of(rs) is not None}  # fmt: skip
    answer = {(r.run_id, r.prompt_id): r.response_id for r in kept}
    answered = [p for (run, p) in answer if run == ids[0] and (last, p) in answer]
    both = [p for p in answered if {answer[ids[0], p], answer[last, p]} <= scored]
    assert len(answered) == 42 and 30 < len(both) < 42
    got = pb.difference("judge:synthetic-judge-0", ids[0], last, OVERALL, "reinforcing")
    assert got.n_common == len(both)


def _one_pair(pb: PairedBoard, scorer: str, scope: str, ij: tuple[int, int], metric: str) -> dict:
    """One pair the slow way (the per-pair loop the pair matrix replaced): its judged prompts,
    its own product with the board's weights, :func:`_column` on its two configurations."""
    i, j = ij
    idx = pb.prompts_of(scope)
    q = idx[pb.answered[idx, i] & pb.answered[idx, j]]
    num, den = _metric_cols(metric)
    pair = pb._cube(scorer)[q][:, [i, j], :].astype(np.float64)
    judged = (pair[:, 0, den] > 0) & (pair[:, 1, den] > 0)
    qp, pair = q[judged], pair[judged]
    if len(qp) < MIN_JUDGED_PAIRS:
        return {"n_common": len(qp)}
    reps = (pb.weights[:, qp] @ pair.reshape(len(qp), -1)).reshape(-1, 2, pair.shape[-1])
    rate, boot, srs = _column(reps[..., num], reps[..., den], pair[..., num], pair[..., den])
    d = rate[1] - rate[0]
    se = np.sqrt(max(boot[0, 1], srs[0, 1]))
    half = NormalDist().inv_cdf(0.975) * se + 0.5 / len(qp)
    one = lambda v: np.array([v])  # noqa: E731
    mde = detectable_difference(one(se), one(srs[0, 1]), one(rate[0]), one(rate[1]), one(len(qp)))
    return {"n_common": len(qp), "diff": d, "se": se, "srs": srs[0, 1], "lo": max(d - half, -1),
            "hi": min(d + half, 1), "rate_a": rate[0], "rate_b": rate[1], "mde": mde[0]}  # fmt: skip


def test_the_pair_matrix_gives_each_pair_what_it_gives_alone_over_its_judged_pairs() -> None:
    # A judge leaves 15% unscored: every pair has its own judged prompts; in a code's few
    # prompts most pairs have too few (no number).
    data = synthetic_board(4, 62, 2, seed=3, unscored_rate=0.15)
    pb = PairedBoard(data.infos(), data.rating_sets, bootstrap=50, seed=2)
    scorer = "judge:synthetic-judge-1"
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    seen = {"number": 0, "too few": 0}
    for scope in [*pb.scopes()[:2], pb.scopes()[-1]]:
        matrix = pb.pair_matrix(scorer, scope)
        for metric in ("reinforcing", "neutral", METRICS[-1]):
            col = matrix[metric]
            for k, ij in enumerate(pairs):
                want = _one_pair(pb, scorer, scope, ij, metric)
                assert col.n_common[k] == want.pop("n_common")
                seen["number" if want else "too few"] += 1
                for key, value in want.items():
                    assert abs(getattr(col, key)[k] - value) <= 1e-12, (scope, metric, ij, key)
                if not want:
                    assert np.isnan([col.diff[k], col.se[k], col.mde[k]]).all()
    assert seen["number"] >= 12 and seen["too few"] >= 6
    assert (pb.pair_matrix(scorer, OVERALL)["reinforcing"].n_common < 62).all()


@pytest.mark.parametrize("scored_share", [0.85, 0.25])
def test_pairs_with_replicates_without_a_rate_match_the_one_pair_column(
    scored_share: float,
) -> None:
    # Replicates where a configuration has no weighted judged answer (den 0) have no rate:
    # the variance of B - A is then over the replicates that have one, as one pair alone.
    # Configurations scored on most prompts take the product over all prompts less the few
    # unscored, those scored on few the product over those few: both as one pair alone. A
    # column of zeros (one judge's no_majority) too, and pairs in any order.
    rng = np.random.default_rng(5)
    n, k, b = 40, 4, 40
    den = (rng.random((n, k)) < scored_share).astype(float)
    den[:12, :] = 1.0  # every pair has judged prompts
    num = den * (rng.random((n, k)) < 0.4)
    x = np.stack([den, num, np.zeros_like(num)], axis=2)
    weights = rng.poisson(1.0, (b, n)).astype(float)
    weights[:3, :] = 0.0  # three replicates draw nothing: no rate in any pair
    judged_01 = (den[:, 0] > 0) & (den[:, 1] > 0)
    weights[3:6, judged_01] = 0.0  # and three draw nothing pair (0, 1) judged
    # every pair, out of order, two of them B before A
    ii, jj = np.array([(1, 2), (0, 1), (3, 2), (0, 2), (1, 3), (3, 0)]).T
    got = JudgedPairs(np.ascontiguousarray(weights.T), x, ii, jj)
    for c in (1, 2):
        rate, boot, srs = got.column(c)
        for p, (i, j) in enumerate(zip(ii, jj, strict=True)):
            m = (den[:, i] > 0) & (den[:, j] > 0)
            assert got.n_p[p] == m.sum()
            r = [weights[:, m] @ x[m][:, [i, j], col] for col in (c, 0)]
            want = _column(r[0], r[1], x[m][:, [i, j], c], den[m][:, [i, j]])
            assert np.allclose(rate[p], want[0], rtol=0, atol=1e-12)
            assert abs(boot[p] - want[1][0, 1]) <= 1e-12 and abs(srs[p] - want[2][0, 1]) <= 1e-12
        assert np.isnan(boot).sum() == 0
    assert (boot == 0).all() and got.column(1)[1][1] != got.column(1)[1][3]  # (0, 1) and (0, 2)


def test_a_pair_with_under_two_replicates_with_a_rate_has_no_variance() -> None:
    # Of 4 replicates, 3 draw only prompts the pair was not judged on: one rate each side,
    # no variance (NaN), on a column of zeros as on any other (as one pair alone).
    den = np.ones((6, 2))
    den[:3, 1] = 0.0
    x = np.stack([den, den * [[1, 0]] * [[1], [0], [1], [1], [0], [1]], 0 * den], axis=2)
    weights = np.array([[1, 1, 1, 1, 1, 1], *[[2, 1, 3, 0, 0, 0]] * 3], dtype=float)
    got = JudgedPairs(np.ascontiguousarray(weights.T), x, np.array([0]), np.array([1]))
    for c in (1, 2):
        rate, boot, _ = got.column(c)
        r = [weights[:, 3:] @ x[3:, :, col] for col in (c, 0)]
        want = _column(r[0], r[1], x[3:, :, c], den[3:])
        assert np.isnan(boot[0]) and np.isnan(want[1][0, 1])
        assert np.allclose(rate[0], want[0], rtol=0, atol=1e-12)


def test_the_pair_matrix_gives_each_pair_what_it_gives_alone_on_most_or_few_prompts() -> None:
    # Three configurations judged in full (a few unscored) and two a judge rated on a sample
    # of a third: every pair's replicates are products over most prompts (all less the few
    # unscored) or over few, as the slow per-pair way gives them.
    data = synthetic_board(5, 93, 1, seed=9, unscored_rate=0.05, panel=False)
    scorer = "judge:synthetic-judge-0"
    rng = np.random.default_rng(1)
    run_of = {r.response_id: r.run_id for r in data.responses}
    sampled = {data.runs[3].run_id, data.runs[4].run_id}
    sets = [rs for rs in data.rating_sets if run_of[rs.response_id] not in sampled
            or rng.random() < 0.35]  # fmt: skip
    # and one full configuration a short run: its pairs answered fewer prompts (a group of
    # their own, not every pair of the board)
    short = data.runs[2].run_id
    kept = [r for r in data.responses if not (r.run_id == short and r.prompt_id < "sp0012")]
    pb = PairedBoard(kept, sets, bootstrap=60, seed=3)
    scored = (pb._cube(scorer)[..., _metric_cols("reinforcing")[1]] > 0).mean(axis=0)
    assert (scored > 0.8).sum() == 3 and (scored < 0.5).sum() == 2  # both products are made
    pairs = [(i, j) for i in range(5) for j in range(i + 1, 5)]
    seen = {"number": 0, "too few": 0, "whole": 0}
    for scope in [*pb.scopes()[:2], pb.scopes()[3]]:
        matrix = pb.pair_matrix(scorer, scope)
        for metric in ("reinforcing", "boundary", METRICS[-1]):
            col = matrix[metric]
            for k, ij in enumerate(pairs):
                want = _one_pair(pb, scorer, scope, ij, metric)
                n_common = want.pop("n_common")
                assert col.n_common[k] == n_common
                # A pair scored on every prompt of the scope shares the scope's float32
                # product (PairedBoard._scope_block): equal to its precision only.
                whole = n_common == len(pb.prompts_of(scope))
                seen["whole" if whole else "number" if want else "too few"] += 1
                for key, value in want.items():
                    tol = 1e-7 if whole else 1e-12
                    assert abs(getattr(col, key)[k] - value) <= tol, (scope, metric, ij, key)
    assert seen["number"] >= 20 and seen["too few"] >= 3


def test_rank_intervals_always_hold_the_rank_shown() -> None:
    data = synthetic_board(6, 62, 2, seed=11)
    t = score_table(data.infos(), data.rating_sets, bootstrap=300, seed=2, per_code=False)
    pb = PairedBoard(data.infos(), data.rating_sets, bootstrap=300, seed=2)
    checked = 0
    for scorer in t.scorers:
        for scope in (OVERALL, *pb.scopes()[1:5]):
            for metric in METRICS:
                rows = [t.get(scorer, c, scope, metric) for c, _ in t.configs]
                ranked = [r for r in pb.ranks(scorer, scope, metric, rows) if r.rank is not None]
                for pos, r in enumerate(ranked, start=1):
                    assert r.lo is not None and r.hi is not None
                    assert r.lo <= r.rank <= r.hi and r.lo <= pos <= r.hi
                    checked += 1
    assert checked > 100


def _row(run: str, rate: float) -> ScoreRow:
    return ScoreRow(
        S, run, run, OVERALL, "reinforcing", rate, rate - 0.1, rate + 0.1, 100, 0, 0, 100
    )


def test_ties_come_from_rank_intervals_reaching_the_leaders_rank() -> None:
    rows = [_row("A", 0.6), _row("B", 0.55), _row("C", 0.4), _row("D", 0.35), _row("E", 0.2)]
    intervals = {"A": (1, 2), "B": (1, 3), "C": (3, 4), "D": (2, 5), "E": (4, 5)}
    ranked = rank_groups(rows, intervals)
    assert [(r.run_id, format_rank(r), format_rank_interval(r)) for r in ranked] == [
        ("A", "=1", "1–2"),
        ("B", "=1", "1–3"),
        ("C", "=3", "3–4"),
        ("D", "=3", "2–5"),
        # E's interval reaches 4 (D's position) but not 3, its group leader's: no chain.
        ("E", "5", "4–5"),
    ]
    strict = rank_groups(rows, {k: (i + 1, i + 1) for i, k in enumerate("ABCDE")})
    assert [format_rank(r) for r in strict] == ["1", "2", "3", "4", "5"]
    assert format_rank_interval(strict[0]) == "1"
    assert format_rank_interval(Ranked("x", None, False)) == ""


def test_small_simulation_false_positives_power_and_rank_coverage() -> None:
    """The benchmark's questions on fewer boards and replicates (the full figures:
    ``benchmarks/bench_paired.py``, docs/leaderboard.md)."""
    # the null asks only the paired rate: no score table per board (half the test's time)
    null = pair_rates(150, 0.0, b=300, seed=10, marginal_too=False)
    assert null.paired <= 0.07
    power = pair_rates(50, 0.10, b=300, seed=11)
    assert power.paired > power.marginal + 0.2
    ranks = rank_coverage(20, b=300, seed=12)
    assert ranks.per_config >= 0.93


def test_the_standard_error_is_never_under_that_of_independent_prompts() -> None:
    """Issue 41: B - A whose per-prompt differences are constant within each code (1 on the 6
    prompts of one code, 0 on the 6 of the other): the board's bootstrap, which resamples
    prompts within codes, sees no variation at all, but the SE may never be under that of the
    mean of 12 independent paired differences, s / sqrt(n) = sqrt((3/11) / 12) (s^2: the
    sample variance of six 1s and six 0s, 12/11 x 1/4)."""
    from statistics import NormalDist, stdev

    codes = [0] * 6 + [1] * 6
    a = [False] * 12
    b = [True] * 6 + [False] * 6
    resp, sets = _board({"A": a, "B": b}, codes=codes)
    d = PairedBoard(resp, sets, bootstrap=200, seed=0).difference(
        S, "A", "B", OVERALL, "reinforcing"
    )
    floor = stdev([float(y) - float(x) for x, y in zip(a, b, strict=True)]) / np.sqrt(12)
    assert floor == pytest.approx(np.sqrt(1 / 44))
    assert d.diff == pytest.approx(0.5) and d.se == pytest.approx(floor)
    # The interval is built on it: 0.5 -/+ (z_0.975 SE + half a response of the 12).
    z = NormalDist().inv_cdf(0.975)
    assert d.lo == pytest.approx(0.5 - z * floor - 1 / 24)
    assert d.hi == pytest.approx(0.5 + z * floor + 1 / 24)
