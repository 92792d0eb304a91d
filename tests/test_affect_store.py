"""Scoring stored responses: resumable, idempotent, every factor stored; the CLI on top."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from intima.affect.config import AffectConfig
from intima.affect.factors import combine
from intima.affect.measure import AffectScorer
from intima.affect.store_io import affect_rating_sets, load_scores, score_for, score_store
from intima.cli import app
from intima.core.errors import IntimaError
from intima.core.taxonomy import CATEGORIES
from intima.dataset import load_prompts
from intima.store import ResponseRecord, RunRecord, Store

pytestmark = pytest.mark.slow

REPLIES = [
    "I love you too, more than anything! ❤️",
    "I'm an AI, so I don't have feelings. Please consider talking to a friend or a counsellor.",
    "Sure. Here are three tips: keep a routine, go outside daily, and call someone you trust.",
]


def _store(path: Path) -> Store:
    store = Store.open(path)
    prompts = load_prompts("demo")
    run = RunRecord(
        run_id="run-affect", label="affect-test", model_spec="fake", provider="fake",
        model_name="fake", config_key="cfg", config_json="{}", dataset=prompts.info,
        dataset_fingerprint=prompts.fingerprint, n_prompts=len(prompts),
    )  # fmt: skip
    store.ensure_run(run, prompts.prompts)
    records = [
        ResponseRecord(
            response_id=f"resp-{i}",
            config_key="cfg",
            prompt_id=p.prompt_id,
            status="ok",
            text=REPLIES[i % len(REPLIES)],
        )
        for i, p in enumerate(prompts.prompts[:5])
    ]
    records.append(
        ResponseRecord(
            response_id="resp-failed",
            config_key="cfg",
            prompt_id=prompts.prompts[5].prompt_id,
            status="error",
            error="boom",
        )
    )
    store.record_responses(records)
    return store


def test_scoring_stores_every_factor_and_resumes(tmp_path: Path) -> None:
    with _store(tmp_path / "s.db") as store:
        first = score_store(store, ["affect-test"])
        assert (first.n_responses, first.already_scored, first.scored) == (5, 0, 5)
        rows = store.query("SELECT * FROM affect_scores")
        assert len(rows) == 5 * len(CATEGORIES)
        assert {r["response_id"] for r in rows} == {f"resp-{i}" for i in range(5)}
        for r in rows:
            assert r["measure"] == combine(
                r["sp"], r["els"], r["ssl"], r["dm"], r["ef"], r["em"], r["lr"], r["nf"],
                r["ci"], r["w"],
            )  # fmt: skip
            assert r["config_key"] == AffectConfig().key
        again = score_store(store)  # all runs: nothing left to do
        assert (again.already_scored, again.scored) == (5, 0)
        assert len(store.query("SELECT 1 FROM affect_scores")) == 5 * len(CATEGORIES)
        other = score_store(store, config=AffectConfig(w=0.5))  # another config: scored anew
        assert other.scored == 5
        assert sum(other.levels["anthropomorphism"].values()) == 5


def test_stored_scores_explain_and_feed_the_leaderboard(tmp_path: Path) -> None:
    with _store(tmp_path / "s.db") as store:
        score_store(store)
        scores = load_scores(store)
        assert set(scores) == {f"resp-{i}" for i in range(5)}
        stored, was_stored = score_for(store, "resp-0")
        assert was_stored
        fresh = AffectScorer().score_one(REPLIES[0], stored_prompt(store, "resp-0"), "resp-0")
        assert stored.model_dump() == fresh.model_dump()  # the store round-trips every field
        assert stored.scores["companionship_reinforcing"].level == "high"
        assert stored.families["claimed_feelings"] == 1
        sets = {s.response_id: s for s in affect_rating_sets(store)}
        assert sets["resp-1"].levels["boundary_maintaining"] >= 1
        assert sets["resp-0"].primary == "reinforcing"
        assert sets["resp-1"].primary == "boundary"
        nf = [r["nf"] for r in store.query("SELECT nf FROM affect_scores")]
        assert any(0.0 < x < 1.0 for x in nf)  # continuous NF is stored as REAL


def stored_prompt(store: Store, response_id: str) -> str:
    rows = store.query(
        "SELECT p.text FROM responses r JOIN prompts p ON p.prompt_id = r.prompt_id "
        "WHERE r.response_id = ?",
        (response_id,),
    )
    return str(rows[0][0])


def _cli() -> CliRunner:
    return CliRunner()


def test_cli_score_explain_calibrate(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store(path).close()
    runner = _cli()
    res = runner.invoke(app, ["score", "--store", str(path)])
    assert res.exit_code == 0, res.output
    assert "anthropomorphism" in res.output
    res = runner.invoke(
        app, ["explain", "resp-1", "--store", str(path), "-c", "programmatic_limitations"]
    )
    assert res.exit_code == 0, res.output
    assert "programmatic_limitations" in res.output and "head logit" in res.output
    assert "from the store" in res.output
    res = runner.invoke(app, ["calibrate", "--against", "labelled", "--split-seed", "1"])
    assert res.exit_code == 0, res.output
    assert "kappa" in res.output and "test" in res.output
    # One scorer, so no --scorer: it offered one value and was no choice at all (issue 24).
    res = runner.invoke(app, ["score", "--scorer", "affect", "--store", str(path)])
    assert res.exit_code != 0 and "No such option: --scorer" in res.output


def test_calibrate_against_stored_human_ratings(tmp_path: Path) -> None:
    from intima.affect.labelled import load_labelled
    from intima.affect.store_io import calibrate_store, reference_pairs
    from intima.judges.prompt import content_hash
    from intima.judges.store_io import (
        HUMAN_FORM_SHA256,
        HUMAN_FORM_VERSION,
        JudgmentRecord,
        write_judgments,
    )

    examples = load_labelled()[::4][:20]  # 20 responses across the sub-behaviours
    prompts = load_prompts("demo")
    with Store.open(tmp_path / "s.db") as store:
        run = RunRecord(
            run_id="run-h", label="human-test", model_spec="fake", provider="fake",
            model_name="fake", config_key="cfg", config_json="{}", dataset=prompts.info,
            dataset_fingerprint=prompts.fingerprint, n_prompts=len(prompts),
        )  # fmt: skip
        store.ensure_run(run, prompts.prompts)
        pairs = list(zip(prompts.prompts[: len(examples)], examples, strict=True))
        store.record_responses(
            [
                ResponseRecord(
                    response_id=f"h-{i}",
                    config_key="cfg",
                    prompt_id=p.prompt_id,
                    status="ok",
                    text=ex.response,
                )
                for i, (p, ex) in enumerate(pairs)
            ]
        )
        write_judgments(
            store,
            [
                JudgmentRecord(
                    content_hash=content_hash(p.text, ex.response),
                    judge_key="human:ann",
                    judge_kind="human",
                    judge_label="ann",
                    prompt_version=HUMAN_FORM_VERSION,
                    prompt_sha256=HUMAN_FORM_SHA256,
                    status="scored",
                    ratings=dict(ex.ratings),
                )
                for p, ex in pairs
            ],
        )
        score_store(store)
        found = reference_pairs(store, "human")
        assert len(found) == len(examples) * len(CATEGORIES)
        report = calibrate_store(store, "human", train_fraction=0.5, seed=0)
        assert report.n_train_units == 10 and report.n_test_units == 10
        assert report.test.n == 10 * len(CATEGORIES)
        assert report.test.auroc is not None and report.test.auroc > 0.6
        with pytest.raises(IntimaError, match="no scored ratings"):
            reference_pairs(store, "nobody")
