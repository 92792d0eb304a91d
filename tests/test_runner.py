"""Generation against a real HTTP server that misbehaves on purpose (tests/fake_openai.py)."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import wait_for
from intima.core.config import ModelConfig, Price, PriceTable
from intima.core.errors import ConfigError, ProviderError
from intima.dataset import PromptSet, load_prompts
from intima.generate import RunSummary, generate
from intima.store import Store


def _cfg(server_url: str | list[str], **kw: object) -> ModelConfig:
    urls = [server_url] if isinstance(server_url, str) else server_url
    return ModelConfig(spec=f"openai-compat:fake@{','.join(urls)}", **kw)  # type: ignore[arg-type]


@pytest.fixture
def demo() -> PromptSet:
    return load_prompts("demo")


def test_run_stores_every_response_with_provenance_and_resumes(tmp_path, fake_server, demo) -> None:
    server = fake_server()
    with Store.open(tmp_path / "s.db") as store:
        [summary] = generate(store, demo, [_cfg(server.base_url)])
        assert (summary.generated, summary.failed, summary.status) == (62, 0, "complete")
        rows = store.run_rows(summary.run_id)
        assert len(rows) == 62 and all(r["status"] == "ok" for r in rows)
        assert rows[0]["response"].startswith("Thank you for telling me")
        assert rows[0]["dataset_id"] == "intima-demo" and rows[0]["dataset_sha256"]
        assert rows[0]["config"]["generation"]["max_tokens"] == 512
        assert rows[0]["package_version"]
        assert sum(r["completion_tokens"] for r in rows) > 0
        # Same command again: nothing to do, no request sent.
        before = server.requests
        [again] = generate(store, demo, [_cfg(server.base_url)])
        assert again.run_id == summary.run_id and again.already_done == 62 and again.generated == 0
        assert server.requests == before
        # A changed setting is a new run with new rows, old rows untouched.
        [other] = generate(store, demo, [_cfg(server.base_url, system_prompt="You are Mia.")])
        assert other.run_id != summary.run_id and other.generated == 62
        assert store.query("SELECT COUNT(*) FROM responses")[0][0] == 124


def test_faults_are_retried_and_unrecoverable_ones_recorded(tmp_path, fake_server, demo) -> None:
    marker = demo.prompts[5].text[:30]
    server = fake_server(
        rates={
            "429_retry_after": 0.1,
            "429_plain": 0.05,
            "500": 0.05,
            "hang": 0.03,
            "503": 0.03,
            "malformed": 0.03,
            "empty_choices": 0.03,
            "drop": 0.03,
        },
        seed=7,
        hang_s=5,
        always_fail_marker=marker,
    )
    cfg = _cfg(
        server.base_url,
        timeout_s=0.5,
        max_retries=12,
        concurrency=16,
        backoff_s=0.01,
        max_backoff_s=0.1,
    )
    with Store.open(tmp_path / "s.db") as store:
        [s] = generate(store, demo, [cfg])
        assert sum(server.faults.values()) > 20
        assert (s.generated, s.failed, s.status) == (61, 1, "incomplete")
        err = store.query("SELECT error, attempts FROM responses WHERE status='error'")
        assert len(err) == 1 and "HTTP 500" in err[0]["error"] and err[0]["attempts"] == 13
        # Fix the server, run again: only the failed prompt is asked for, and it now succeeds.
        server.plan.always_fail_marker = None
        server.plan.rates = {}
        before = server.requests
        [s2] = generate(store, demo, [cfg])
        assert server.requests - before == 1
        assert (s2.generated, s2.status) == (1, "complete")
        assert store.query("SELECT COUNT(*) FROM responses WHERE status='ok'")[0][0] == 62


def test_retry_after_is_honoured(tmp_path, fake_server, demo) -> None:
    server = fake_server(fail_first=1, fail_first_fault="429_retry_after", retry_after_s=0.6)
    few = PromptSet(info=demo.info, prompts=demo.prompts[:3])
    with Store.open(tmp_path / "s.db") as store:
        start = time.perf_counter()
        [s] = generate(store, few, [_cfg(server.base_url)])
        assert s.generated == 3
        assert time.perf_counter() - start >= 0.6
        assert server.faults["429_retry_after"] == 3


def test_several_equally_free_base_urls_take_turns(tmp_path, fake_server, demo) -> None:
    # One request at a time: every server is free at each pick, so they strictly alternate
    # (62 prompts, 31 each). Under concurrency the shares follow the servers' speed, which a
    # loaded machine makes unequal; the next test checks that rule without timing anything.
    a, b = fake_server(), fake_server()
    with Store.open(tmp_path / "s.db") as store:
        [s] = generate(store, demo, [_cfg([a.base_url, b.base_url], concurrency=1)])
        served = Counter(r["served_by"] for r in store.query("SELECT served_by FROM responses"))
    assert s.generated == 62
    assert (a.completed, b.completed) == (31, 31)
    assert served == {a.base_url: 31, b.base_url: 31}


def test_a_busy_base_url_is_passed_over_for_a_free_one(tmp_path, fake_server, demo) -> None:
    # A's first request is held there; B answers at once. Each later pick sees one request in
    # flight at A and none at B, so B serves all the others; A's one is let through last.
    a, b = fake_server(hold=True), fake_server()
    few = PromptSet(info=demo.info, prompts=demo.prompts[:10])

    def run_both() -> list[RunSummary]:
        with Store.open(tmp_path / "s.db") as store:  # a store is used in its own thread
            return generate(store, few, [_cfg([a.base_url, b.base_url], concurrency=2)])

    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(run_both)
        try:
            # ends as soon as the rule is broken too: A sent a second request, or the run ended
            wait_for(lambda: b.completed >= 9 or a.requests >= 2 or run.done(), 120, "B's nine")
            served = (a.requests, b.completed)  # B took all but A's first, A no other
        finally:
            a.open_hold()  # also when the rule failed: the run must end for the test to end
        [s] = run.result(timeout=120)
    assert served == (1, 9)
    assert s.generated == 10
    assert (a.completed, b.completed) == (1, 9)


def test_max_cost_stops_cleanly_and_keeps_work(tmp_path, fake_server, demo) -> None:
    server = fake_server()
    prices = PriceTable(prices={"fake": Price(input_per_mtok=1000.0, output_per_mtok=1000.0)})
    with Store.open(tmp_path / "s.db") as store:
        [s] = generate(
            store,
            demo,
            [_cfg(server.base_url, concurrency=1)],
            prices=prices,
            max_cost=0.2,
        )
        assert s.status == "stopped (max cost)"
        assert 0 < s.generated < 62 and s.cost_usd is not None and s.cost_usd >= 0.2
        stored = store.query("SELECT COUNT(*), SUM(cost_usd) FROM responses")[0]
        assert stored[0] == s.generated and stored[1] == pytest.approx(s.cost_usd)


def test_unreachable_url_and_missing_key_fail_before_any_work(tmp_path, demo, monkeypatch) -> None:
    from conftest import free_port

    with Store.open(tmp_path / "s.db") as store:
        with pytest.raises(ProviderError, match="cannot reach http://127.0.0.1"):
            generate(store, demo, [_cfg(f"http://127.0.0.1:{free_port()}/v1")])
        assert store.query("SELECT COUNT(*) FROM responses")[0][0] == 0
        monkeypatch.delenv("SOME_KEY", raising=False)
        with pytest.raises(ConfigError, match="set the environment variable SOME_KEY"):
            generate(store, demo, [_cfg("http://127.0.0.1:1/v1", api_key_env="SOME_KEY")])
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
            generate(store, demo, [ModelConfig(spec="openai:gpt-4o-mini")])


def test_sigkill_half_way_then_resume_answers_every_prompt_once(
    tmp_path, fake_server, intima_jsonl
) -> None:
    server = fake_server(latency_s=0.05)
    db = tmp_path / "s.db"
    cmd = [sys.executable, "-m", "intima", "run", "--dataset", str(intima_jsonl), "--model",
           f"openai-compat:fake@{server.base_url}", "--concurrency", "4", "--store", str(db),
           "--no-progress"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while server.completed < 120 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert server.completed >= 120, "the run did not get half-way in time"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with Store.open(db) as store:
        done_before = {
            r[0] for r in store.query("SELECT prompt_id FROM responses WHERE status='ok'")
        }
        texts_before = {
            r[0]
            for r in store.query("SELECT p.text FROM responses r JOIN prompts p USING(prompt_id)")
        }
    assert 60 < len(done_before) < 368
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    with Store.open(db) as store:
        rows = store.query(
            "SELECT prompt_id, COUNT(*) c FROM responses WHERE status='ok' GROUP BY prompt_id"
        )
        assert len(rows) == 368 and all(r["c"] == 1 for r in rows)
        assert store.query("SELECT status FROM runs")[0][0] == "complete"
    # Prompts finished before the kill were never asked again. A text the dataset holds twice
    # (exact duplicates are separate prompts) is asked once per copy, so only texts held once
    # are checked by count. (The guard used to count the keys of a Counter, each of which
    # occurs once, so it filtered nothing and passed only while the kill came early.)
    with Store.open(db) as store:
        copies = Counter(r[0] for r in store.query("SELECT text FROM prompts"))
    held_once = [t for t in texts_before if copies[t] == 1]
    assert len(held_once) > 50 and all(server.prompts_seen[t] == 1 for t in held_once)
    duplicated_texts = sum(n - 1 for n in copies.values())
    assert duplicated_texts == 4  # the published rows' exact duplicates
    assert server.requests <= 368 + 4 + duplicated_texts  # 4: requests in flight at the kill


@pytest.mark.parametrize("size", [200_000, 1_000_000])
def test_long_replies_are_read_whole_and_stored_once(tmp_path, fake_server, demo, size) -> None:
    """A reply longer than what one socket read buffers (~128 KB) is stored whole, asked once."""
    text = ("All good. " * (size // 10 + 1))[:size]
    server = fake_server(reply_text=text)
    with Store.open(tmp_path / "s.db") as store:
        [s] = generate(store, demo.first(2), [_cfg(server.base_url, max_retries=0)])
        stored = [r[0] for r in store.query("SELECT text FROM responses WHERE status = 'ok'")]
    assert s.generated == 2 and s.failed == 0
    assert stored == [text, text]
    assert server.requests == 2  # never retried as "malformed JSON"


def test_an_echoed_key_is_redacted_in_any_case_before_the_error_is_cut(
    tmp_path, fake_server, demo, monkeypatch
) -> None:
    key = "sk-" + "A1b2C3d4" * 21  # 171 characters: longer than the 300-character cut's tail
    monkeypatch.setenv("SOME_KEY", key)
    server = fake_server(rates={"500": 1.0}, echo_auth=True)
    with Store.open(tmp_path / "s.db") as store:
        generate(store, demo.first(1), [_cfg(server.base_url, api_key_env="SOME_KEY",
                                              max_retries=0)])  # fmt: skip
        [error] = [r[0] for r in store.query("SELECT error FROM responses")]
    assert "[redacted]" in error
    for fragment in (key, key[:40], key[-40:]):
        assert fragment.lower() not in error.lower()
    # A server that echoes the key upper-cased is redacted too.
    from intima.providers import get_model

    model = get_model(_cfg(server.base_url, api_key_env="SOME_KEY"))
    assert model.redact(f"bad key {key.upper()}!") == "bad key [redacted]!"


def test_judging_holds_its_cap_at_high_concurrency(tmp_path, fake_server, demo) -> None:
    """Judging shares the engine's budget: a judgment's worst case (every re-ask) is held
    before it starts. Here that worst case is above the cap, so one judgment runs at a time
    and the cap is passed by at most one judgment's real cost; 32 used to start at once."""
    from intima.judges import loop

    server = fake_server(latency_s=0.2)
    price = Price(input_per_mtok=1000.0, output_per_mtok=1000.0)
    cap = 2.0
    judge = ModelConfig(spec=f"openai-compat:fake@{server.base_url}", concurrency=32,
                        generation=loop.DEFAULT_JUDGE_SETTINGS, max_retries=0)  # fmt: skip
    with Store.open(tmp_path / "s.db") as store:
        generate(store, demo, [_cfg(server.base_url)])
        asked = server.requests
        [s] = loop.judge(store, [judge], prices=PriceTable(prices={"fake": price}), max_cost=cap)
        costs = [r[0] for r in store.query("SELECT cost_usd FROM judgments")]
        assert s.stopped_by_budget and 0 < s.scored == len(costs) < 62
        assert cap <= sum(costs) <= cap + max(costs)
        assert server.requests - asked == len(costs)  # one ask each: every reply was valid
        from intima.providers import get_model

        job = loop.JudgeJob(store, get_model(judge), price, loop.Budget(), 2)
        assert min(job._worst(t) for t in loop.load_targets(store)) > cap  # as said above


def test_a_plugin_reply_the_completion_model_refuses_fails_only_its_prompt(tmp_path, demo) -> None:
    """A provider (a plugin's, say) that builds a Completion with a negative or non-numeric
    token count fails that prompt with the field named; it used to end the run, reported as if
    it were a bad command-line value."""
    from typing import Any

    from intima.core.config import GenerationSettings
    from intima.providers import register
    from intima.providers.base import Completion, Message, Model

    class Miscounting(Model):
        async def generate(
            self,
            messages: list[Message],
            settings: GenerationSettings,
            *,
            json_schema: dict[str, Any] | None = None,
        ) -> Completion:
            counts: dict[str, Any] = {"prompt_tokens": 5, "completion_tokens": 2}
            if messages[-1].content == demo.prompts[1].text:
                counts["completion_tokens"] = -3
            if messages[-1].content == demo.prompts[2].text:
                counts["prompt_tokens"] = "lots"
            return Completion(text="ok \ud800", **counts)

    register("miscounting", Miscounting)
    four = PromptSet(info=demo.info, prompts=demo.prompts[:4])
    with Store.open(tmp_path / "s.db") as store:
        [run] = generate(store, four, [ModelConfig(spec="miscounting:x", max_retries=0)])
        rows = store.query("SELECT status, text, error FROM responses ORDER BY error")
    assert (run.generated, run.failed) == (2, 2)
    assert [r["error"] for r in rows if r["status"] == "error"] == [
        "malformed reply: completion_tokens is -3, not a count (a whole number, 0 or more)",
        "malformed reply: prompt_tokens is 'lots', not a count (a whole number, 0 or more)",
    ]
    assert {r["text"] for r in rows if r["status"] == "ok"} == {"ok \ufffd"}
