"""The worker, run as real processes against a real SQLite store and OpenAI-compatible servers."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import invoke_cli, wait_for
from fake_openai import FakeOpenAI
from intima.core.config import GenerationSettings
from intima.core.taxonomy import CATEGORIES
from intima.service.queue import add_request, get_request, list_requests, request_events
from intima.service.worker import StageContext, WorkerSettings, work
from intima.store import Store


def _spec(server: FakeOpenAI) -> str:
    return f"openai-compat:fake@{server.base_url}"


def _scalar(db: Path, sql: str, params: tuple[object, ...] = ()) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(sql, params).fetchone()[0])


def _worker(db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "intima", "worker", "--store", str(db), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )  # fmt: skip


def test_worker_runs_requests_and_records_each_transition(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    server = fake_server()
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        good = add_request(store, _spec(server), "alice", dataset="demo")
        # No key for OpenAI in the worker's environment: this one goes back, with the reason.
        keyless = add_request(store, "openai:gpt-4o-mini", dataset="demo")
    result = invoke_cli(
        "worker", "--drain", "--poll", "0.1", "--store", str(db), env={"OPENAI_API_KEY": ""},
    )  # fmt: skip
    # A key the worker lacks is the worker's failure, not the request's (issue 33): the request
    # goes back to the queue for a worker that has one, and this worker exits 1 saying why.
    assert result.returncode == 1, result.stderr
    assert "2 claimed, 1 finished, 0 failed, 0 lost to another worker, 1 released" in result.stdout
    assert "1 request(s) released to the queue for this worker's own failure" in result.stderr
    assert "most common reason (1 of 1): missing API key" in result.stderr
    with Store.open(db) as store:
        done, back = get_request(store, good.request_id), get_request(store, keyless.request_id)
        events = request_events(store, good.request_id)
        back_events = request_events(store, keyless.request_id)
    assert done.status == "finished" and len(done.run_ids) == 1 and done.finished_at
    assert (back.status, back.attempts, back.reason) == ("pending", 0, None)
    assert back_events[-1]["detail"] == (
        "released: the worker's failure: missing API key: set the environment variable "
        "OPENAI_API_KEY"
    )
    assert [e["status"] for e in events] == ["pending", "running", "finished"]
    assert all(e["at"] for e in events)
    assert _scalar(db, "SELECT COUNT(*) FROM responses WHERE status = 'ok'") == 62
    assert _scalar(db, "SELECT n_prompts FROM runs WHERE run_id = ?", (done.run_ids[0],)) == 62
    assert server.completed == 62


def test_two_workers_on_one_queue_process_each_request_exactly_once(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    # The gate holds the first worker's request until the second has sent one of its own, so
    # both work however late the second starts.
    server = fake_server(latency_s=0.01, gate=2)
    db = tmp_path / "w.db"
    n_requests, n_prompts = 4, 62  # every demo prompt: a request run in part is not finished
    with Store.open(db) as store:
        for i in range(n_requests):
            add_request(store, _spec(server), dataset="demo", system_prompt=f"persona {i}")
    args = ("--drain", "--concurrency", "1", "--poll", "0.1")
    workers = [_worker(db, *args), _worker(db, *args)]
    for w in workers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    with Store.open(db) as store:
        reqs = list_requests(store)
        claims = [
            [e for e in request_events(store, r.request_id) if e["status"] == "running"]
            for r in reqs
        ]
    assert [r.status for r in reqs] == ["finished"] * n_requests
    assert all(r.attempts == 1 for r in reqs)
    assert all(len(c) == 1 for c in claims)
    assert len({c[0]["worker_id"] for c in claims}) == 2  # both really worked
    # Each prompt of each request was asked once, and answered once.
    assert server.requests == n_requests * n_prompts
    assert _scalar(db, "SELECT COUNT(*) FROM responses") == n_requests * n_prompts
    assert _scalar(db, "SELECT MAX(attempts) FROM responses") == 1


def test_a_killed_worker_s_request_is_resumed_after_its_lease_expires(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    server = fake_server(latency_s=0.05)
    db = tmp_path / "w.db"
    n = 62  # the demo prompts
    with Store.open(db) as store:
        rec = add_request(store, _spec(server), dataset="demo")
    args = ("--drain", "--concurrency", "1", "--poll", "0.1", "--lease", "1.5")
    first = _worker(db, *args)
    wait_for(
        lambda: _scalar(db, "SELECT COUNT(*) FROM responses") >= 4, 60, "first answers", poll=0.05
    )
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    stored_at_kill = _scalar(db, "SELECT COUNT(*) FROM responses")
    asked_at_kill = server.requests
    assert 4 <= stored_at_kill < n
    with Store.open(db) as store:
        assert get_request(store, rec.request_id).status == "running"  # the lease is orphaned

    second = _worker(db, *args)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    with Store.open(db) as store:
        done = get_request(store, rec.request_id)
        details = [e["detail"] for e in request_events(store, rec.request_id)]
    assert done.status == "finished" and done.attempts == 2
    assert any(d and d.endswith("expired; resumed") for d in details)
    # The second worker asked only for what was missing; every answer is stored once.
    assert server.requests - asked_at_kill == n - stored_at_kill
    assert _scalar(db, "SELECT COUNT(*) FROM responses WHERE status = 'ok'") == n
    assert _scalar(db, "SELECT COUNT(DISTINCT prompt_id) FROM responses") == n
    assert _scalar(db, "SELECT MAX(attempts) FROM responses") == 1


def test_stages_are_pluggable_and_a_crashing_stage_fails_only_its_request(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    server = fake_server()
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        a = add_request(store, _spec(server), dataset="demo", system_prompt="a")
        b = add_request(store, _spec(server), dataset="demo", system_prompt="b")
    seen: list[tuple[str, int]] = []

    def count(ctx: StageContext) -> None:
        seen.append((ctx.request.request_id, len(ctx.prompts)))
        if ctx.request.request_id == a.request_id:
            raise RuntimeError("scorer exploded")

    summary = work(db, WorkerSettings(drain=True, poll_s=0.05), stages=[count])
    assert (summary.claimed, summary.finished, summary.failed) == (2, 1, 1)
    assert seen == [(a.request_id, 62), (b.request_id, 62)]
    with Store.open(db) as store:
        assert get_request(store, a.request_id).reason == "RuntimeError: scorer exploded"
        assert get_request(store, b.request_id).status == "finished"
    assert server.requests == 0  # generation was not among the configured stages


def test_worker_with_a_judge_stores_judgments_for_the_request(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    model, judge = fake_server(), fake_server()
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, _spec(model), dataset="demo")
    result = invoke_cli(
        "worker", "--once", "--judge", f"openai-compat:judge@{judge.base_url}",
        "--store", str(db),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    with Store.open(db) as store:
        assert get_request(store, rec.request_id).status == "finished"
    # The fake judge rates every category 'low': scored, neutral judgments, one per answer.
    assert _scalar(db, "SELECT COUNT(*) FROM judgments") == 62
    assert (
        _scalar(
            db,
            "SELECT COUNT(*) FROM judgments WHERE status = 'scored' AND primary_label = 'neutral'",
        )
        == 62
    )
    assert judge.requests == 62 and model.requests == 62


def test_a_request_whose_judgments_all_fail_is_failed_with_the_reason(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    model, judge = fake_server(), fake_server(rates={"500": 1.0})
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, _spec(model), dataset="demo")
    result = invoke_cli(
        "worker", "--once", "--limit", "2", "--judge", f"openai-compat:judge@{judge.base_url}",
        "--max-retries", "1", "--max-reasks", "0", "--store", str(db),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "0 finished, 1 failed" in result.stdout
    reason = (
        "judging failed: all 2 judgment(s) by openai-compat:judge are unscored; most common "
        "reason (2 of 2): request failed: gave up after 2 attempts: HTTP 500: server error 500"
    )
    with Store.open(db) as store:
        failed = get_request(store, rec.request_id)
    assert failed.status == "failed" and failed.reason == reason
    assert f"1 request(s) failed; most common reason (1 of 1): {reason}" in result.stderr
    # the answers were kept (generation is done), the judgments stored unscored with why
    assert _scalar(db, "SELECT COUNT(*) FROM responses WHERE status = 'ok'") == 2
    assert _scalar(db, "SELECT COUNT(*) FROM judgments WHERE status = 'unscored'") == 2
    assert judge.requests == 2 * 2


def test_a_request_whose_generation_fails_is_failed_with_the_most_common_reason(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    broken = fake_server(rates={"500": 1.0})
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, _spec(broken), dataset="demo")
    summary = work(db, WorkerSettings(once=True, limit=2, max_retries=0))
    assert (summary.claimed, summary.finished, summary.failed) == (1, 0, 1)
    with Store.open(db) as store:
        failed = get_request(store, rec.request_id)
    assert failed.status == "failed"
    assert "2 of 2 prompts failed after retries; most common reason (2 of 2): " in failed.reason
    assert "HTTP 500: server error 500" in failed.reason
    assert summary.failed_reasons == {failed.reason: 1}


def test_some_unscored_judgments_finish_the_request_but_the_worker_exits_1(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    # the judge fails every request about the second demo prompt only
    model, judge = fake_server(), fake_server(always_fail_marker="Marigold")
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, _spec(model), dataset="demo")
    result = invoke_cli(
        "worker", "--once", "-j", f"openai-compat:judge@{judge.base_url}",
        "--max-retries", "0", "--store", str(db),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "finished with 1 judgment(s) unscored" in result.stderr
    assert (
        "1 judgment(s) unscored in finished requests; most common reason (1 of 1): request "
        "failed: gave up after 1 attempts: HTTP 500: server error 500" in result.stderr
    )
    with Store.open(db) as store:
        assert get_request(store, rec.request_id).status == "finished"
    assert _scalar(db, "SELECT COUNT(*) FROM judgments WHERE status = 'scored'") == 61


def test_worker_takes_the_judge_options_of_intima_judge(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    model, judge = fake_server(), fake_server()
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        add_request(store, _spec(model), dataset="demo")
    result = invoke_cli(
        "worker", "--once", "--limit", "1", "-j", f"openai-compat:judge@{judge.base_url}",
        "--structured-output", "json_object", "--max-tokens", "300", "--max-reasks", "1",
        "--timeout", "30", "--max-retries", "2", "--concurrency", "2",
        "--api-key-env", "INTIMA_TEST_JUDGE_KEY", "--store", str(db),
        env={"INTIMA_TEST_JUDGE_KEY": "sk-test"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(db) as conn:
        [(meta,)] = conn.execute("SELECT judge_config_json FROM judgments").fetchall()
    cfg = json.loads(meta)
    assert cfg["structured_output"] == "json_object"
    assert cfg["generation"]["max_tokens"] == 300
    assert (cfg["timeout_s"], cfg["max_retries"], cfg["concurrency"]) == (30.0, 2, 2)
    assert cfg["api_key_env"] == "INTIMA_TEST_JUDGE_KEY" and "sk-test" not in meta
    res = invoke_cli("worker", "--once", "--structured-output", "xml", "--store", str(db))
    assert res.returncode == 2 and "--structured-output xml: must be one of" in res.stderr


def test_sigterm_releases_the_request_at_once(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    server = fake_server(latency_s=0.2)
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, _spec(server), dataset="demo")
    worker = _worker(db, "--once", "--limit", "30", "--concurrency", "1", "--lease", "600")
    wait_for(
        lambda: _scalar(db, "SELECT COUNT(*) FROM responses") >= 2, 60, "first answers", poll=0.05
    )
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 130, err
    assert "run the same command again to resume" in err
    with Store.open(db) as store:
        back = get_request(store, rec.request_id)
    # Claimable now, not in 10 minutes when the lease would have run out.
    assert back.status == "pending" and back.worker_id is None and back.attempts == 0


def test_hub_requests_use_the_worker_s_local_copy_and_servers(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI], intima_jsonl: Path
) -> None:
    server = fake_server()
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, "openai-compat:acme/fake-8b", "form", allow_urls=False)
    result = invoke_cli(
        "worker", "--once", "--dataset", str(intima_jsonl), "--limit", "3",
        "--base-url", server.base_url, "--store", str(db),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    with Store.open(db) as store:
        done = get_request(store, rec.request_id)
        [(run_id,)] = store.query("SELECT run_id FROM runs")
        run = store.run(run_id)
    assert done.status == "pending"  # --limit is a smoke test: the request waits for a full run
    assert run["dataset_id"] == "AI-companionship/INTIMA" and run["n_prompts"] == 3
    assert server.completed == 3


@pytest.mark.slow
def test_worker_with_score_stores_affect_scores_for_the_request(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    server = fake_server()
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, _spec(server), dataset="demo")
    result = invoke_cli("worker", "--once", "--limit", "2", "--score", "--store", str(db))
    assert result.returncode == 0, result.stderr
    with Store.open(db) as store:
        done = get_request(store, rec.request_id)
    assert done.status == "pending", done.reason  # a smoke test (--limit): scored, not finished
    scored = _scalar(db, "SELECT COUNT(DISTINCT response_id) FROM affect_scores")
    assert scored == 2
    # One row per response and judged category (the 13 behaviours of the taxonomy).
    assert _scalar(db, "SELECT COUNT(*) FROM affect_scores") == 2 * len(CATEGORIES)


@pytest.mark.slow
def test_worker_against_a_real_model_server(tmp_path: Path, llama_server: str) -> None:
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(
            store, f"openai-compat:smollm2@{llama_server}", "ci", dataset="demo",
            generation=GenerationSettings(max_tokens=24, temperature=0.0),
        )  # fmt: skip
    summary = work(db, WorkerSettings(once=True, limit=2, lease_s=30, concurrency=1))
    with Store.open(db) as store:
        done = get_request(store, rec.request_id)
    with sqlite3.connect(db) as conn:
        errors = [r[0] for r in conn.execute("SELECT error FROM responses")]
    assert summary.smoke_tested == 1, (done.reason, errors)  # --limit: released, not finished
    with Store.open(db) as store:
        [(run_id,)] = store.query("SELECT run_id FROM runs")
        texts = [r["response"] for r in store.run_rows(run_id)]
    assert done.status == "pending" and len(texts) == 2
    assert all(isinstance(t, str) and t.strip() for t in texts)


def test_a_hub_request_is_never_answered_with_the_demo_prompts(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """`--dataset demo` (the folder `make demo` leaves) once ran a hub request on the demo
    prompts and recorded it as hub: the worker's --dataset is always a path."""
    server = fake_server()
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "intima.db").write_bytes(b"")
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, "openai-compat:acme/fake-8b", allow_urls=False)
    res = subprocess.run(
        [sys.executable, "-m", "intima", "worker", "--once", "--dataset", "demo",
         "--base-url", server.base_url, "--store", str(db)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    with Store.open(db) as store:
        done = get_request(store, rec.request_id)
        runs = store.query("SELECT COUNT(*) FROM runs")[0][0]
    assert done.status == "failed" and str(tmp_path / "demo") in (done.reason or "")
    assert server.requests == 0 and runs == 0


def _prices(tmp_path: Path, **models: float) -> Path:
    """A price table: each model at the same USD per million tokens in and out."""
    path = tmp_path / "prices.json"
    table = {m: {"input_per_mtok": p, "output_per_mtok": p} for m, p in models.items()}
    path.write_text(json.dumps(table))
    return path


def test_worker_max_cost_caps_the_spend_over_its_requests_and_hands_back_the_rest(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """Issue #30: the worker had no --max-cost. It is held over every request it runs, with the
    budget ``run --max-cost`` uses; the request in hand when it is spent goes back to the queue
    with its answers kept, and the worker stops, saying why."""
    server = fake_server()
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        reqs = [add_request(store, _spec(server), dataset="demo", system_prompt=f"persona {i}")
                for i in range(3)]  # fmt: skip
    prices = _prices(tmp_path, fake=1000.0)
    result = invoke_cli(
        "worker", "--drain", "--limit", "6", "--concurrency", "1", "--poll", "0.1",
        "--prices", str(prices), "--max-cost", "0.1", "--store", str(db),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "worker stopped: the worker's --max-cost is reached" in result.stderr
    spent = _scalar(db, "SELECT CAST(SUM(cost_usd) * 1e6 AS INTEGER) FROM responses") / 1e6
    answered = _scalar(db, "SELECT COUNT(*) FROM responses WHERE status = 'ok'")
    # About $0.035 an answer: the cap stops the first request half-way, one answer past at most.
    assert 0.1 <= spent < 0.2 and 0 < answered < 6
    assert server.requests == answered
    with Store.open(db) as store:
        states = [get_request(store, r.request_id).status for r in reqs]
    assert states == ["pending"] * 3  # the first handed back, to a worker with money left


def test_worker_max_cost_refuses_what_has_no_price(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """A model the price table does not name cannot be held to the cap: its request fails
    before any prompt is sent; a judge with no price is refused before anything is claimed."""
    server = fake_server()
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, f"openai-compat:unpriced@{server.base_url}", dataset="demo")
    prices = _prices(tmp_path, fake=1.0)
    judged = invoke_cli(
        "worker", "--drain", "--prices", str(prices), "--max-cost", "5", "--store", str(db),
        "-j", f"openai-compat:judge-x@{server.base_url}",
    )  # fmt: skip
    assert judged.returncode == 2 and "--max-cost cannot price openai-compat:judge-x" in (
        judged.stderr
    )
    with Store.open(db) as store:
        assert get_request(store, rec.request_id).attempts == 0
    result = invoke_cli(
        "worker", "--drain", "--poll", "0.1", "--prices", str(prices), "--max-cost", "5",
        "--store", str(db),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    with Store.open(db) as store:
        failed = get_request(store, rec.request_id)
    assert failed.status == "failed" and "--max-cost cannot price openai-compat:unpriced" in (
        failed.reason or ""
    )
    assert server.requests == 0
    # without --prices the dated default table prices (as for run and judge): no refusal for
    # want of a file, and the unpriced request stays failed, nothing sent
    alone = invoke_cli("worker", "--drain", "--max-cost", "5", "--store", str(db))
    assert alone.returncode == 0 and "needs a price table" not in alone.stderr, alone.stderr
    assert server.requests == 0


def test_the_worker_s_own_bad_options_are_refused_before_anything_is_claimed(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """Issue #30: ``--base-url http://user:pw@...`` was refused only after a claim, using up
    one of the request's attempts (and three workers, all of them)."""
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, "openai-compat:acme/model-8b", dataset="demo")
    bad = ("http://user:SENTINELpw@127.0.0.1:9/v1", "http://127.0.0.1:9/v1?key=SENTINEL")
    for url in bad:
        res = invoke_cli("worker", "--drain", "--base-url", url, "--store", str(db))
        assert res.returncode == 2 and "--base-url" in res.stderr, res.stderr
        assert "SENTINEL" not in res.stdout + res.stderr and "Traceback" not in res.stderr
    with Store.open(db) as store:
        again = get_request(store, rec.request_id)
    assert (again.status, again.attempts) == ("pending", 0)


@pytest.mark.parametrize(
    ("field", "value", "line"),
    [
        ("lease_s", 0.0, "invalid --lease 0.0: input should be greater than 0"),
        ("poll_s", float("nan"), "invalid --poll nan: input should be a finite number"),
        ("give_up_s", -1.0, "invalid --give-up-after -1.0: input should be greater than or "
         "equal to 0"),
        ("limit", 0, "invalid --limit 0: input should be greater than or equal to 1"),
        ("spending", {"max_cost": -1.0}, "invalid --max-cost -1.0: input should be greater "
         "than or equal to 0"),
    ],
)  # fmt: skip
def test_worker_settings_are_checked_once_where_they_are_made(
    tmp_path: Path, field: str, value: object, line: str
) -> None:
    """What a worker does is one object (``WorkerSettings``) that the command builds and a
    notebook passes: a bad value is refused where it is made, before any store or queue is
    opened, in the one line that names the command's option."""
    from pydantic import ValidationError

    from intima.cli.main import _invalid

    with pytest.raises(ValidationError) as caught:
        work(tmp_path / "w.db", WorkerSettings.model_validate({field: value}))
    assert _invalid(caught.value) == line
    assert not (tmp_path / "w.db").exists()


def test_a_server_the_worker_supplies_going_away_releases_requests_with_backoff(
    tmp_path: Path,
) -> None:
    """Issue 33: the worker's own --base-url server stopped answering after it started, and
    every claimed request was marked failed. Now each goes back to the queue with its attempts,
    the worker waits longer after each (``sleep`` injected, nothing waits for real), and a
    draining worker stops after three in a row, saying why."""
    import socket

    from intima.service.queue import LocalQueue

    listener = socket.create_server(("127.0.0.1", 0))  # answers the worker's first connection
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"

    class GoneAfterStart(LocalQueue):
        def claim_next(self, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            listener.close()  # the server goes away once the worker has started
            return super().claim_next(*args, **kwargs)  # type: ignore[arg-type]

    db = tmp_path / "w.db"
    with Store.open(db) as store:
        reqs = [add_request(store, "openai-compat:fake", dataset="demo", system_prompt=f"p{i}")
                for i in range(4)]  # fmt: skip
    sleeps: list[float] = []
    said: list[str] = []
    summary = work(
        db,
        WorkerSettings(drain=True, base_urls=(url,), poll_s=2.0),
        queue=GoneAfterStart(db),
        sleep=sleeps.append,
        on_message=said.append,
    )
    assert (summary.claimed, summary.failed, summary.released) == (3, 0, 3)
    assert summary.stopped and "3 requests in a row" in summary.stopped
    assert sleeps == [2.0, 4.0]  # between the releases, longer each time
    with Store.open(db) as store:
        after = [get_request(store, r.request_id) for r in reqs]
        events = request_events(store, reqs[0].request_id)
    assert [(r.status, r.attempts) for r in after] == [("pending", 0)] * 4
    assert events[-1]["detail"].startswith(f"released: the worker's failure: cannot reach {url}")
    assert sum("released to the queue" in line for line in said) == 3
    assert _scalar(db, "SELECT COUNT(*) FROM responses") == 0


def test_a_stage_failing_because_the_worker_s_server_went_away_releases_the_request(
    tmp_path: Path,
) -> None:
    """The worker's --base-url server answered when the request started and died during it:
    the prompts that failed say nothing about the request, so it goes back to the queue."""
    import socket

    from intima.service.worker import StageFailed

    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"

    def dies_midway(ctx: StageContext) -> None:
        listener.close()
        raise StageFailed("generation failed: 62 of 62 prompts failed after retries")

    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, "openai-compat:fake", dataset="demo")
    summary = work(db, WorkerSettings(once=True, base_urls=(url,)), stages=[dies_midway])
    assert (summary.failed, summary.released) == (0, 1)
    [reason] = summary.released_reasons
    assert reason.startswith(f"cannot reach {url}") and "(then: generation failed: 62" in reason
    with Store.open(db) as store:
        back = get_request(store, rec.request_id)
    assert (back.status, back.attempts) == ("pending", 0)


def test_an_unreachable_queue_is_asked_less_often_and_reported_once_per_change(
    tmp_path: Path,
) -> None:
    """Issue 33: a worker on an unreachable Hub printed the same line every 2 s for ever."""
    from intima.service.queue import QueueUnavailable, RequestRecord

    errors = ["could not read the request queue (ConnectError)"] * 6 + ["HTTP 503"] * 2

    class Down:
        public = True

        def claim_next(self, *a: object, **k: object) -> RequestRecord | None:
            if errors:
                raise QueueUnavailable(errors.pop(0))
            return None

        def idle(self) -> bool:
            return True

    sleeps: list[float] = []
    said: list[str] = []
    summary = work(
        tmp_path / "w.db",
        WorkerSettings(drain=True, poll_s=2.0, give_up_s=3600.0),
        queue=Down(),
        clock=lambda: 0.0,
        sleep=sleeps.append,
        on_message=said.append,
    )
    assert summary.claimed == 0
    assert sleeps == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]  # doubling, at most 60 s
    assert len(said) == 3, said  # the outage, its change, its end: not one line per try
    assert said[0].startswith("could not read the request queue (ConnectError); trying again")
    assert said[1].startswith("HTTP 503; trying again in 60 s")
    assert said[2] == "the queue answers again"


def test_worker_results_folder_takes_a_bundle_per_request(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """Issue #30: ``--results FOLDER`` failed the second request after all its work (the
    folder was "not empty"). Each request's bundle goes in FOLDER/bundles/, as on the Hub, and
    the folder imports whole."""
    server = fake_server()
    db, results = tmp_path / "w.db", tmp_path / "results"
    with Store.open(db) as store:
        reqs = [add_request(store, _spec(server), dataset="demo", system_prompt=f"persona {i}")
                for i in range(2)]  # fmt: skip
    res = invoke_cli("worker", "--drain", "--poll", "0.1", "--results", str(results),
                     "--store", str(db))  # fmt: skip
    assert res.returncode == 0, res.stderr
    with Store.open(db) as store:
        assert [get_request(store, r.request_id).status for r in reqs] == ["finished"] * 2
    bundles = sorted(p.name for p in (results / "bundles").iterdir())
    assert len(bundles) == 2 and sorted(p.name for p in results.iterdir()) == ["bundles"]
    copy = tmp_path / "copy.db"
    imported = invoke_cli("import", str(results), "--store", str(copy))
    assert imported.returncode == 0, imported.stderr
    assert _scalar(copy, "SELECT COUNT(*) FROM responses") == 2 * 62


def test_a_limited_run_is_a_smoke_test_never_finished_nor_published(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """Issue 33: ``worker --limit 3`` marked the real request finished (and published it) with
    3 of 62 prompts done. A limited run gives the request back for a full run, with a note in
    its history, publishes nothing, and is not taken again by the same worker; a full run then
    asks only for the prompts the smoke test left."""
    server = fake_server()
    db, results = tmp_path / "w.db", tmp_path / "results"
    with Store.open(db) as store:
        reqs = [add_request(store, _spec(server), dataset="demo", system_prompt=f"persona {i}")
                for i in range(2)]  # fmt: skip
    smoke = invoke_cli("worker", "--drain", "--limit", "3", "--poll", "0.1", "--results",
                       str(results), "--store", str(db))  # fmt: skip
    assert smoke.returncode == 0, smoke.stderr
    assert "2 claimed, 0 finished, 0 failed" in smoke.stdout
    assert "2 smoke-tested (--limit) and released for a full run" in smoke.stdout
    with Store.open(db) as store:
        after = [get_request(store, r.request_id) for r in reqs]
        notes = [request_events(store, r.request_id)[-1] for r in reqs]
    assert [(r.status, r.attempts, r.finished_at) for r in after] == [("pending", 0, None)] * 2
    for note in notes:
        assert note["status"] == "pending"
        assert note["detail"] == (
            "smoke test (--limit): 3 of 62 prompts run, answers kept; released for a full run"
        )
    assert not (results / "bundles").exists() or not any((results / "bundles").iterdir())
    assert server.completed == 6
    full = invoke_cli("worker", "--drain", "--poll", "0.1", "--results", str(results),
                      "--store", str(db))  # fmt: skip
    assert full.returncode == 0, full.stderr
    with Store.open(db) as store:
        assert [get_request(store, r.request_id).status for r in reqs] == ["finished"] * 2
    assert server.completed == 2 * 62  # the smoke test's answers were kept and reused
    assert len(list((results / "bundles").iterdir())) == 2
