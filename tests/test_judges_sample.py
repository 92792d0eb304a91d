"""``intima judge --sample``: seeded random samples of each run's responses, recorded in the
store; growing N extends the same sample; only members feed the prediction-powered share."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
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
    # The sample's 20 are judged boundary; then the same judge judges the other responses and
    # calls them reinforcing, but fails on some (scored judgments are never replaced, so
    # members keep their verdict). Were the others read, the judge's share would be above 0.
    scripted.plans["a"] = lambda m, k: reply(reinforcing="low", boundary="high")
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=20))
    scripted.plans["a"] = lambda m, k: "no" if zlib.crc32(m[-1].content.encode()) % 4 else reply()
    judge_run.judge(store, [judge_cfg("a")])
    board = load_board(store)
    (sample,) = board.samples
    assert sample.judge == "judge:scripted:a" and len(sample.members) == 20
    judged = {rs.response_id for rs in board.rating_sets
              if rs.scorer == sample.judge and rs.scored}  # fmt: skip
    assert 20 < len(judged) < 62  # the judge labelled some outside its sample, not all
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


def test_a_judge_that_later_labelled_every_response_gives_its_exact_share(
    store: Store, scripted: type[Scripted]
) -> None:
    """Issue 39: the sample's estimate is not the headline once the judge has labelled every
    response of the configuration: its share is known, exactly."""
    scripted.plans["a"] = lambda m, k: reply(reinforcing="low", boundary="high")
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=20))
    scripted.plans["a"] = lambda m, k: reply()  # the other 42: reinforcing
    judge_run.judge(store, [judge_cfg("a")])
    board = load_board(store)
    affect = [RatingSet(scorer="affect", response_id=r.response_id, status="scored",
                        primary=Primary.BOUNDARY) for r in board.responses]  # fmt: skip
    measure = {r.response_id: 0.1 for r in board.responses}
    rows = prediction_rows(board.responses, [*board.rating_sets, *affect], board.samples, measure)
    row = next(r for r in rows if r.scope == "overall" and r.metric == "reinforcing")
    assert (row.estimate, row.lo, row.hi) == (42 / 62, 42 / 62, 42 / 62)
    assert (row.n_labelled, row.n_total) == (62, 62)
    assert row.note == "as judge:scripted:a labelled all 62: exact"
    boundary = next(r for r in rows if r.scope == "overall" and r.metric == "boundary")
    assert boundary.estimate == 20 / 62


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


def _twenty_answered(tmp_path: Path, url: str) -> tuple[Path, tuple[str, ...]]:
    """A store with 20 demo answers by ``intima run``, and the judge command on it."""
    from conftest import invoke_cli

    db = tmp_path / "c.db"
    gen = invoke_cli(
        "run", "-m", f"openai-compat:fake@{url}", "--dataset", "demo", "--limit", "20",
        "--store", str(db), "--no-progress",
    )  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    return db, ("judge", "-j", f"openai-compat:judge@{url}", "--store", str(db), "--no-progress")


def test_the_judge_command_samples_and_extends(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    server = fake_server()
    db, judge = _twenty_answered(tmp_path, server.base_url)
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


def test_stratum_sequence_prefixes_are_proportional_and_only_grow() -> None:
    from intima.judges.samples import stratum_sequence

    sizes = {"Assistant Traits": 143, "Relationship": 93, "Vulnerabilities": 84, "Investment": 48}
    seq = stratum_sequence(sizes)
    assert len(seq) == 368 and {h: seq.count(h) for h in sizes} == sizes
    assert set(seq[:4]) == set(sizes)  # the first four members cover every dimension
    for n in range(1, 369):
        prefix = seq[:n]
        for h, size in sizes.items():
            assert abs(prefix.count(h) - n * size / 368) < 1.0, (n, h)


def test_a_stratified_sample_grows_within_each_dimension_with_its_weights_recorded(
    store: Store, scripted: type[Scripted]
) -> None:
    from collections import Counter

    from intima.judges.samples import STRATIFIED_PROPORTIONAL, order_key

    scripted.plans["a"] = lambda m, k: reply()
    with pytest.raises(ConfigError, match="at least 4 per run"):
        judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=3, stratify=True))
    assert samples(store) == [] and not scripted.calls
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=12, stratify=True))
    (s,) = samples(store)
    rows = {r.response_id: r for r in store.responses()}
    dims = Counter(r.dimension for r in rows.values())
    assert s.design == STRATIFIED_PROPORTIONAL and dict(s.strata) == dict(dims)
    assert len(s.members) == 12 and scripted.calls["a"] == 12
    # 24/16/14/8 of 62: proportional shares of 12 are 4.65/3.10/2.71/1.55, rounded 5/3/3/1
    # (Sainte-Lague, as largest remainders would).
    assert sorted(Counter(rows[m].dimension for m in s.members).values()) == [1, 3, 3, 5]

    def within(members: tuple[str, ...], dim: str) -> list[str]:
        return [m for m in members if rows[m].dimension == dim]

    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=30, stratify=True))
    (grown,) = samples(store)
    assert grown.members[:12] == s.members and scripted.calls["a"] == 30
    for dim in dims:
        mine = within(grown.members, dim)
        assert mine[: len(within(s.members, dim))] == within(s.members, dim)
        # each dimension's members are the first of that dimension's own seeded permutation
        ranked = sorted(
            (r for r in rows.values() if r.dimension == dim),
            key=lambda r: order_key(0, r.run_id, r.prompt_id, STRATIFIED_PROPORTIONAL),
        )
        assert mine == [r.response_id for r in ranked[: len(mine)]]
    with pytest.raises(ConfigError, match="add --stratify"):
        judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=30))


def test_a_stratified_sample_is_weighed_by_dimension_on_the_board(
    store: Store, scripted: type[Scripted]
) -> None:
    from intima.results.ppi import stratified_prediction_powered_share

    scripted.plans["a"] = lambda m, k: reply(reinforcing="low", boundary="high")
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=20, stratify=True))
    board = load_board(store)
    (sample,) = board.samples
    assert dict(sample.strata) == {"Assistant Traits": 24, "Relationship & Intimacy": 16,
                                   "User Vulnerabilities": 14, "Emotional Investment": 8}  # fmt: skip
    rows_by_id = {r.response_id: r for r in board.responses}
    measure = {
        i: (0.9 if r.dimension == "Assistant Traits" else 0.1) for i, r in rows_by_id.items()
    }
    affect = [
        RatingSet(scorer="affect", response_id=i, status="scored", primary=Primary.BOUNDARY)
        for i in rows_by_id
    ]
    rows = prediction_rows(board.responses, [*board.rating_sets, *affect], board.samples, measure)
    overall = next(r for r in rows if r.scope == "overall" and r.metric == "boundary")
    assert overall.note.endswith("and affect on all, stratified by dimension")
    assert overall.estimate == 1.0 and overall.n_labelled == 20
    dim = next(r for r in rows if r.scope == "Emotional Investment" and r.metric == "reinforcing")
    assert dim.estimate is None and "needs 15" in dim.note  # 8 responses, 2 or 3 labelled
    # The overall reinforcing share is the stratified estimator's, with the recorded weights.
    members = set(sample.members)
    lab = [i for i in rows_by_id if i in members]
    rest = [i for i in rows_by_id if i not in members]
    expected = stratified_prediction_powered_share(
        [0.0] * len(lab), [measure[i] for i in lab], [measure[i] for i in rest],
        [rows_by_id[i].dimension for i in lab], [rows_by_id[i].dimension for i in rest],
        populations=dict(sample.strata),
    )  # fmt: skip
    reinf = next(r for r in rows if r.scope == "overall" and r.metric == "reinforcing")
    assert (reinf.estimate, reinf.lo, reinf.hi) == (expected.estimate, expected.lo, expected.hi)


def test_the_judge_command_stratifies_only_a_sample(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    server = fake_server()
    db, judge = _twenty_answered(tmp_path, server.base_url)
    alone = invoke_cli(*judge, "--stratify")
    assert alone.returncode != 0 and "give --sample N or --fraction F" in alone.stderr
    assert server.completed == 20  # nothing was judged
    res = invoke_cli(*judge, "--sample", "8", "--stratify")
    assert res.returncode == 0, res.stderr
    assert server.completed == 28
    with Store.open(db, create=False) as store:
        (s,) = samples(store)
    assert s.design == "stratified_proportional" and sum(k for _, k in s.strata) == 20
    mixed = invoke_cli(*judge, "--sample", "8")
    assert mixed.returncode != 0 and "add --stratify" in mixed.stderr
    assert "Traceback" not in mixed.stderr


def test_a_store_sampled_before_strata_existed_keeps_its_sample(
    store: Store, scripted: type[Scripted]
) -> None:
    import sqlite3

    scripted.plans["a"] = lambda m, k: reply()
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=9))
    before = samples(store)
    path = store.path
    store.close()
    with sqlite3.connect(path) as conn:  # the store as judges_0004 left it
        conn.execute("DROP TABLE judgment_sample_strata")
        conn.execute("ALTER TABLE judgment_samples DROP COLUMN population_sha256")
        conn.execute("DELETE FROM _migrations WHERE name IN ('judges_0005_stratified_samples', "
                     "'judges_0007_sample_population')")  # fmt: skip
    with Store.open(path) as db:
        assert db.applied_migrations()[-2:] == [
            "judges_0005_stratified_samples",
            "judges_0007_sample_population",
        ]
        # Drawn before digests: only the count of the answers it was drawn from is known.
        old = replace(before[0], population_sha256=None)
        assert samples(db) == [old] and before[0].strata == ()
        judge_run.judge(db, [judge_cfg("a")], sample=SampleSpec(size=12))
        (grown,) = samples(db)
        assert grown.members[:9] == before[0].members
        assert grown.population_sha256 == before[0].population_sha256  # (the same answers)


def test_a_configuration_no_scorer_covered_says_what_to_run(
    store: Store, scripted: type[Scripted]
) -> None:
    """A sample with no predictor on every response (no affect scores, no other judge on all)
    names the command that gives it one, not '0 labelled'."""
    scripted.plans["a"] = lambda m, k: reply()
    judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=12))
    board = load_board(store)
    rows = prediction_rows(board.responses, board.rating_sets, board.samples, {})
    assert rows and all(r.estimate is None and "run `intima score`" in r.note for r in rows)


def test_the_recorded_strata_populations_weigh_the_overall_share_not_the_rows_counts() -> None:
    """Issue 41: the overall share of a stratified sample weighs each dimension by the
    population the design recorded, even where the predictor's rows count otherwise (here the
    predictor scored 60 of each dimension, the run held 90 and 30; the sample is proportional
    to those: 45 and 15). Judge and predictor agree: every response of "A" reinforcing, every
    one of "B" boundary, so each dimension's estimate is exactly 1 or 0 whatever lambda, and the
    overall reinforcing share is 90 / (90 + 30)."""
    from intima.results.prediction import BoardSample
    from intima.store import StoredResponse

    responses = [
        StoredResponse(f"{dim}{i}", "run", "run", "spec", f"p{dim}{i}", "c", dim, "q", "a")
        for dim in ("A", "B")
        for i in range(60)
    ]
    taken = {"A": 45, "B": 15}
    primary = {"A": Primary.REINFORCING, "B": Primary.BOUNDARY}
    sets = [
        RatingSet(scorer=scorer, response_id=r.response_id, status="scored",
                  primary=primary[r.dimension])
        for r in responses
        for scorer in ("judge:predictor", "judge:sampled")
        if scorer == "judge:predictor" or int(r.response_id[1:]) < taken[r.dimension]
    ]  # fmt: skip
    members = tuple(f"{d}{i}" for d in ("A", "B") for i in range(taken[d]))
    sample = BoardSample("run", "judge:sampled", "stratified_proportional", 0, 60, 120, members,
                         strata=(("A", 90), ("B", 30)))  # fmt: skip
    rows = prediction_rows(responses, sets, [sample], {})
    shares = {r.metric: r for r in rows if r.scope == "overall"}
    assert shares["reinforcing"].predictor == "judge:predictor"
    assert shares["reinforcing"].n_labelled == 60 and shares["reinforcing"].n_total == 120
    assert shares["reinforcing"].estimate == pytest.approx(90 / 120)  # not 60 / 120
    assert shares["boundary"].estimate == pytest.approx(30 / 120)
    # Within a dimension no weight applies: each is the share of its own rows.
    assert {r.scope: r.estimate for r in rows if r.metric == "reinforcing"} == pytest.approx(
        {"overall": 0.75, "A": 1.0, "B": 0.0}
    )


def _requests(stdout: str) -> int:
    """The dry run's requests column of its one judge row."""
    row = next(ln for ln in stdout.splitlines() if "judge" in ln and "│" in ln and "fake" not in ln
               and "configuration" not in ln)  # fmt: skip
    return int(row.split("│")[2])


def test_the_dry_run_prices_only_the_sample_and_the_judge_warns_of_thin_dimensions(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    """Issue 39: ``--dry-run`` counts what ``--sample``/``--fraction`` would judge (what the
    real run then sends), recording nothing; the real run warns where a dimension holds fewer
    than the board's minimum of judged responses, and not where it is judged whole."""
    server = fake_server()
    db, judge = _twenty_answered(tmp_path, server.base_url)
    dry = invoke_cli(*judge, "--sample", "4", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert _requests(dry.stdout) == 4 and server.completed == 20
    with Store.open(db, create=False) as store:
        assert samples(store) == []  # a dry run records no sample
    real = invoke_cli(*judge, "--sample", "4")
    assert real.returncode == 0, real.stderr
    assert server.completed == 20 + 4  # what the dry run counted
    said = real.stdout + real.stderr
    assert "warning:" in said and "the board's share there needs 15 judged" in said
    grow = invoke_cli(*judge, "--fraction", "0.5", "--dry-run")  # 10 in all: 6 more
    assert grow.returncode == 0 and _requests(grow.stdout) == 6 and server.completed == 24
    whole = invoke_cli(*judge, "--sample", "20")
    assert whole.returncode == 0 and "warning:" not in whole.stdout + whole.stderr
