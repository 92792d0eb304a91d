"""A sample is of the answers it was drawn from (issue 37, after case 5).

A run resumed after its sample was drawn holds answers the sample was never drawn from, so its
members are no longer the first N of the grown run's seeded order: the honest sample used to be
refused by ``intima import`` (and left off the board without a word), and ``intima judge
--sample`` could not repair it (members were inserted with INSERT OR IGNORE on their place).
Now a sample records the answers it was drawn from (their count and digest), is recomputed over
them, travels, and the board says it feeds no share until it is drawn again; ``intima judge
--sample`` draws it again over every answer, keeping every judgment made. A forged sample is
still refused. A sample of a smaller run of a configuration (two runs of one configuration are
one row on the board) says why it feeds no share, instead of vanishing.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
from fake_hub import point_hf_at, running_hub
from intima.bundles.publish import publish
from intima.core.config import ModelConfig
from intima.dataset import load_prompts
from intima.generate import generate
from intima.judges import loop as judge_run
from intima.judges.samples import SampleSpec, population_digest, sample_order, samples
from intima.leaderboard.hub_results import import_results
from intima.providers import register
from intima.results.board import assemble_board
from intima.results.data import load_board
from intima.store import Store
from reliability_summary import TALLY
from signed import unsign
from test_judges_run import Scripted, judge_cfg, reply

N = 30
RESULTS = "org/results"
SIZE = 16  # at least MIN_LABELLED (15), so a drawn-again sample gives a share


def _verdict(messages: list[Any], asks: int) -> str:
    """Reinforcing for about a third of the responses (by a hash of what the judge is shown),
    boundary for the rest; the same reply for the same response."""
    digest = hashlib.sha256(str(messages[-1].content).encode()).digest()
    return reply() if digest[0] % 3 == 0 else reply(reinforcing="low", boundary="high")


def _judge_a(store: Store, size: int = SIZE, runs: list[str] | None = None) -> list[Any]:
    return judge_run.judge(store, [judge_cfg("a")], runs, sample=SampleSpec(size=size))


@pytest.fixture
def grown(tmp_path: Path, fake_server: Callable[..., Any]) -> dict[str, Any]:
    """A run of N prompts whose first pass failed some (a server failing a quarter of the
    requests, no retries), judge ``a``'s sample of SIZE drawn then, and the run resumed
    against a working server: every prompt answered."""
    register("scripted", Scripted)
    Scripted.plans.clear()
    Scripted.plans.update(a=_verdict, b=_verdict)
    db = tmp_path / "grown.db"
    prompts = load_prompts("demo").first(N)
    flaky, fine = fake_server(rates={"500": 0.25}, seed=3), fake_server()
    with Store.open(db) as store:
        for server in (flaky, fine):
            config = ModelConfig(spec=f"openai-compat:fake@{server.base_url}", label="m",
                                 max_retries=0)  # fmt: skip
            generate(store, prompts, [config])
            if server is flaky:
                first = {r.response_id for r in store.responses()}
                assert SIZE < len(first) < N, len(first)  # some failed, the sample fits
                _judge_a(store)
        judge_run.judge(store, [judge_cfg("b")])  # on every answer: the predictor
        every = store.responses()
        (sample,) = samples(store)
    assert len(every) == N and sample.population == len(first)
    return {"db": db, "first": first, "sample": sample,
            "order": [r.response_id for r in sample_order(every, 0)]}  # fmt: skip


def _rows(db: Path) -> list[Any]:
    """Judge a's overall reinforcing rows of the board's prediction-powered shares."""
    with Store.open(db, create=False) as store:
        view = assemble_board(load_board(store), bootstrap=20, seed=0)
    return [r for r in view.prediction if r.scope == "overall" and r.metric == "reinforcing"]


def _import(bundle: Path, db: Path) -> Any:
    return invoke_cli("import", str(bundle), "--store", str(db), timeout=120)


def test_a_sample_drawn_before_its_run_grew_travels_and_the_board_says_so(
    grown: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, sample = grown["first"], grown["sample"]
    # The honest sample is not the grown run's first SIZE (else this tests nothing).
    assert list(sample.members) != grown["order"][:SIZE]
    assert list(sample.members) == [r for r in grown["order"] if r in first][:SIZE]
    with Store.open(grown["db"]) as store:
        publish(store, str(tmp_path / "bundle"))
    res = _import(tmp_path / "bundle", tmp_path / "fresh.db")
    assert res.returncode == 0, res.stderr[-1500:]
    # The Space's path (a results repo): taken too, with the same board.
    for hub in running_hub():
        point_hf_at(hub, tmp_path / "cache", tmp_path, monkeypatch)
        hub.add_repo(RESULTS)
        hub.repo(RESULTS).add_commit({f"bundles/b/{p.name}": p.read_bytes()
                                      for p in (tmp_path / "bundle").iterdir()}, "bundle b")  # fmt: skip
        with Store.open(tmp_path / "space.db") as store:
            got_hub = import_results(store, f"hf://datasets/{RESULTS}", tmp_path)
        assert got_hub.imported == ["b"] and not got_hub.refused, got_hub.refused
    assert _rows(tmp_path / "space.db") == _rows(tmp_path / "fresh.db")
    with Store.open(tmp_path / "fresh.db", create=False) as store:
        (got,) = samples(store)
    assert got.members == sample.members and got.population == len(first)
    assert got.population_sha256 == population_digest(first)
    assert invoke_cli("doctor", "--store", str(tmp_path / "fresh.db")).returncode == 0
    # The board: no share from it (a sample of the first answers, not of all N), and why.
    (row,) = _rows(tmp_path / "fresh.db")
    assert row.estimate is None and row.n_total == N, row
    assert f"drawn when its run had {len(first)} answers; it has {N} now" in row.note, row.note
    assert "intima judge --sample" in row.note


def test_judge_sample_on_a_grown_run_draws_it_again_keeping_every_judgment(
    grown: dict[str, Any], tmp_path: Path
) -> None:
    db = grown["db"]
    old = set(grown["sample"].members)
    with Store.open(db) as store:
        (summary,) = _judge_a(store)
        (again,) = samples(store)
        n_judgments = store.query("SELECT COUNT(*) FROM judgments WHERE judge_label LIKE '%:a'")[0][
            0
        ]
    assert list(again.members) == grown["order"][:SIZE]  # the grown run's own first SIZE
    assert again.population == N and again.population_sha256 == population_digest(grown["order"])
    new = set(again.members) - old
    assert new and summary.scored == len(new)  # only the new members were judged
    assert n_judgments == len(old | new)  # the judgments of members that left are kept
    stay = len(old & set(again.members))
    assert any(
        f"drawn from {len(grown['first'])} answers and the run has {N} now" in n
        and f"{stay} of its {SIZE} former members stay" in n
        for n in summary.notes
    ), summary.notes
    (row,) = _rows(db)
    assert row.estimate is not None and row.n_labelled == SIZE, row
    with Store.open(db) as store:
        publish(store, str(tmp_path / "bundle"))
    assert _import(tmp_path / "bundle", tmp_path / "fresh.db").returncode == 0
    assert _rows(tmp_path / "fresh.db") == [row]


def _forged(grown: dict[str, Any], tmp_path: Path, sql: str, *args: Any) -> str:
    db = tmp_path / "forged.db"
    shutil.copy(grown["db"], db)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(sql, args)
    with Store.open(db) as store:
        publish(store, str(tmp_path / "forged"))
    TALLY.bundles_crafted += 1
    res = _import(tmp_path / "forged", tmp_path / "s.db")
    assert res.returncode == 2, res.stdout[-800:]
    TALLY.bundles_refused += 1
    (line,) = res.stderr.strip().splitlines()
    return str(line)


def test_a_hand_picked_member_of_a_stale_sample_is_refused(
    grown: dict[str, Any], tmp_path: Path
) -> None:
    """Member 1 swapped for an answer of the first pass outside the sample."""
    sample = grown["sample"]
    outside = next(r for r in grown["order"] if r in grown["first"] and r not in sample.members)
    line = _forged(grown, tmp_path, "UPDATE judgment_sample_members SET response_id = ? "
                   "WHERE position = 0", outside)  # fmt: skip
    assert f"member 1 of {SIZE} is response {outside!r}" in line, line
    assert "nothing was imported" in line


@pytest.mark.parametrize("whole", [False, True])
def test_a_population_that_is_not_what_the_run_gives_is_refused(
    grown: dict[str, Any], tmp_path: Path, whole: bool
) -> None:
    """The stale sample claimed to be drawn from one answer more than it was, under a digest
    of nothing; or from the whole grown run (its digest right): neither is what the run's
    answers give."""
    n = N if whole else len(grown["first"]) + 1
    digest = population_digest(grown["order"]) if whole else "0" * 64
    line = _forged(grown, tmp_path, "UPDATE judgment_samples SET population = ?, "
                   "population_sha256 = ?", n, digest)  # fmt: skip
    why = "is not its seeded order's first" if whole else (
        f"records a population of {n} answers that is not the run's first {n}"
    )  # fmt: skip
    assert why in line, line


def test_a_stale_sample_of_an_old_store_is_found_by_its_count(
    grown: dict[str, Any], tmp_path: Path
) -> None:
    """A sample drawn before digests were recorded (judges_0007): its count alone finds the
    answers it was drawn from."""
    with closing(sqlite3.connect(grown["db"])) as conn, conn:
        conn.execute("UPDATE judgment_samples SET population_sha256 = NULL")
    assert invoke_cli("doctor", "--store", str(grown["db"])).returncode == 0
    (row,) = _rows(grown["db"])
    assert row.estimate is None and "drawn when its run had" in row.note
    with Store.open(grown["db"]) as store:
        _judge_a(store)
        (again,) = samples(store)
    assert list(again.members) == grown["order"][:SIZE]


# -- two runs of one configuration -----------------------------------------------------------------
def test_a_smaller_runs_sample_says_why_it_feeds_no_share(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    """``--limit 20`` sampled, then ``--limit N`` of the same configuration: one row on the
    board, for all N; the smaller run's sample is a random sample of its 20, not of all N."""
    register("scripted", Scripted)
    Scripted.plans.clear()
    Scripted.plans.update(a=_verdict, b=_verdict)
    server = fake_server()
    config = ModelConfig(spec=f"openai-compat:fake@{server.base_url}", label="m")
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        generate(store, load_prompts("demo").first(20), [config])
        (small,) = store.resolve_runs(None)
        _judge_a(store, runs=[small])
        generate(store, load_prompts("demo").first(N), [config])
        (big,) = set(store.resolve_runs(None)) - {small}
        judge_run.judge(store, [judge_cfg("b")])  # on every answer: the predictor
    (row,) = _rows(db)
    assert row.estimate is None and row.run_id == big, row
    assert f"is of a run that answered 20 of this configuration's {N} prompts" in row.note
    assert f"intima judge --sample N --run {big[:12]}" in row.note, row.note
    with Store.open(db) as store:  # as the note says
        _judge_a(store, runs=[big])
    (row,) = _rows(db)
    assert row.estimate is not None and row.n_labelled == SIZE and row.run_id == big, row


# -- a bundle from before signing ----------------------------------------------------------------
def test_a_bundle_from_before_signing_says_how_to_re_sign_it(
    grown: dict[str, Any], tmp_path: Path
) -> None:
    with Store.open(grown["db"]) as store:
        publish(store, str(tmp_path / "old"))
    unsign(tmp_path / "old")  # what intima wrote before it signed bundles
    res = _import(tmp_path / "old", tmp_path / "s.db")
    assert res.returncode == 2
    (line,) = res.stderr.strip().splitlines()
    for needle in ("unattributed", "published before bundles were signed",
                   "intima publish --store STORE DEST", "intima publisher"):  # fmt: skip
        assert needle in line, line
    # As it says: published again from its store, it is taken.
    assert invoke_cli("publish", str(tmp_path / "new"), "--store", str(grown["db"])).returncode == 0
    assert _import(tmp_path / "new", tmp_path / "s.db").returncode == 0
