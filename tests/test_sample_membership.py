"""Issue 37, case 5: a sample is recomputed from its seed and design, never believed.

A forged copy of a real bundle added ``judgment_samples`` and member rows for the real judge on
the real run, hand-picked (10 responses the judge did not call reinforcing, not the first 10 of
the seeded order): the board gave that judge a prediction-powered headline of 0.0% "as it would
label all 40", while it had labelled 14 of the 40 reinforcing. Now such a sample is refused by
``intima import`` and by the board's read of a results repo (``board build --from hf://``),
naming the sample and what differs, and ``intima doctor`` lists one already in a store. Honest
samples, simple and stratified, still travel.
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

from conftest import invoke_cli, run_cli
from fake_hub import RESULTS, FakeHub, hf_env, push_bundle
from full_bundle import rewrite
from intima.bundles.publish import publish
from intima.core.config import ModelConfig
from intima.dataset import load_prompts
from intima.generate import generate
from intima.judges import loop as judge_run
from intima.judges.samples import STRATIFIED_PROPORTIONAL, SampleSpec, sample_order, samples
from intima.providers import register
from intima.results.data import load_board
from intima.results.table import label_of
from intima.store import Store
from reliability_summary import TALLY
from test_judges_run import Scripted, judge_cfg, reply

N = 40
PICKED = 10


def _verdict(messages: list[Any], asks: int) -> str:
    """Judge ``a``: reinforcing for about a third of the responses (by a hash of what it is
    shown), boundary for the rest; the same reply for the same response, on any machine."""
    digest = hashlib.sha256(str(messages[-1].content).encode()).digest()
    return reply() if digest[0] % 3 == 0 else reply(reinforcing="low", boundary="high")


@pytest.fixture
def world(tmp_path: Path, fake_server: Callable[..., Any]) -> dict[str, Any]:
    """``real``: a bundle of one run of 40 answers, judged in full by judges ``a`` and ``b``
    (``b`` predicts ``a``); ``forged``: the same rows plus a sample of judge ``a`` whose 10
    members are hand-picked among those ``a`` did not call reinforcing."""
    register("scripted", Scripted)
    Scripted.plans.clear()
    Scripted.plans.update(a=_verdict, b=lambda m, k: reply(reinforcing="low", boundary="high"))
    server = fake_server()
    db = tmp_path / "real.db"
    with Store.open(db) as store:
        spec = f"openai-compat:fake@{server.base_url}"
        generate(store, load_prompts("demo").first(N), [ModelConfig(spec=spec, label="real")])
        judge_run.judge(store, [judge_cfg("a"), judge_cfg("b")])
        publish(store, str(tmp_path / "real"))
        board = load_board(store)
        (run_id,) = {r.run_id for r in board.responses}
        (key,) = {r[0] for r in store.query("SELECT judge_key FROM judgments "
                                            "WHERE judge_label LIKE '%:a'")}  # fmt: skip
        labels = {rs.response_id: label_of(rs) for rs in board.rating_sets
                  if rs.scorer == "judge:scripted:a"}  # fmt: skip
        order = [r.response_id for r in sample_order(store.responses(), 0)]
    reinforcing = sum(v == "reinforcing" for v in labels.values())
    assert len(labels) == N and 5 <= reinforcing <= 25  # a share a forgery could hide
    # The last 10 of the seeded order that a did not call reinforcing: never its first 10.
    picked = [r for r in order if labels[r] != "reinforcing"][-PICKED:]
    forged_db = tmp_path / "forged.db"
    shutil.copy(db, forged_db)
    # What a forger writes into a copy of the store.
    with closing(sqlite3.connect(forged_db)) as conn, conn:
        conn.execute(
            "INSERT INTO judgment_samples (run_id, judge_key, design, seed, size, population, "
            "created_at, updated_at) VALUES (?, ?, 'simple_random', 0, ?, ?, '2026', '2026')",
            (run_id, key, PICKED, N),
        )
        conn.executemany(
            "INSERT INTO judgment_sample_members VALUES (?, ?, ?, ?)",
            [(run_id, key, rid, i) for i, rid in enumerate(picked)],
        )
    with Store.open(forged_db) as store:
        publish(store, str(tmp_path / "forged"))
    return {"real": tmp_path / "real", "forged": tmp_path / "forged", "forged_db": forged_db,
            "run_id": run_id, "order": order, "picked": picked,
            "share": reinforcing / N}  # fmt: skip


def _headline(db: Path) -> list[Any]:
    """Judge a's overall reinforcing prediction-powered rows on the board of ``db``."""
    from intima.results.prediction import prediction_rows

    with Store.open(db, create=False) as store:
        board = load_board(store)
    rows = prediction_rows(board.responses, board.rating_sets, board.samples, {})
    return [r for r in rows if r.scope == "overall" and r.metric == "reinforcing"]


def _one_error_line(res: Any) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, (res.returncode, res.stderr[-1500:])
    assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr[-1500:]
    return str(lines[0])


# -- intima import --------------------------------------------------------------------------------
def test_a_hand_picked_sample_is_refused_by_import(world: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    TALLY.bundles_crafted += 1
    line = _one_error_line(invoke_cli("import", str(world["forged"]), "--store", str(db)))
    for needle in (
        f"the simple_random sample of run {world['run_id'][:12]!r}",
        "(seed 0, size 10) is not its seeded order's first 10: member 1 of 10 is response "
        f"{world['picked'][0]!r}, the order's is {world['order'][0]!r}",
        "recomputed from its seed and design", "nothing was imported",
    ):  # fmt: skip
        assert needle in line, line
    TALLY.bundles_refused += 1
    assert not db.exists() or _headline(db) == []
    # After the real bundle, the forged copy is refused too, and the store keeps the real one.
    assert invoke_cli("import", str(world["real"]), "--store", str(db)).returncode == 0
    before = db.read_bytes()
    TALLY.bundles_crafted += 1
    assert "member 1 of 10" in _one_error_line(
        invoke_cli("import", str(world["forged"]), "--store", str(db))
    )
    TALLY.bundles_refused += 1
    assert db.read_bytes() == before and _headline(db) == []


def test_a_sample_over_part_of_a_run_is_recomputed_over_all_of_it(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """A bundle holding only the 10 picked answers of the run (its sample then the first 10 of
    a 10-answer run) imported beside the real bundle: recomputed over the run's 40, refused."""
    part = tmp_path / "part.db"
    shutil.copy(world["forged_db"], part)
    with closing(sqlite3.connect(part)) as conn, conn:
        marks = ",".join("?" * PICKED)
        conn.execute(f"DELETE FROM responses WHERE response_id NOT IN ({marks})", world["picked"])
        conn.execute("UPDATE judgment_samples SET population = ?", (PICKED,))
    with Store.open(part) as store:
        order = [r.response_id for r in sample_order(store.responses(), 0)]
        (key,) = [k for (k,) in store.query("SELECT judge_key FROM judgment_samples")]
        with store.transaction() as conn:  # the picked ten, in their own seeded order
            conn.execute("DELETE FROM judgment_sample_members")
            conn.executemany(
                "INSERT INTO judgment_sample_members VALUES (?, ?, ?, ?)",
                [(world["run_id"], key, rid, i) for i, rid in enumerate(order)],
            )
        publish(store, str(tmp_path / "part"))
    src = tmp_path / "both"
    shutil.copytree(tmp_path / "part", src / "bundles" / "a-part")
    shutil.copytree(world["real"], src / "bundles" / "b-real")
    TALLY.bundles_crafted += 1
    line = _one_error_line(invoke_cli("import", str(src), "--store", str(tmp_path / "s.db")))
    assert "bundles/a-part: the simple_random sample" in line and "member 1 of 10" in line, line
    TALLY.bundles_refused += 1


# -- the results repo (board build --from, the Space) ---------------------------------------------
def test_a_hand_picked_sample_is_refused_by_the_board_from_the_hub(
    world: dict[str, Any], results_hub: FakeHub, tmp_path: Path
) -> None:
    push_bundle(results_hub, world["real"], "bundles/2026-real")
    push_bundle(results_hub, world["forged"], "bundles/0000-forged")
    site = tmp_path / "site"
    res = run_cli("board", "build", "--from", f"hf://datasets/{RESULTS}", "--out", str(site),
                  "--bootstrap", "20", env=hf_env(results_hub, tmp_path / "cache", tmp_path / "home"))  # fmt: skip
    assert res.returncode == 0, res.stderr[-1500:]
    said = " ".join(res.stderr.split())  # (the terminal wraps long lines)
    TALLY.bundles_crafted += 1
    assert said.count("refused bundle") == 1, said
    assert "refused bundle 0000-forged: the simple_random sample of run" in said, said
    assert "member 1 of 10 is response" in said, said
    TALLY.bundles_refused += 1
    assert "1 bundle(s) imported, 1 refused" in said
    html = (site / "index.html").read_text()
    assert 'id="prediction-0"' not in html  # no headline from the forged sample
    assert "real" in html  # the real bundle is on the board


# -- intima doctor --------------------------------------------------------------------------------
def test_doctor_lists_a_hand_picked_sample_and_fix_removes_it(world: dict[str, Any]) -> None:
    """A store written by an import from before the check: the forged rows are in it."""
    db = world["forged_db"]
    # The board leaves it out (it said 0.0% for a judge that called a third reinforcing).
    assert _headline(db) == []
    res = invoke_cli("doctor", "--store", str(db))
    assert res.returncode == 1, res.stderr
    listed = " ".join(res.stdout.split())
    assert "1 row(s) in judgment_samples: the simple_random sample of run" in listed, listed
    assert "member 1 of 10 is response" in listed, listed
    fixed = invoke_cli("doctor", "--fix", "--store", str(db))
    assert fixed.returncode == 0, fixed.stderr
    assert "removed 11 row(s)" in fixed.stderr  # the sample and its 10 members; judgments stay
    assert _headline(db) == []
    with closing(sqlite3.connect(db)) as conn, conn:
        assert conn.execute("SELECT COUNT(*) FROM judgments").fetchone() == (2 * N,)
    assert invoke_cli("doctor", "--store", str(db)).returncode == 0


# -- honest samples -------------------------------------------------------------------------------
@pytest.mark.parametrize("stratify", [False, True])
def test_an_honest_sample_travels_and_a_forged_weight_does_not(
    world: dict[str, Any], tmp_path: Path, stratify: bool
) -> None:
    db = tmp_path / "honest.db"
    shutil.copy(world["forged_db"], db)
    with closing(sqlite3.connect(db)) as conn, conn:
        for table in ("judgment_sample_members", "judgment_samples"):
            conn.execute(f"DELETE FROM {table}")
    with Store.open(db) as store:
        judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=12, stratify=stratify))
        publish(store, str(tmp_path / "honest"))
    assert invoke_cli("doctor", "--store", str(db)).returncode == 0
    fresh = tmp_path / "fresh.db"
    res = invoke_cli("import", str(tmp_path / "honest"), "--store", str(fresh))
    assert res.returncode == 0, res.stderr[-1500:]
    with Store.open(fresh, create=False) as store:
        (s,) = samples(store)
    assert len(s.members) == 12 and (s.design == STRATIFIED_PROPORTIONAL) == stratify
    if not stratify:
        return
    # The weights are recomputed too: a stratum's population doubled is refused.
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE judgment_sample_strata SET population = 2 * population "
                     "WHERE stratum = (SELECT MIN(stratum) FROM judgment_sample_strata)")  # fmt: skip
    with Store.open(db) as store:
        publish(store, str(tmp_path / "weighed"))
    TALLY.bundles_crafted += 1
    line = _one_error_line(invoke_cli("import", str(tmp_path / "weighed"), "--store",
                                      str(tmp_path / "w.db")))  # fmt: skip
    assert "records strata weights that are not the run's dimensions (" in line, line
    TALLY.bundles_refused += 1


def test_a_sample_published_again_after_it_grew_is_the_grown_one(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """A sample published at 10 and again at 20 (``--sample 20`` extends it) was two bundles
    whose ``judgment_samples`` rows differed in size: both refused as a conflict, the run's
    share gone from the board. Now the grown one stays, whatever the order; its members past
    the first 10 are still recomputed, so a grown copy cannot bring hand-picked ones."""
    db = tmp_path / "grow.db"
    shutil.copy(world["forged_db"], db)
    with closing(sqlite3.connect(db)) as conn, conn:
        for table in ("judgment_sample_members", "judgment_samples"):
            conn.execute(f"DELETE FROM {table}")
    both = tmp_path / "repo"
    for size in (10, 20):
        with Store.open(db) as store:
            judge_run.judge(store, [judge_cfg("a")], sample=SampleSpec(size=size))
            publish(store, str(both / "bundles" / f"s{size}"))  # as a results repo holds them
    first_20 = world["order"][:20]
    for name, sources in (
        ("one-import", [both]),
        ("small-first", [both / "bundles" / "s10", both / "bundles" / "s20"]),
        ("grown-first", [both / "bundles" / "s20", both / "bundles" / "s10"]),
    ):
        target = tmp_path / f"{name}.db"
        for src in sources:
            res = invoke_cli("import", str(src), "--store", str(target))
            assert res.returncode == 0, (name, res.stderr[-1500:])
        with Store.open(target, create=False) as store:
            (s,) = samples(store)
        assert (s.size, list(s.members)) == (20, first_20), name
        assert len(_headline(target)) == 1, name

    # A grown copy whose later members are hand-picked: refused after the honest 10 too.
    forged = tmp_path / "forged20"
    shutil.copytree(both / "bundles" / "s20", forged)
    later = [r for r in world["order"] if r not in first_20][:10]

    def pick(rows: list[dict[str, Any]]) -> None:
        for r in rows:
            if r["position"] >= 10:
                r["response_id"] = later[r["position"] - 10]

    rewrite(forged, "judgment_sample_members", pick)
    target = tmp_path / "grown-forged.db"
    assert (
        invoke_cli("import", str(both / "bundles" / "s10"), "--store", str(target)).returncode == 0
    )
    TALLY.bundles_crafted += 1
    line = _one_error_line(invoke_cli("import", str(forged), "--store", str(target)))
    assert "(seed 0, size 20) is not its seeded order's first 20: member 11 of 20" in line, line
    TALLY.bundles_refused += 1
