"""The fault-injection suite: intima's reliability and security promises, proven with figures.

Every promise in docs/reliability.md has a test here. The tests use real parts: the real
``intima`` command in subprocesses, a real SQLite store, and fault-injecting OpenAI-compatible
servers on 127.0.0.1 (tests/fake_openai.py). What they observe (faults injected, processes
killed, results lost or doubled, bad inputs tried) goes into ``TALLY``; the plugin
tests/reliability_summary.py prints it as one line at the end of the pytest run.

Every loop is bounded by a count and a deadline; seeds make each run the same.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli, run_cli, wait_for
from fake_openai import FAULTS, FakeOpenAI, FaultPlan
from intima.core.config import ModelConfig
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.judges.loop import DEFAULT_JUDGE_SETTINGS
from intima.judges.loop import judge as judge_responses
from intima.store import Store
from reliability_summary import TALLY
from signed import resign

FakeFactory = Callable[..., FakeOpenAI]
N_DEMO = 62
#: Tables that hold results (not the local claim and migration bookkeeping).
_BOOKKEEPING = {"_migrations", "response_claims", "judgment_claims"}
_ENV = {"NO_COLOR": "1", "COLUMNS": "200"}


# -- helpers ------------------------------------------------------------------------------------
def _spec(server: FakeOpenAI) -> str:
    return f"openai-compat:fake@{server.base_url}"


def _config(server: FakeOpenAI, **kw: Any) -> ModelConfig:
    return ModelConfig(spec=_spec(server), **kw)


def _intima(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "intima", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **_ENV, **(env or {})},
    )  # fmt: skip


def _finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[str, str]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return out, err


def _scalar(db: Path, sql: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(sql).fetchone()[0])


def _dump(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every result table's rows, sorted: equal dumps mean an unchanged store."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
            for t in names
            if t not in _BOOKKEEPING
        }


def _assert_sound(db: Path) -> None:
    """Nothing half-written: the file is intact and every row is complete and consistent."""
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        bad = conn.execute(
            "SELECT COUNT(*) FROM responses WHERE (status='ok' AND text IS NULL) "
            "OR (status='error' AND error IS NULL)"
        ).fetchone()[0]
        assert bad == 0
        orphans = conn.execute(
            "SELECT COUNT(*) FROM run_prompts rp LEFT JOIN prompts p USING(prompt_id) "
            "WHERE p.prompt_id IS NULL"
        ).fetchone()[0]
        assert orphans == 0


def _answers(db: Path) -> dict[tuple[str, str], tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT config_key, prompt_id, text, prompt_tokens, completion_tokens "
            "FROM responses WHERE status = 'ok'"
        ).fetchall()
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def _count_result(db: Path, expected: dict[Any, Any], got: dict[Any, Any], table: str) -> None:
    """Add results lost and doubled to the tally (before the test asserts on them)."""
    TALLY.results_checked += len(expected)
    TALLY.results_lost += len(set(expected) - set(got))
    key = {"responses": "config_key, prompt_id", "judgments": "content_hash, judge_key",
           "affect_scores": "response_id, category"}[table]  # fmt: skip
    TALLY.duplicates += _scalar(
        db, f"SELECT COUNT(*) - (SELECT COUNT(*) FROM (SELECT DISTINCT {key} FROM {table})) "
        f"FROM {table}"
    )  # fmt: skip


def _server_duplicates(
    server: FakeOpenAI, stored_before: set[str], seen_before: Counter[str]
) -> int:
    """Requests for prompts whose answer was already stored: work done twice."""
    return sum(server.prompts_seen[t] - seen_before[t] for t in stored_before)


def _stored_texts(db: Path) -> set[str]:
    if not db.exists():
        return set()
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute(
                "SELECT p.text FROM responses r JOIN prompts p USING(prompt_id) "
                "WHERE r.status = 'ok'"
            ).fetchall()
        except sqlite3.OperationalError:  # killed before the tables existed
            return set()
    return {r[0] for r in rows}


@pytest.fixture(scope="module")
def demo() -> PromptSet:
    return load_prompts("demo")


@pytest.fixture(scope="module")
def _reference_once(tmp_path_factory: pytest.TempPathFactory, demo: PromptSet) -> Path:
    """An uninterrupted, fault-free generation of the demo set: what every recovery must equal.
    Generated once for the module (the server's answers depend on the prompt alone)."""
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    db = tmp_path_factory.mktemp("reference") / "reference.db"
    try:
        with Store.open(db) as store:
            [s] = generate(store, demo, [_config(server)])
    finally:
        server.stop()
    assert s.status == "complete"
    return db


@pytest.fixture
def reference(tmp_path: Path, _reference_once: Path) -> Path:
    """The reference store, a copy of this test's own (some tests publish from it)."""
    db = tmp_path / "reference.db"
    shutil.copy(_reference_once, db)
    return db


# -- faults: every kind, several seeds, nothing lost or doubled ----------------------------------
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_fault_kind_is_survived_and_answers_equal_a_clean_run(
    tmp_path: Path, fake_server: FakeFactory, demo: PromptSet, reference: Path, seed: int
) -> None:
    rates = {fault: 0.035 for fault in FAULTS}  # 11 kinds: ~38% of requests misbehave
    server = fake_server(rates=rates, seed=seed, hang_s=3.0, latency_s=0.005)
    cfg = _config(server, timeout_s=1.0, max_retries=25, concurrency=16, backoff_s=0.01,
                  max_backoff_s=0.05)  # fmt: skip
    db = tmp_path / "faults.db"
    with Store.open(db) as store:
        [s] = generate(store, demo, [cfg])
    TALLY.add_faults(server)
    expected, got = _answers(reference), _answers(db)
    _count_result(db, expected, got, "responses")
    assert sum(server.faults.values()) >= 10
    assert (s.status, s.generated, s.failed) == ("complete", N_DEMO, 0)
    # The same answers, token counts included: a retried request is counted once, not twice.
    assert got == expected
    assert _scalar(db, "SELECT SUM(attempts) FROM responses") == server.requests
    _assert_sound(db)


def test_judging_survives_every_fault_kind_and_judges_each_response_once(
    tmp_path: Path, fake_server: FakeFactory, demo: PromptSet, reference: Path
) -> None:
    db = tmp_path / "judge.db"
    shutil.copy(reference, db)
    server = fake_server(rates={f: 0.03 for f in FAULTS}, seed=5, hang_s=3.0)
    judge_cfg = ModelConfig(spec=_spec(server), generation=DEFAULT_JUDGE_SETTINGS,
                            timeout_s=1.0, max_retries=25, concurrency=16, backoff_s=0.01,
                            max_backoff_s=0.05)  # fmt: skip
    with Store.open(db) as store:
        [s] = judge_responses(store, [judge_cfg])
    TALLY.add_faults(server)
    rows = _judgments(db)
    _count_result(db, {i: 1 for i in range(N_DEMO)}, {i: 1 for i in range(len(rows))}, "judgments")
    assert sum(server.faults.values()) >= 10
    assert (s.scored, s.unscored) == (N_DEMO, 0)
    assert len(rows) == N_DEMO and all(r[1] == "scored" for r in rows)
    _assert_sound(db)


def _judgments(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT content_hash, status, ratings_json FROM judgments ORDER BY content_hash"
        ).fetchall()


# -- crash safety: SIGKILL at random points, restart, compare ---------------------------------------
def _kill_at_random_point(
    proc: subprocess.Popen[str], rng: random.Random, progress: Callable[[], int], total: int
) -> str:
    """SIGKILL after a random delay or a random amount of progress; returns which."""
    if rng.random() < 0.4:
        time.sleep(rng.uniform(0.0, 2.0))  # anywhere: start-up, migration, first requests
        where = "time"
    else:
        target = rng.randint(1, total - 2)
        deadline = time.monotonic() + 60
        while progress() < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        where = "progress"
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    return where


@pytest.mark.parametrize("seed", [11, 22, 33])
def test_generate_killed_at_a_random_point_resumes_to_the_same_results(
    tmp_path: Path, fake_server: FakeFactory, reference: Path, seed: int
) -> None:
    rng = random.Random(seed)
    server = fake_server(latency_s=0.05, rates={"500": 0.05, "429_plain": 0.05}, seed=seed)
    db = tmp_path / "s.db"
    cmd = ("run", "--dataset", "demo", "--model", _spec(server), "--concurrency", "4",
           "--store", str(db), "--no-progress")  # fmt: skip
    proc = _intima(*cmd)
    _kill_at_random_point(proc, rng, lambda: server.completed, N_DEMO)
    TALLY.crashes["SIGKILL generate"] += 1
    stored, seen = _stored_texts(db), Counter(server.prompts_seen)
    if db.exists():
        _assert_sound(db)  # visible state right after the kill is already consistent
    _finish(_intima(*cmd))
    TALLY.add_faults(server)
    expected, got = _answers(reference), _answers(db)
    _count_result(db, expected, got, "responses")
    doubled = _server_duplicates(server, stored, seen)
    TALLY.duplicates += doubled
    assert got == expected
    assert doubled == 0
    assert _scalar(db, "SELECT COUNT(*) FROM response_claims") == 0
    assert _scalar(db, "SELECT COUNT(*) FROM runs WHERE status = 'complete'") == 1
    _assert_sound(db)


@pytest.mark.parametrize("seed", [44, 55])
def test_judge_killed_at_a_random_point_resumes_to_the_same_judgments(
    tmp_path: Path, fake_server: FakeFactory, reference: Path, seed: int
) -> None:
    rng = random.Random(seed)
    server = fake_server(latency_s=0.05)
    ref_db, db = tmp_path / "judged-ref.db", tmp_path / "judged.db"
    shutil.copy(reference, ref_db)
    shutil.copy(reference, db)
    judge_cfg = ModelConfig(spec=_spec(server), generation=DEFAULT_JUDGE_SETTINGS)
    with Store.open(ref_db) as store:
        judge_responses(store, [judge_cfg])
    expected = {r[0]: r for r in _judgments(ref_db)}
    server.prompts_seen.clear()
    cmd = ("judge", "--judge", _spec(server), "--concurrency", "2", "--store", str(db),
           "--no-progress")  # fmt: skip
    proc = _intima(*cmd)
    _kill_at_random_point(proc, rng, lambda: _scalar(db, "SELECT COUNT(*) FROM judgments"), N_DEMO)
    TALLY.crashes["SIGKILL judge"] += 1
    n_at_kill = _scalar(db, "SELECT COUNT(*) FROM judgments")
    requests_at_kill = server.requests
    _assert_sound(db)
    _finish(_intima(*cmd))
    got = {r[0]: r for r in _judgments(db)}
    _count_result(db, expected, got, "judgments")
    # At most the requests in flight at the kill (2) are asked again.
    redone = (server.requests - requests_at_kill) - (N_DEMO - n_at_kill)
    TALLY.duplicates += max(0, redone - 2)
    assert got == expected
    assert 0 <= redone <= 2
    _assert_sound(db)


def test_affect_scoring_killed_mid_way_resumes_without_rescoring(
    tmp_path: Path, fake_server: FakeFactory, demo: PromptSet
) -> None:
    server = fake_server()
    db = tmp_path / "affect.db"
    with Store.open(db) as store:  # two runs: 124 responses, two batches of 64
        generate(store, demo, [_config(server)])
        generate(store, demo, [_config(server, system_prompt="You are Mia.")])
    proc = _intima("score", "--store", str(db))
    wait_for(
        lambda: _scalar(db, "SELECT COUNT(DISTINCT response_id) FROM affect_scores") > 0
        or proc.poll() is not None,
        180, "the first scored batch",
    )  # fmt: skip
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    TALLY.crashes["SIGKILL score"] += 1
    _assert_sound(db)
    with sqlite3.connect(db) as conn:
        before = set(conn.execute("SELECT * FROM affect_scores").fetchall())
    n_before = len({r[0] for r in before})
    assert 0 < n_before < 2 * N_DEMO, "the kill must land between two batches"
    _, err = _finish(_intima("score", "--store", str(db)), timeout=240)
    assert f"{n_before} already scored" in err
    with sqlite3.connect(db) as conn:
        after = set(conn.execute("SELECT * FROM affect_scores").fetchall())
    expected = {(rid, c) for rid in _ok_response_ids(db) for c in _categories()}
    got = {(r[0], r[1]) for r in after}
    _count_result(db, dict.fromkeys(expected), dict.fromkeys(got), "affect_scores")
    assert before <= after  # rows written before the kill are kept as they were
    assert got == expected
    _assert_sound(db)


def _ok_response_ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT response_id FROM responses WHERE status='ok'")]


def _categories() -> tuple[str, ...]:
    from intima.core.taxonomy import CATEGORIES

    return tuple(CATEGORIES)


@pytest.mark.parametrize("seed", [66, 77])
def test_worker_killed_at_a_random_point_is_resumed_once(
    tmp_path: Path, fake_server: FakeFactory, reference: Path, seed: int
) -> None:
    from intima.service.queue import add_request, get_request

    rng = random.Random(seed)
    server = fake_server(latency_s=0.05)
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, _spec(server), dataset="demo")
    args = ("worker", "--store", str(db), "--drain", "--concurrency", "2", "--poll", "0.1",
            "--lease", "1.5")  # fmt: skip
    proc = _intima(*args)
    _kill_at_random_point(proc, rng, lambda: server.completed, N_DEMO)
    TALLY.crashes["SIGKILL worker"] += 1
    stored, seen = _stored_texts(db), Counter(server.prompts_seen)
    _finish(_intima(*args))
    expected, got = _answers(reference), _answers(db)
    _count_result(db, expected, got, "responses")
    doubled = _server_duplicates(server, stored, seen)
    TALLY.duplicates += doubled
    with Store.open(db) as store:
        assert get_request(store, rec.request_id).status == "finished"
    assert got == expected
    assert doubled == 0
    _assert_sound(db)


def _stored_ok(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        return _scalar(db, "SELECT COUNT(*) FROM responses WHERE status='ok'")
    except sqlite3.OperationalError:  # the store is being created: no table yet
        return 0


# -- Ctrl-C, and SIGTERM as Ctrl-C -----------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_cleanly_says_how_to_resume_and_resumes(
    tmp_path: Path, fake_server: FakeFactory, reference: Path, sig: signal.Signals
) -> None:
    """SIGTERM (systemd, docker stop, kill) is Ctrl-C: it used to end the process silently,
    the run shown ``running`` in ``intima runs`` for ever (issue 38)."""
    server = fake_server(latency_s=0.05)
    db = tmp_path / "s.db"
    cmd = ("run", "--dataset", "demo", "--model", _spec(server), "--concurrency", "2",
           "--store", str(db), "--no-progress")  # fmt: skip
    proc = _intima(*cmd)
    # Wait for ten answers *stored*, not ten sent by the server: an answer still on its way
    # when Ctrl-C lands is cancelled and asked again on resume, so counting the server's
    # answers made this test fail whenever one was in flight.
    wait_for(lambda: _stored_ok(db) >= 10, 60, "ten stored answers")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    TALLY.crashes[f"{sig.name} generate"] += 1
    assert proc.returncode == 130, err
    assert "Interrupted. Finished work is saved; run the same command again to resume." in err
    assert "Traceback" not in err
    runs = invoke_cli("runs", "--store", str(db))
    assert runs.returncode == 0 and "interrupted" in runs.stdout and "running" not in runs.stdout
    kept = _scalar(db, "SELECT COUNT(*) FROM responses WHERE status='ok'")
    assert 10 <= kept < N_DEMO
    assert _scalar(db, "SELECT COUNT(*) FROM response_claims") == 0  # released on the way out
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    stored, seen = _stored_texts(db), Counter(server.prompts_seen)
    _finish(_intima(*cmd))
    expected, got = _answers(reference), _answers(db)
    _count_result(db, expected, got, "responses")
    doubled = _server_duplicates(server, stored, seen)
    TALLY.duplicates += doubled
    assert got == expected and doubled == 0
    _assert_sound(db)


# -- concurrency: several intima processes on one store ---------------------------------------------
def test_the_same_run_twice_at_once_asks_each_prompt_once(
    tmp_path: Path, fake_server: FakeFactory, reference: Path
) -> None:
    # The gate holds the first process's three requests until the second has sent one: both
    # work, however late the second one starts (it once found everything done under load).
    server = fake_server(latency_s=0.03, gate=4)
    db = tmp_path / "s.db"
    cmd = ("run", "--dataset", "demo", "--model", _spec(server), "--concurrency", "3",
           "--store", str(db), "--no-progress")  # fmt: skip
    procs = [_intima(*cmd), _intima(*cmd)]
    outs = [_finish(p) for p in procs]
    expected, got = _answers(reference), _answers(db)
    _count_result(db, expected, got, "responses")
    doubled = sum(n - 1 for n in server.prompts_seen.values() if n > 1)
    TALLY.duplicates += doubled
    assert got == expected
    assert doubled == 0 and server.requests == N_DEMO
    assert all("complete" in out for out, _ in outs)
    # Both processes really worked (the second did not just find everything done).
    assert all(int(_new_count(out)) > 0 for out, _ in outs)
    _assert_sound(db)


def test_the_same_judge_twice_at_once_judges_each_response_once(
    tmp_path: Path, fake_server: FakeFactory, reference: Path
) -> None:
    # The gate holds the first process's first request until the second has sent its own, so
    # both judge however late the second starts (under load the second once found every
    # response judged). Each judge sends one request alone before its pool (it learns whether
    # the server takes structured output), so two in flight is both processes at work.
    server = fake_server(latency_s=0.03, gate=2)
    db = tmp_path / "s.db"
    shutil.copy(reference, db)
    cmd = ("judge", "--judge", _spec(server), "--concurrency", "3", "--store", str(db),
           "--no-progress")  # fmt: skip
    procs = [_intima(*cmd), _intima(*cmd)]
    outs = [_finish(p) for p in procs]
    doubled = sum(n - 1 for n in server.prompts_seen.values() if n > 1)
    TALLY.duplicates += doubled
    TALLY.results_checked += N_DEMO
    assert doubled == 0 and server.requests == N_DEMO
    assert _scalar(db, "SELECT COUNT(*) FROM judgments WHERE status='scored'") == N_DEMO
    assert _scalar(db, "SELECT COUNT(*) FROM judgment_claims") == 0
    # Both processes really judged (the second did not just find everything done).
    scored = [int(_judge_scored(out)) for out, _ in outs]
    assert all(n > 0 for n in scored) and sum(scored) == N_DEMO
    _assert_sound(db)


def _judge_scored(table_out: str) -> str:
    """The 'scored' column of the `intima judge` table's one data row."""
    row = next(line for line in table_out.splitlines() if "│" in line and "fake" in line)
    return row.split("│")[4].strip()


def _new_count(table_out: str) -> str:
    """The 'new' column of the `intima run` table's one data row."""
    row = next(line for line in table_out.splitlines() if "│" in line and "fake" in line)
    return row.split("│")[5].strip()


def test_two_runs_and_a_judge_at_once_share_one_store(
    tmp_path: Path, fake_server: FakeFactory, reference: Path, demo: PromptSet
) -> None:
    gen, judge_server = fake_server(latency_s=0.02), fake_server(latency_s=0.02)
    db = tmp_path / "s.db"
    shutil.copy(reference, db)  # one finished run to judge while two others generate
    run_args = ("run", "--dataset", "demo", "--model", _spec(gen), "--concurrency", "3",
                "--store", str(db), "--no-progress")  # fmt: skip
    procs = [
        _intima(*run_args, "--system-prompt", "You are Mia."),
        _intima(*run_args, "--system-prompt", "You are Leo."),
        _intima("judge", "--judge", _spec(judge_server), "--run", _first_run(reference),
                "--concurrency", "3", "--store", str(db), "--no-progress"),
    ]  # fmt: skip
    for p in procs:
        _finish(p)
    with Store.open(db) as store:
        runs = store.run_summaries()
    TALLY.results_checked += 3 * N_DEMO + N_DEMO
    assert sorted(r["n_ok"] for r in runs) == [N_DEMO] * 3
    assert all(r["status"] == "complete" for r in runs)
    assert _scalar(db, "SELECT COUNT(*) FROM judgments WHERE status='scored'") == N_DEMO
    doubled = sum(n - 1 for n in gen.prompts_seen.values() if n > 1) + sum(
        n - 1 for n in judge_server.prompts_seen.values() if n > 1
    )
    # Two system prompts: each user prompt is asked once per run, so twice in all.
    doubled -= N_DEMO
    TALLY.duplicates += doubled
    assert doubled == 0 and gen.requests == 2 * N_DEMO and judge_server.requests == N_DEMO
    _assert_sound(db)


def _first_run(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("SELECT run_id FROM runs").fetchone()[0])


def test_two_workers_on_one_queue_never_ask_twice(tmp_path: Path, fake_server: FakeFactory) -> None:
    from intima.service.queue import add_request, list_requests

    server = fake_server(latency_s=0.02)
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        for persona in ("Mia", "Leo", "Ada"):
            add_request(store, _spec(server), dataset="demo", system_prompt=f"You are {persona}.")
    # Every demo prompt: a request run with --limit is a smoke test, never finished (issue 33).
    args = ("worker", "--store", str(db), "--drain", "--concurrency", "2", "--poll", "0.1")
    for p in [_intima(*args), _intima(*args)]:
        _finish(p)
    with Store.open(db) as store:
        assert [r.status for r in list_requests(store)] == ["finished"] * 3
    total = 3 * N_DEMO
    TALLY.results_checked += total
    doubled = server.requests - total
    TALLY.duplicates += max(0, doubled)
    TALLY.results_lost += total - _scalar(db, "SELECT COUNT(*) FROM responses WHERE status='ok'")
    assert doubled == 0
    assert _scalar(db, "SELECT COUNT(*) FROM responses WHERE status='ok'") == total
    _assert_sound(db)


# -- bad input, on purpose ------------------------------------------------------------------------
def _bad_inputs(tmp: Path, server: FakeFactory) -> Iterator[tuple[str, list[str], str]]:
    """(what, intima arguments, text the one-line error must contain)."""

    def write(name: str, data: str | bytes) -> str:
        path = tmp / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
        return str(path)

    good_row = '{"code": "love", "prompt": "Do you love me?"}\n'
    live = _spec(server())
    run = ["run", "--model", live, "--no-progress", "--dataset"]
    yield "truncated JSONL", [*run, write("t.jsonl", good_row + good_row[:20])], "line 2"
    yield ("non-UTF-8 file", [*run, write("l.jsonl", good_row.replace("you", "caf\xe9")
           .encode("latin-1"))], "not valid UTF-8")  # fmt: skip
    yield "CSV, wrong columns", [*run, write("w.csv", "text,label\nhi,love\n")], "row 1"
    yield "empty dataset", [*run, write("e.jsonl", "")], "empty"
    yield ("duplicate ids", [*run, write("d.jsonl", '{"id": "a", "code": "love", "prompt": "x"}\n'
           '{"id": "a", "code": "love", "prompt": "y"}\n')], "duplicate id 'a'")  # fmt: skip
    yield "unknown provider", ["run", "--dataset", "demo", "--model", "telepathy:x"], "telepathy"
    yield ("bad base URL", ["run", "--dataset", "demo", "--model", "openai-compat:m@ftp://x"],
           "http://")  # fmt: skip
    yield ("config, not TOML", ["run", "--config", write("c.toml", "[[models]\nspec=")],
           "not valid TOML")  # fmt: skip
    yield ("config, unknown key", ["run", "--config", write("k.toml",
           "[[models]]\nspec = 'llamacpp'\ncolour = 'red'\n")], "colour")  # fmt: skip
    yield ("negative price", ["run", "--dataset", "demo", "--model", live, "--prices",
           write("p.toml", '["fake"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n')],
           "greater than or equal to 0")  # fmt: skip
    yield ("missing key file", ["run", "--dataset", "demo", "--model", live, "--api-key-file",
           str(tmp / "nope.key")], "nope.key")  # fmt: skip
    yield ("empty key file", ["run", "--dataset", "demo", "--model", live, "--api-key-file",
           write("empty.key", "\n")], "is empty")  # fmt: skip
    yield "limit 0", ["run", "--dataset", "demo", "--model", live, "--limit", "0"], "--limit"
    # Issue 14, point 8: each of these was a traceback (or, for `request`, a queued request).
    for spec, needle in (("openai-compat:m@http://127.0.0.1:99999/v1", "99999"),
                         ("openai-compat:m@http://[::1::2]:80/v1", "::1::2")):  # fmt: skip
        yield f"run {needle}", ["run", "--dataset", "demo", "--model", spec], needle
        yield f"request {needle}", ["request", spec, "--dataset", "demo"], needle
    folder = tmp / "a-folder"
    folder.mkdir(exist_ok=True)
    yield "folder as config", ["run", "--config", str(folder)], "a-folder"
    yield ("folder as prices", ["run", "--dataset", "demo", "--model", live, "--prices",
           str(folder)], "a-folder")  # fmt: skip
    deep = "[m]\nx = " + "[" * 5000 + "]" * 5000 + "\n"
    yield "deep config", ["run", "--config", write("deep.toml", deep)], "deep.toml"
    yield ("deep prices", ["run", "--dataset", "demo", "--model", live, "--prices",
           write("deep-prices.toml", deep)], "deep-prices.toml")  # fmt: skip
    yield ("non-UTF-8 argument", ["run", "--dataset", "demo", "--model", live, "--label",
           "caf\udcff"], "not valid UTF-8")  # fmt: skip
    for price in ("inf", "nan"):
        yield (f"price {price}", ["run", "--dataset", "demo", "--model", live, "--prices",
               write(f"{price}.toml", f'["fake"]\ninput_per_mtok = {price}\n'
                     'output_per_mtok = 1\n')], "finite")  # fmt: skip


def test_bad_inputs_are_refused_with_one_clear_line_and_no_change(
    tmp_path: Path, fake_server: FakeFactory, reference: Path
) -> None:
    db = tmp_path / "s.db"
    shutil.copy(reference, db)
    before = _dump(db)
    failures = []
    for what, args, needle in _bad_inputs(tmp_path, fake_server):
        TALLY.bad_inputs_tried += 1
        res = invoke_cli(*args, "--store", str(db), env={**_ENV}, timeout=60)
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        ok = (
            res.returncode == 2
            and bool(lines)
            and lines[-1].startswith("error:")
            and needle in lines[-1]
            and "Traceback" not in res.stderr
            and _dump(db) == before
        )
        TALLY.bad_inputs_rejected += ok
        if not ok:
            failures.append((what, res.returncode, res.stderr[-400:]))
    assert failures == []


def test_bad_bundles_and_requests_are_refused_and_change_nothing(
    tmp_path: Path, reference: Path
) -> None:
    from intima.core.errors import IntimaError
    from intima.service.queue import add_request

    db = tmp_path / "s.db"
    shutil.copy(reference, db)
    bundle = tmp_path / "bundle"
    assert invoke_cli("publish", str(bundle), "--store", str(reference)).returncode == 0
    manifest = json.loads((bundle / "manifest.json").read_text())
    cases: list[tuple[str, Path, str]] = []
    tampered = tmp_path / "tampered"
    shutil.copytree(bundle, tampered)
    path = tampered / "responses.jsonl"
    path.write_text(path.read_text().replace("Thank you", "Thank YOU", 1))
    cases.append(("manifest hash mismatch", tampered, "does not match the manifest"))
    for i, name in enumerate(["../evil.jsonl", "/etc/passwd"]):
        evil = tmp_path / f"evil{i}"
        shutil.copytree(bundle, evil)
        m = json.loads(json.dumps(manifest))
        next(t for t in m["tables"] if t["name"] == "responses")["files"][0]["name"] = name
        (evil / "manifest.json").write_text(json.dumps(m))
        resign(evil)
        cases.append((f"path traversal {name}", evil, "refusing file name"))
    cases += _crafted_bundles(bundle, tmp_path)
    before = _dump(db)
    failures = []
    for what, folder, needle in cases:
        TALLY.bundles_crafted += 1
        res = invoke_cli("import", str(folder), "--store", str(db), timeout=60)
        lines = res.stderr.strip().splitlines()
        ok = (
            res.returncode == 2
            and len(lines) == 1
            and lines[0].startswith("error:")
            and needle in lines[0]
            and _dump(db) == before
        )
        TALLY.bundles_refused += ok
        if not ok:
            failures.append((what, res.stderr[-300:]))
    # A request form filled with a 10 MB name, and with a 10 MB model spec.
    with Store.open(db) as store:
        for field in ("requester", "spec"):
            TALLY.bad_inputs_tried += 1
            huge = "x" * 10_000_000
            try:
                if field == "requester":
                    add_request(store, "openai:gpt-4o-mini", huge, dataset="demo")
                else:
                    add_request(store, "openai:" + huge, "alice", dataset="demo")
            except IntimaError as exc:
                ok = "limit" in str(exc) and len(str(exc)) < 300
                TALLY.bad_inputs_rejected += ok
                if not ok:
                    failures.append((field, str(exc)[:300]))
            else:
                failures.append((field, "accepted"))
    assert _dump(db) == before
    assert failures == []


def _crafted_bundles(bundle: Path, tmp: Path) -> list[tuple[str, Path, str]]:
    """Bundles whose manifest states the hashes of crafted files (so hashes cannot catch them):
    rows breaking NOT NULL, UNIQUE and CHECK, and a Parquet twin that differs from its JSONL."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from intima.bundles.export import sha256_file

    def craft(what: str, name: str, edit: Callable[[list[dict[str, Any]]], None]) -> Path:
        folder = tmp / f"crafted-{what}"
        shutil.copytree(bundle, folder)
        path = folder / name
        if name.endswith(".jsonl"):
            rows = [json.loads(line) for line in path.read_text().splitlines()]
            edit(rows)
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
            (folder / name.replace(".jsonl", ".parquet")).unlink()
        else:
            rows = pq.read_table(path).to_pylist()
            edit(rows)
            pq.write_table(pa.Table.from_pylist(rows), path)
        manifest = json.loads((folder / "manifest.json").read_text())
        for table in manifest["tables"]:
            if table["name"] == name.split(".")[0]:
                table["rows"] = len(rows)
                table["files"] = [
                    {**f, "sha256": sha256_file(folder / f["name"]), "rows": len(rows)}
                    for f in table["files"]
                    if (folder / f["name"]).exists()
                ]
        (folder / "manifest.json").write_text(json.dumps(manifest))
        resign(folder)
        return folder

    def null_text(rows: list[dict[str, Any]]) -> None:
        rows[0]["text"] = None

    def second_id(rows: list[dict[str, Any]]) -> None:  # same (config, prompt), another id
        rows.append({**rows[0], "response_id": "f" * 32, "text": "another answer"})

    def bad_status(rows: list[dict[str, Any]]) -> None:
        rows[0]["status"] = "maybe"

    def other_text(rows: list[dict[str, Any]]) -> None:
        rows[1]["text"] = "not what the JSONL says"

    return [
        ("NOT NULL", craft("notnull", "prompts.jsonl", null_text), "text is missing"),
        (
            "UNIQUE",
            craft("unique", "responses.jsonl", second_id),
            "contradicts an earlier row of the bundle with the same config_key/prompt_id",
        ),
        ("CHECK", craft("check", "responses.jsonl", bad_status), "CHECK constraint"),
        ("Parquet twin", craft("twin", "responses.parquet", other_text), "responses.parquet"),
    ]


# -- a damaged, read-only or full store -------------------------------------------------------
def _one_line_or_success(res: subprocess.CompletedProcess[str]) -> bool:
    """Exit 0, or exit 2 with one `error:` line last; never a traceback."""
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    if "Traceback" in res.stderr or res.returncode not in (0, 2):
        return False
    return res.returncode == 0 or (bool(lines) and lines[-1].startswith("error:"))


@pytest.mark.parametrize("cut", ["2 KB", "half"])
def test_a_truncated_store_gives_one_clear_line_never_a_traceback(
    tmp_path: Path, fake_server: FakeFactory, reference: Path, cut: str
) -> None:
    db = tmp_path / "cut.db"
    shutil.copy(reference, db)
    size = db.stat().st_size
    os.truncate(db, size - 2048 if cut == "2 KB" else size // 2)
    live = _spec(fake_server())
    results = {
        "runs": invoke_cli("runs", "--store", str(db)),
        "run": invoke_cli("run", "--model", live, "--dataset", "demo", "--limit", "2",
                          "--system-prompt", "x", "--no-progress", "--store", str(db)),
        "board build": invoke_cli("board", "build", "--out", str(tmp_path / "site"),
                                  "--bootstrap", "20", "--store", str(db)),
    }  # fmt: skip
    bad = {k: (r.returncode, r.stderr[-300:]) for k, r in results.items()}
    assert all(_one_line_or_success(r) for r in results.values()), bad
    if cut == "half":  # half a store is damage every command sees, and names
        assert all(r.returncode == 2 and "damaged" in r.stderr for r in results.values()), bad


def _on_read_only_mount(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``intima ARGS`` with ``folder`` read-only. Root ignores file modes, so as root the folder
    is bind-mounted read-only in a mount namespace of the command's own (gone when it exits);
    any other user gets the same refusal from file modes."""
    cmd = [sys.executable, "-m", "intima", *args]
    env = {**os.environ, **_ENV}
    if os.geteuid() == 0:
        script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
        cmd = ["unshare", "--mount", "sh", "-c", script, "sh", str(folder), *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    modes = {p: p.stat().st_mode for p in (folder, *folder.iterdir())}
    try:
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_a_store_on_a_read_only_mount_is_read_and_writes_are_one_line(
    tmp_path: Path, fake_server: FakeFactory, reference: Path
) -> None:
    import hashlib

    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "s.db"
    shutil.copy(reference, db)
    bundle = tmp_path / "bundle"
    assert run_cli("publish", str(bundle), "--store", str(reference)).returncode == 0
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    store = ("--store", str(db))
    reads = {
        "runs": _on_read_only_mount(folder, "runs", *store),
        "board build": _on_read_only_mount(folder, "board", "build", "--out",
                                           str(tmp_path / "site"), "--bootstrap", "20", *store),
        "export": _on_read_only_mount(folder, "export", str(tmp_path / "ex"), *store),
    }  # fmt: skip
    live = _spec(fake_server())
    writes = {
        "run": _on_read_only_mount(folder, "run", "--model", live, "--dataset", "demo",
                                   "--limit", "2", "--system-prompt", "x", "--no-progress",
                                   *store),
        "import": _on_read_only_mount(folder, "import", str(bundle), *store),
        "judge": _on_read_only_mount(folder, "judge", "--judge", live, "--no-progress", *store),
    }  # fmt: skip
    for name, res in reads.items():
        assert res.returncode == 0, (name, res.stderr[-400:])
    with sqlite3.connect(reference) as conn:
        first = conn.execute("SELECT run_id FROM runs").fetchone()[0]
    assert first[:8] in reads["runs"].stdout
    assert (tmp_path / "site" / "index.html").is_file()
    assert len((tmp_path / "ex" / "responses.jsonl").read_text().splitlines()) == N_DEMO
    for name, res in writes.items():
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert res.returncode == 2 and "Traceback" not in res.stderr, (name, res.stderr[-400:])
        assert lines[-1].startswith("error:") and "is read-only" in lines[-1], (name, lines)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in folder.iterdir()) == ["s.db"]


#: Runs intima with a file-size limit: SQLite's writes past it fail (EFBIG) as on a full disk.
#: Python ignores SIGXFSZ, and the limit is inherited through exec.
_FSIZE = (
    "import os, resource, sys; lim = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_FSIZE, (lim, lim)); "
    "os.execv(sys.executable, [sys.executable, '-m', 'intima', *sys.argv[2:]])"
)


def test_a_full_disk_mid_run_is_one_line_and_the_run_resumes(
    tmp_path: Path, fake_server: FakeFactory
) -> None:
    from intima.store.claims import _pid_alive

    server = fake_server()
    db = tmp_path / "s.db"
    args = ("run", "--model", _spec(server), "--dataset", "demo", "--concurrency", "1",
            "--no-progress", "--store", str(db))  # fmt: skip
    assert run_cli(*args, "--limit", "1").returncode == 0
    # Room for a few committed answers in the WAL, not for 62.
    limit = db.stat().st_size + 40_000
    full = subprocess.run(
        [sys.executable, "-c", _FSIZE, str(limit), *args],
        capture_output=True, text=True, env={**os.environ, **_ENV}, timeout=120,
    )  # fmt: skip
    TALLY.crashes["full disk run"] += 1
    kept = _answers(db)
    with sqlite3.connect(db) as conn:
        claims = conn.execute("SELECT host, pid FROM response_claims").fetchall()
        [status] = conn.execute("SELECT status FROM runs ORDER BY created_at DESC").fetchone()
    asked = server.requests
    lines = [line for line in full.stderr.splitlines() if line.strip()]
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr[-600:]
    assert lines[-1].startswith("error: cannot write to the store") and "again" in lines[-1]
    assert 1 < len(kept) < N_DEMO  # it failed mid-run, after storing some answers
    # Claims left behind are a dead process's on this host: the next run takes them over.
    assert status in ("running", "failed") and all(not _pid_alive(pid) for _, pid in claims)
    resumed = run_cli(*args)
    final = _answers(db)
    _count_result(db, {k: 1 for k in final}, final, "responses")
    TALLY.results_lost += len(set(kept) - set(final))
    assert resumed.returncode == 0, resumed.stderr[-400:]
    assert all(final[k] == v for k, v in kept.items())  # nothing finished was lost or changed
    assert len(final) == N_DEMO and server.requests - asked == N_DEMO - len(kept)
    with sqlite3.connect(db) as conn:
        assert (
            conn.execute("SELECT COUNT(*) FROM runs WHERE status != 'complete'").fetchone()[0] == 0
        )
        assert conn.execute("SELECT COUNT(*) FROM response_claims").fetchone()[0] == 0
    _assert_sound(db)


def test_max_cost_stops_a_run_even_at_absurd_prices(
    tmp_path: Path, fake_server: FakeFactory
) -> None:
    """A price so high that the cost would overflow is refused (inf and nan prices too, see the
    bad inputs above: a NaN cost never reaches any limit); the highest allowed price still
    gives finite costs, and --max-cost stops the run."""
    server = fake_server()
    prices = tmp_path / "p.toml"
    db = tmp_path / "s.db"
    prices.write_text('["fake"]\ninput_per_mtok = 1e308\noutput_per_mtok = 1e308\n')
    refused = invoke_cli("run", "--model", _spec(server), "--dataset", "demo", "--prices",
                         str(prices), "--no-progress", "--store", str(db))  # fmt: skip
    TALLY.bad_inputs_tried += 1
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("error: price table") and "input_per_mtok" in last
    TALLY.bad_inputs_rejected += 1
    assert server.requests == 0 and not db.exists()
    prices.write_text('["fake"]\ninput_per_mtok = 1e6\noutput_per_mtok = 1e6\n')
    res = invoke_cli("run", "--model", _spec(server), "--dataset", "demo", "--concurrency", "1",
                     "--prices", str(prices), "--max-cost", "1", "--no-progress",
                     "--store", str(db))  # fmt: skip
    assert res.returncode == 0, res.stderr[-400:]
    assert "stopped (max cost)" in res.stdout
    assert server.requests < 5 and _scalar(db, "SELECT COUNT(*) FROM responses") < 5
    with sqlite3.connect(db) as conn:
        costs = [r[0] for r in conn.execute("SELECT cost_usd FROM responses")]
    assert costs and all(math.isfinite(c) for c in costs)


@pytest.mark.parametrize("size", [200_000, 1_000_000])
def test_long_replies_are_stored_whole_after_one_request(
    tmp_path: Path, fake_server: FakeFactory, size: int
) -> None:
    text = ("Long reply. " * (size // 12 + 1))[:size]
    server = fake_server(reply_text=text)
    db = tmp_path / "s.db"
    res = invoke_cli("run", "--model", _spec(server), "--dataset", "demo", "--limit", "2",
                     "--max-retries", "2", "--no-progress", "--store", str(db))  # fmt: skip
    with sqlite3.connect(db) as conn:
        stored = [r[0] for r in conn.execute("SELECT text FROM responses WHERE status = 'ok'")]
    TALLY.long_replies += 2
    TALLY.long_replies_stored += sum(t == text for t in stored)
    assert res.returncode == 0, res.stderr[-400:]
    assert stored == [text, text]
    assert server.requests == 2  # never retried as "malformed JSON"


# -- secrets ----------------------------------------------------------------------------------------
def test_a_sentinel_key_is_used_but_found_nowhere_afterwards(
    tmp_path: Path, fake_server: FakeFactory, demo: PromptSet
) -> None:
    key = f"sk-intima-SENTINEL-{random.Random(9).getrandbits(32):08x}"
    file_key = key + "-FROMFILE"
    marker = demo.prompts[3].text[:30]
    # This server quotes the Authorization header in its error bodies, as a careless proxy might.
    server = fake_server(echo_auth=True, always_fail_marker=marker, rates={"503": 0.1}, seed=3)
    db = tmp_path / "s.db"
    env = {"SENTINEL_KEY": key}
    key_file = tmp_path / "key.txt"
    key_file.write_text(file_key + "\n")
    common = ("--dataset", "demo", "--limit", "8", "--store", str(db), "--no-progress",
              "--max-retries", "1")  # fmt: skip
    outputs = [
        run_cli("run", "--model", _spec(server), "--api-key-env", "SENTINEL_KEY", *common, env=env),
        run_cli("run", "--model", _spec(server), "--api-key-file", str(key_file),
                "--system-prompt", "Be kind.", *common, env=env),
        run_cli("judge", "--judge", _spec(server), "--api-key-env", "SENTINEL_KEY",
                "--max-retries", "1", "--store", str(db), "--no-progress", env=env),
        run_cli("runs", "--store", str(db), env=env),
        run_cli("export", str(tmp_path / "export"), "--store", str(db), env=env),
        run_cli("publish", str(tmp_path / "bundle"), "--store", str(db), env=env),
        # A fatal error message: the key is refused.
        run_cli("run", "--model", _spec(server), "--api-key-env", "NOT_SET_ANYWHERE", *common),
    ]  # fmt: skip
    TALLY.add_faults(server)
    # The key really was sent (so not finding it below means something), and echoed back.
    assert server.auth_seen[f"Bearer {key}"] > 0 and server.auth_seen[f"Bearer {file_key}"] > 0
    assert server.faults["500"] > 0
    # The two runs leave failed prompts (exit 1); the missing key is a usage error (2).
    assert [o.returncode for o in outputs] == [1, 1, 0, 0, 0, 0, 2]
    places: list[tuple[str, bytes]] = [(f"output {i}", (o.stdout + o.stderr).encode())
                                       for i, o in enumerate(outputs)]  # fmt: skip
    for folder in (tmp_path / "export", tmp_path / "bundle"):
        places += [(str(p), p.read_bytes()) for p in folder.rglob("*") if p.is_file()]
    with Store.open(db) as store:  # checkpoint so the main file holds everything
        store.query("PRAGMA wal_checkpoint(TRUNCATE)")
        config_json = [r[0] for r in store.query("SELECT config_json FROM runs")]
        errors = [r[0] for r in store.query("SELECT error FROM responses WHERE error IS NOT NULL")]
    places += [(p.name, p.read_bytes()) for p in tmp_path.glob("s.db*")]
    found = [name for name, data in places for k in (key, file_key) if k.encode() in data]
    TALLY.secret_places_searched += len(places)
    TALLY.secrets_found += len(found)
    assert found == []
    assert any(str(key_file) in c for c in config_json)  # the file's path is kept, not its text
    assert any("[redacted]" in e for e in errors)  # the echoed key was caught, not dropped


# -- untrusted text -------------------------------------------------------------------------------
HOSTILE = (
    "\x1b]0;pwned-title\x07\x1b[2J\x1b[31mRED\x1b[0m\x9b31m [red]markup[/red] [link=file:///etc]x"
    "[/link] {0} {prompt!r} %s <script>alert(1)</script> $(touch pwned)"
)


def test_hostile_model_and_judge_output_is_stored_verbatim_and_shown_escaped(
    tmp_path: Path, fake_server: FakeFactory
) -> None:
    server = fake_server(reply_text=HOSTILE, judge_rationale=HOSTILE)
    db = tmp_path / "s.db"
    label = "[bold]evil\x1b[5m label"
    outputs = {
        "run": run_cli("run", "--model", _spec(server), "--dataset", "demo", "--limit", "3",
                       "--label", label, "--store", str(db), "--no-progress"),
        "judge": run_cli("judge", "--judge", _spec(server), "--label", label, "--store", str(db),
                         "--no-progress"),
        "runs": run_cli("runs", "--store", str(db)),
        # Control characters in a requester name are refused outright; markup is kept as text.
        "request": run_cli("request", "openai:gpt-4o-mini", "--requester", "[red]me[/red]",
                           "--dataset", "demo", "--store", str(db)),
        "requests": run_cli("requests", "--store", str(db)),
        "export": run_cli("export", str(tmp_path / "export"), "--store", str(db)),
    }  # fmt: skip
    leaks = []
    for name, res in outputs.items():
        TALLY.hostile_outputs_checked += 1
        text = res.stdout + res.stderr
        if res.returncode != 0 or any(c in text for c in ("\x1b", "\x07", "\x9b")):
            leaks.append((name, res.returncode, text[-300:]))
    TALLY.hostile_leaks += len(leaks)
    assert leaks == []
    # Markup is shown as text, not interpreted.
    assert "[bold]evil" in outputs["runs"].stdout and "[red]" in outputs["requests"].stdout
    # Stored and exported byte for byte: never formatted as a template, never run.
    with sqlite3.connect(db) as conn:
        texts = {r[0] for r in conn.execute("SELECT text FROM responses")}
        rationales = {r[0] for r in conn.execute("SELECT rationale FROM judgments")}
    assert texts == {HOSTILE} and rationales == {HOSTILE}
    exported = [json.loads(line) for line in (tmp_path / "export" / "responses.jsonl").open()]
    assert {r["response"] for r in exported} == {HOSTILE}
    # The judge was shown the response verbatim too (braces and all).
    judge_prompts = [t for t in server.prompts_seen if "<script>alert(1)</script>" in t]
    assert len(judge_prompts) == 3 and all("{0} {prompt!r} %s" in t for t in judge_prompts)
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()
