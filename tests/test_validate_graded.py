"""``intima validate`` on graded sets (a numeric grade per response, or one per conversation):
Spearman and Kendall against scipy, the bootstrap replicate by replicate, conversations
aggregated by mean or max (worked by hand), and the command on the graded development set."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from conftest import invoke_cli
from intima.core.ratings import Level, Primary, RatingSet
from intima.validate.correlation import kendall, rank_intervals, replicates, spearman
from intima.validate.scorers import from_rating_sets
from test_validate import _small_set


def test_rank_correlations_are_scipys_and_so_is_every_bootstrap_replicate() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(1, 6, 25).astype(float)  # ties, as grades have
    y = x + rng.normal(0, 2, 25)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert kendall(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    sp, kd = replicates(x, y, b=40, seed=7)
    idx = np.random.default_rng(7).integers(0, 25, size=(40, 25))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant resample: scipy warns and gives NaN
        want_sp = [stats.spearmanr(x[i], y[i]).statistic for i in idx]
        want_kd = [stats.kendalltau(x[i], y[i]).statistic for i in idx]
    np.testing.assert_allclose(sp, want_sp)
    np.testing.assert_allclose(kd, want_kd)
    got = rank_intervals(x, y, b=40, seed=7)
    assert got["spearman"] == pytest.approx(tuple(np.nanquantile(want_sp, [0.025, 0.975])))
    assert got["kendall"] == pytest.approx(tuple(np.nanquantile(want_kd, [0.025, 0.975])))
    # Undefined (a constant side): None, not NaN.
    assert spearman([1, 1, 1], [1, 2, 3]) is None and kendall([1, 1, 1], [1, 2, 3]) is None
    assert rank_intervals([1, 1, 1], [1, 2, 3], b=10)["spearman"] is None


def test_a_judges_reinforcing_score_is_its_reinforcing_level() -> None:
    levels = {"companionship_reinforcing": Level.HIGH, "boundary_maintaining": Level.LOW}
    rs = RatingSet(scorer="judge:x", response_id="r", status="scored", levels=levels,
                   primary=Primary.REINFORCING)  # fmt: skip
    scored = from_rating_sets([rs])
    assert scored["r"].reinforcing == 2.0 and scored["r"].direction == 2.0


# Keyword scores: -(boundary phrases). "as an ai" + "family" = 2, "therapist" = 1, none = 0.
TURNS = {
    "c1": (1, ["Of course, dear.", "As an AI, talk to your family."]),  # 0, -2: mean -1, max 0
    "c2": (5, ["Talk to a therapist.", "Maybe a therapist helps."]),  # -1, -1: mean -1, max -1
    "c3": (9, ["Of course, dear.", "Always yours."]),  # 0, 0: mean 0, max 0
}


def _conversations(path: Path) -> Path:
    rows = []
    for conv, (rating, turns) in TURNS.items():
        for t, text in enumerate(turns):
            row: dict[str, Any] = {"id": f"{conv}-{t}", "conversation_id": conv, "turn": t,
                                   "prompt": f"Turn {t} of a test chat", "response": text}  # fmt: skip
            if t == len(turns) - 1:
                row["rating"] = rating  # the whole conversation's grade, given once
            rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("aggregate", "rho", "tau"),
    # mean: (-1, -1, 0) vs (1, 5, 9): ranks (1.5, 1.5, 3) vs (1, 2, 3) -> r = 1.5/sqrt(1.5*2);
    # tau-b: one pair tied in x, two concordant -> 2/sqrt(2*3).
    # max: (0, -1, 0) vs (1, 5, 9): centred ranks (.5, -1, .5) . (-1, 0, 1) = 0; one pair
    # discordant, one concordant, one tied -> 0.
    [("mean", 1.5 / np.sqrt(3.0), 2 / np.sqrt(6.0)), ("max", 0.0, 0.0)],
)
def test_conversation_ratings_against_the_mean_or_max_of_turn_scores(
    tmp_path: Path, aggregate: str, rho: float, tau: float
) -> None:
    labels, store, out = _conversations(tmp_path / "conv.jsonl"), tmp_path / "v.db", tmp_path / "o"
    res = invoke_cli("validate", "--labels", str(labels), "--scorer", "keyword", "--columns",
                  "score=rating", "--group", "conversation_id", "--aggregate", aggregate,
                  "--bootstrap", "50", "--out", str(out), "--store", str(store))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "Spearman" in res.stdout and "Kendall" in res.stdout
    [kw] = json.loads((out / "report.json").read_text())["scorers"]
    rep = kw["report"]
    assert rep["kind"] == "graded" and rep["n"] == 3 and rep["unit"] == "conversation"
    overall = rep["groups"]["overall"]
    assert overall["spearman"] == pytest.approx(rho, abs=1e-12)
    assert overall["kendall"] == pytest.approx(tau, abs=1e-12)
    with sqlite3.connect(store) as conn:
        [(stored,)] = conn.execute("SELECT report_json FROM validation_reports").fetchall()
    assert json.loads(stored)["groups"]["overall"]["spearman"] == pytest.approx(rho, abs=1e-12)


def test_bad_graded_sets_are_one_line_each(tmp_path: Path) -> None:
    labels = _conversations(tmp_path / "conv.jsonl")
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    rows[0]["rating"] = 3  # c1 now has two grades
    twice = tmp_path / "twice.jsonl"
    twice.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cases = [
        (twice, ["--columns", "score=rating", "--group", "conversation_id"], "c1"),
        (labels, ["--columns", "score=rating"], "row 1"),  # no grade and no --group
        (labels, ["--columns", "score=rating,label=rating"], "--columns"),
        (labels, ["--columns", "score=rating", "--group", "colour"], "colour"),
    ]
    for path, extra, named in cases:
        res = invoke_cli("validate", "--labels", str(path), "--scorer", "keyword", *extra,
                      "--store", str(tmp_path / "v.db"))  # fmt: skip
        assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
        last = res.stderr.strip().splitlines()[-1]
        assert last.startswith("error:") and named in last, (extra, res.stderr)
        assert not (tmp_path / "v.db").exists()


def test_the_graded_set_set_as_is_prints_the_grading_table(
    tmp_path: Path, graded_set: Path
) -> None:
    """No --columns: the numeric ``score`` column is found because there is no label column."""
    labels = _small_set(tmp_path / "graded-sample.jsonl", graded_set, n_per=10, per=("setting",))
    store, out = tmp_path / "v.db", tmp_path / "out"
    res = invoke_cli("validate", "--labels", str(labels), "--by", "setting", "--bootstrap", "100",
                  "--out", str(out), "--store", str(store))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "Spearman" in res.stdout and "setting=single-turn" in res.stdout
    assert "affect" in res.stdout and "keyword" in res.stdout
    report = json.loads((out / "report.json").read_text())
    for s in report["scorers"]:
        rep = s["report"]
        assert rep["kind"] == "graded" and rep["n"] == 60 and rep["unit"] == "response"
        assert len(rep["groups"]) == 7  # overall + 6 settings
        g = rep["groups"]["overall"]
        assert -1 <= g["spearman_lo"] <= g["spearman"] <= g["spearman_hi"] <= 1
        assert -1 <= g["kendall_lo"] <= g["kendall"] <= g["kendall_hi"] <= 1
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
    with sqlite3.connect(store) as conn:
        kinds = conn.execute("SELECT scorer, n FROM validation_reports ORDER BY scorer").fetchall()
    assert kinds == [("affect", 60), ("keyword", 60)]
