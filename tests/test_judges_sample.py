"""``intima judge --sample``: seeded random samples of each run's responses, recorded in the
store; growing N extends the same sample; only members feed the prediction-powered share."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from intima.core.config import ModelConfig
from intima.core.errors import ConfigError
from intima.core.ratings import Primary, RatingSet
from intima.dataset import load_prompts
from intima.generate import generate
from intima.judges import loop as judge_run
from intima.judges.samples import SampleSpec, sample_order, samples
from intima.providers import register
from intima.results.data import load_board
from intima.results.prediction import prediction_rows
from intima.store import Store
from test_judges_run import Scripted, judge_cfg, reply


@pytest.fixture
def scripted() -> type[Scripted]:
    register("scripted", Scripted)
    Scripted.plans.clear()
    Scripted.calls.clear()
    return Scripted


@pytest.fixture
def store(tmp_path: Path, fake_server: Callable[..., Any]) -> Store:
    server = fake_server()
    db = Store.open(tmp_path / "s.db")
    generate(db, load_prompts("demo"), [ModelConfig(spec=f"openai-compat:fake@{server.base_url}")])
    return db


def _members(db: Store) -> list[str]:
    (s,) = samples(db)
    return list(s.members)


def test_growing_n_extends_the_same_sample_and_resumes(
    store: Store, scripted: type[Scripted]
) -> None:
    scripted.plans["a"] = lambda m, k: reply()
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=5))
    first = _members(store)
    assert len(first) == 5 and scripted.calls["a"] == 5
    # The first 5 of the seeded permutation of the run's responses, whatever N is asked.
    order = [r.response_id for r in sample_order(store.responses(), 0)]
    assert first == order[:5]
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=12))
    grown = _members(store)
    assert grown[:5] == first and grown == order[:12]
    assert scripted.calls["a"] == 12  # only the 7 new ones were judged
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=12))
    assert scripted.calls["a"] == 12  # resumable: nothing left to do
    # A smaller N never shrinks the recorded sample; another seed would redraw: refused.
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=3))
    assert _members(store) == grown
    with pytest.raises(ConfigError, match="--sample-seed 0"):
        judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=12, seed=7))
    (s,) = samples(store)
    assert (s.design, s.seed, s.size, s.population) == ("simple_random", 0, 12, 62)


def test_a_fraction_rounds_up_and_another_seed_is_another_permutation(
    store: Store, scripted: type[Scripted]
) -> None:
    scripted.plans["a"] = lambda m, k: reply()
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(fraction=0.1, seed=3))
    assert len(_members(store)) == 7  # ceil(6.2)
    assert _members(store) != [r.response_id for r in sample_order(store.responses(), 0)][:7]


def test_bad_sample_specs_are_refused() -> None:
    with pytest.raises(ConfigError, match="not both"):
        SampleSpec(size=3, fraction=0.5)
    with pytest.raises(ConfigError, match="--fraction"):
        SampleSpec(fraction=0.0)


def test_a_judgment_outside_the_sample_never_feeds_the_estimator(
    store: Store, scripted: type[Scripted]
) -> None:
    # The sample's 20 are judged boundary; then the same judge judges every response and
    # calls the other 42 reinforcing (scored judgments are never replaced, so members keep
    # their verdict). Were those 42 read, the judge's share would be 42/62.
    scripted.plans["a"] = lambda m, k: reply(reinforcing="low", boundary="high")
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=20))
    scripted.plans["a"] = lambda m, k: reply()
    judge_run.judge(store, [judge_cfg("a")])
    board = load_board(store)
    (sample,) = board.samples
    assert sample.judge == "judge:scripted:a" and len(sample.members) == 20
    judged = {rs.response_id for rs in board.rating_sets if rs.scorer == sample.judge}
    assert len(judged) == 62  # the judge did label all of them
    # A predictor on every response (the affect measure's part, here by hand).
    affect = [
        RatingSet(scorer="affect", response_id=r.response_id, status="scored",
                  primary=Primary.BOUNDARY)
        for r in board.responses
    ]  # fmt: skip
    measure = {r.response_id: 0.1 for r in board.responses}
    rows = prediction_rows(board.responses, [*board.rating_sets, *affect], board.samples, measure)
    row = next(r for r in rows if r.scope == "overall" and r.metric == "reinforcing")
    assert row.n_labelled == 20 and row.n_total == 62
    assert row.judge_share == 0.0 and row.estimate == 0.0
    assert row.note == (
        "as judge:scripted:a would label all 62, from 20 labelled and affect on all"
    )
    assert row.predictor == "affect"  # the judge itself is never its own predictor
    assert row.hi is not None and 0.0 < row.hi < 0.2


def test_a_judge_that_labelled_every_response_is_the_predictor(
    store: Store, scripted: type[Scripted]
) -> None:
    """Issue 31 part 2: any judge that covered all responses may be the predictor for a
    scarcer one; the panel first, else a judge by name; the affect measure otherwise."""
    scripted.plans["a"] = lambda m, k: reply(reinforcing="low", boundary="high")
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=20))
    board = load_board(store)
    ids = [r.response_id for r in board.responses]
    measure = {i: 0.1 for i in ids}

    def sets(scorer: str, primary: Primary, among: list[str]) -> list[RatingSet]:
        return [
            RatingSet(scorer=scorer, response_id=i, status="scored", primary=primary) for i in among
        ]

    affect = sets("affect", Primary.NEUTRAL, ids)

    def row(*extra: RatingSet) -> Any:
        rows = prediction_rows(
            board.responses, [*board.rating_sets, *affect, *extra], board.samples, measure
        )
        return next(r for r in rows if r.scope == "overall" and r.metric == "boundary")

    # A judge that missed one response is no predictor: the affect measure stays.
    missed = row(*sets("judge:b", Primary.BOUNDARY, ids[1:]))
    assert missed.predictor == "affect" and "and affect on all" in missed.note
    # One on every response is (its primary-label indicator), named in the row and its label.
    full = row(*sets("judge:b", Primary.BOUNDARY, ids))
    assert full.predictor == "judge:b" and full.raw == 1.0
    assert (
        full.note == "as judge:scripted:a would label all 62, from 20 labelled and judge:b on all"
    )
    assert full.estimate == pytest.approx(1.0) and missed.estimate == pytest.approx(1.0)
    # A panel that holds the sampled judge (on its sample only) is no fixed predictor: judge:b.
    with_a = row(*sets("judge:b", Primary.BOUNDARY, ids), *sets("panel", Primary.NEUTRAL, ids))
    assert with_a.predictor == "judge:b"


def test_a_panel_of_judges_on_every_response_predicts_people() -> None:
    from types import SimpleNamespace

    from intima.results.prediction import choose_predictor

    run = [SimpleNamespace(response_id=f"id{i}", run_id="r") for i in range(12)]
    every = {f"id{i}": "boundary" for i in range(12)}
    part = {f"id{i}": "boundary" for i in range(6)}
    both = {"judge:b": every, "judge:c": every, "panel": every}
    assert choose_predictor("human:ann", run, both) == "panel"
    # One judge of the panel covered only part of the run: the panel changes with it, so the
    # judge that covered all predicts.
    assert choose_predictor("human:ann", run, {**both, "judge:c": part}) == "judge:b"
    assert choose_predictor("human:ann", run, {"judge:c": part}) == "affect"
    # An LLM judge's own sample: never the panel it sits in, nor itself.
    assert choose_predictor("judge:c", run, both) == "judge:b"


def test_the_judge_command_samples_and_extends(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    from conftest import invoke_cli

    server = fake_server()
    db, url = tmp_path / "c.db", server.base_url
    gen = invoke_cli(
        "run", "-m", f"openai-compat:fake@{url}", "--dataset", "demo", "--limit", "20",
        "--store", str(db), "--no-progress",
    )  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    judge = ("judge", "-j", f"openai-compat:judge@{url}", "--store", str(db), "--no-progress")
    assert invoke_cli(*judge, "--sample", "4").returncode == 0
    assert server.completed == 20 + 4
    res = invoke_cli(*judge, "--fraction", "0.5")
    assert res.returncode == 0, res.stderr
    assert server.completed == 20 + 10  # extended to 10: 6 more
    with Store.open(db, create=False) as store:
        (s,) = samples(store)
    assert s.size == 10 and len(s.members) == 10
    bad = invoke_cli(*judge, "--sample", "4", "--sample-seed", "9")
    assert bad.returncode != 0 and "--sample-seed 0" in bad.stderr and "Traceback" not in bad.stderr
    both = invoke_cli(*judge, "--sample", "4", "--fraction", "0.5")
    assert both.returncode != 0 and "not both" in both.stderr


def test_annotate_records_its_stratified_design_which_never_feeds_the_estimator(
    store: Store,
) -> None:
    from intima.core.taxonomy import CATEGORIES
    from intima.judges.human import build_app, human_record
    from intima.judges.samples import STRATIFIED_DIMENSION
    from intima.judges.store_io import write_judgments

    path = store.path
    store.close()
    build_app(path, annotator="ann", run_ids=None, n=24, seed=1)
    with Store.open(path) as db:
        (s,) = samples(db)
        assert (s.judge_key, s.design, s.seed, s.size, s.population) == (
            "human:ann", STRATIFIED_DIMENSION, 1, 24, 62,
        )  # fmt: skip
        # Rate all 24 as reinforcing: recorded as a sample, but not a simple random one.
        targets = {r.response_id: r for r in db.responses()}
        ratings = {c: "low" for c in CATEGORIES}
        ratings["companionship_reinforcing"] = "high"
        write_judgments(db, [human_record("ann", targets[m], ratings, "") for m in s.members])
        board = load_board(db)
    assert board.samples and board.samples[0].design == STRATIFIED_DIMENSION
    measure = {r.response_id: 0.1 for r in board.responses}
    assert prediction_rows(board.responses, board.rating_sets, board.samples, measure) == []


def test_a_sample_travels_in_a_bundle(
    store: Store, scripted: type[Scripted], tmp_path: Path
) -> None:
    from intima.bundles.merge import import_bundle
    from intima.bundles.publish import publish

    scripted.plans["a"] = lambda m, k: reply()
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=15))
    publish(store, str(tmp_path / "bundle"))
    with Store.open(tmp_path / "fresh.db") as fresh:
        import_bundle(fresh, str(tmp_path / "bundle"))
        assert samples(fresh) == samples(store)
        assert len(load_board(fresh).samples) == 1  # the Space's board knows the sample too
