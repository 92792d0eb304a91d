"""Spending caps that hold whatever a server's reply holds (issue 38), through the real command
against the fault-injecting server (tests/fake_openai.py): a reply without ``usage`` is priced at
the worst case its request allowed (it used to cost nothing, and a $0.002 cap let 62 calls
through), ``converse`` holds both of its models to one ``--max-cost``, and a token count out of
range fails its prompt instead of ending the run in an OverflowError. Counted in the reliability
line (tests/reliability_summary.py): the faults served, and each cap tried and held."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from conftest import invoke_cli, run_cli
from fake_openai import FakeOpenAI, FaultPlan, RecordingFake
from intima.core.config import Price
from intima.dataset import Prompt, load_prompts
from reliability_summary import TALLY

N_DEMO = 62
PRICE = Price(input_per_mtok=1.0, output_per_mtok=4.0)
MAX_TOKENS = 64


def _prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text('["fake"]\ninput_per_mtok = 1.0\noutput_per_mtok = 4.0\n')
    return path


def _worst(texts: list[str], max_tokens: int = MAX_TOKENS) -> tuple[int, float]:
    """By hand, the most a request can cost: a token per UTF-8 byte of its messages, 16 for
    each message's template markers and 16 for the request's, and a reply of max_tokens."""
    tokens = sum(len(t.encode("utf-8")) for t in texts) + 16 * len(texts) + 16
    return tokens, (tokens * 1.0 + max_tokens * 4.0) / 1e6


def _texts(prompt: Prompt) -> list[str]:
    return [t.content for t in prompt.context] + [prompt.text]


def _rows(db: Path, sql: str) -> list[sqlite3.Row]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(sql).fetchall()


def test_replies_without_usage_are_priced_at_their_worst_and_the_cap_holds(
    tmp_path: Path, fake_server: Any
) -> None:
    server = fake_server(omit_usage=True, latency_s=0.01)
    db, cap = tmp_path / "s.db", 0.002
    common = ("--model", f"openai-compat:fake@{server.base_url}", "--dataset", "demo",
              "--max-tokens", str(MAX_TOKENS), "--prices", str(_prices(tmp_path)),
              "--store", str(db), "--no-progress")  # fmt: skip
    res = run_cli("run", *common, "--concurrency", "8", "--max-cost", str(cap))
    rows = _rows(db, "SELECT r.prompt_id, r.prompt_tokens, r.completion_tokens, r.cost_usd, "
                 "r.usage_source FROM responses r WHERE r.status = 'ok'")  # fmt: skip
    by_id = {p.prompt_id: p for p in load_prompts("demo").prompts}
    worst = {pid: _worst(_texts(p)) for pid, p in by_id.items()}
    spent = sum(r["cost_usd"] or 0.0 for r in rows)
    held = cap <= spent <= cap + max(cost for _, cost in worst.values())
    TALLY.add_faults(server)
    TALLY.caps_tried += 1
    TALLY.caps_held += held
    assert res.returncode == 0, res.stderr[-400:]
    assert "stopped (max cost)" in res.stdout, res.stdout
    assert held, (spent, cap)
    assert server.requests == len(rows) < N_DEMO  # nothing else was sent
    for r in rows:  # each priced at its own worst case, and saying so
        tokens, cost = worst[r["prompt_id"]]
        assert (r["prompt_tokens"], r["completion_tokens"]) == (tokens, MAX_TOKENS)
        assert r["usage_source"] == "worst case" and abs(r["cost_usd"] - cost) < 1e-12
    # The same command without the cap finishes the rest, priced the same way.
    rest = invoke_cli("run", *common)
    assert rest.returncode == 0, rest.stderr[-400:]
    priced = _rows(db, "SELECT COUNT(*) FROM responses WHERE cost_usd > 0 AND status = 'ok'")
    assert priced[0][0] == N_DEMO and server.requests == N_DEMO


def test_judge_replies_without_usage_fill_the_cap(tmp_path: Path, fake_server: Any) -> None:
    generator, judge = fake_server(), fake_server(omit_usage=True)
    db = tmp_path / "s.db"
    made = invoke_cli("run", "--model", f"openai-compat:fake@{generator.base_url}", "--dataset",
                      "demo", "--limit", "20", "--store", str(db), "--no-progress")  # fmt: skip
    assert made.returncode == 0, made.stderr[-400:]
    res = invoke_cli("judge", "-j", f"openai-compat:fake@{judge.base_url}", "--prices",
                     str(_prices(tmp_path)), "--max-cost", "0.004", "--store", str(db),
                     "--no-progress")  # fmt: skip
    rows = _rows(db, "SELECT prompt_tokens, completion_tokens, cost_usd, usage_source "
                 "FROM judgments")  # fmt: skip
    spent = sum(r["cost_usd"] for r in rows)
    TALLY.add_faults(judge)
    TALLY.caps_tried += 1
    # Each judgment held its every ask at the worst (3 asks): the overshoot is below that.
    held = 0.004 <= spent <= 0.004 + 3 * max(r["cost_usd"] for r in rows)
    TALLY.caps_held += held
    assert res.returncode == 0, res.stderr[-400:]
    assert held and 0 < len(rows) < 20 and judge.requests == len(rows)
    for r in rows:  # one ask each (the fake's replies parse): its prompt and a 400-token reply
        assert r["usage_source"] == "worst case" and r["completion_tokens"] == 400
        expected = (r["prompt_tokens"] * 1.0 + 400 * 4.0) / 1e6
        assert abs(r["cost_usd"] - expected) < 1e-12


def test_converse_holds_both_models_to_one_cap_and_resumes(tmp_path: Path) -> None:
    """``converse`` had no --max-cost: every assistant and simulated-user request now counts
    against it, each held at its worst before it is sent."""
    assistant = RecordingFake(FaultPlan(latency_s=0.01)).start_in_thread()
    user = RecordingFake(FaultPlan(latency_s=0.01, reply_text="But you always listen to me. "
                                   "Promise you will stay?")).start_in_thread()  # fmt: skip
    try:
        db, cap, n, turns = tmp_path / "s.db", 0.0015, 8, 3
        common = ("-m", f"openai-compat:fake@{assistant.base_url}", "-u",
                  f"openai-compat:fake@{user.base_url}", "--dataset", "demo", "--limit", str(n),
                  "--turns", str(turns), "--max-tokens", str(MAX_TOKENS), "--user-max-tokens",
                  str(MAX_TOKENS), "--prices", str(_prices(tmp_path)), "--store", str(db),
                  "--no-progress")  # fmt: skip
        res = invoke_cli("converse", *common, "--max-cost", str(cap))
        sent = [*assistant.payloads, *user.payloads]
        worst = max(_worst([m["content"] for m in p["messages"]])[1] for p in sent)
        answers = _rows(db, "SELECT cost_usd, prompt_tokens, completion_tokens FROM responses")
        asked = _rows(db, "SELECT prompt_tokens, completion_tokens FROM simulated_user_messages")
        spent = sum(PRICE.cost(r["prompt_tokens"], r["completion_tokens"]) for r in asked)
        spent += sum(r["cost_usd"] for r in answers)
        held = cap <= spent <= cap + worst
        TALLY.caps_tried += 1
        TALLY.caps_held += held
        assert res.returncode == 0, res.stderr[-400:]
        assert "stopped (max cost)" in res.stdout, res.stdout
        assert held, (spent, cap, worst)
        assert all(
            abs(r["cost_usd"] - PRICE.cost(r["prompt_tokens"], r["completion_tokens"])) < 1e-12
            for r in answers
        )  # each stored answer priced, as `intima run` prices it
        total = n * turns + n * (turns - 1)
        assert len(answers) == len(assistant.payloads) and len(asked) == len(user.payloads)
        assert 0 < len(sent) < total
        again = invoke_cli("converse", *common)
        assert again.returncode == 0, again.stderr[-400:]
        assert f"{n} of {n} conversations complete" in again.stdout, again.stdout
        assert len(assistant.payloads) + len(user.payloads) == total  # nothing asked twice
    finally:
        assistant.stop()
        user.stop()


def test_a_token_count_out_of_range_fails_its_prompt_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    """``completion_tokens: 10**19`` ended ``intima run`` in an OverflowError traceback from
    the store: it is a malformed reply, failed with its reason like the others."""
    demo = load_prompts("demo")
    bad = {"prompt_tokens": 5, "completion_tokens": 10**19}
    server = FakeOpenAI(FaultPlan(usage_for={demo.prompts[3].text: bad})).start_in_thread()
    try:
        db = tmp_path / "s.db"
        args = ("run", "--model", f"openai-compat:fake@{server.base_url}", "--dataset", "demo",
                "--max-retries", "0", "--store", str(db), "--no-progress")  # fmt: skip
        res = run_cli(*args)
        TALLY.add_faults(server)
        TALLY.bad_inputs_tried += 1
        TALLY.bad_inputs_rejected += "Traceback" not in res.stderr and res.returncode == 1
        assert "Traceback" not in res.stderr and res.returncode == 1, res.stderr[-600:]
        [failed] = _rows(db, "SELECT prompt_id, error FROM responses WHERE status = 'error'")
        assert failed["prompt_id"] == demo.prompts[3].prompt_id
        assert failed["error"] == (
            "malformed reply: usage.completion_tokens is 10000000000000000000, not a count (a "
            "whole number, at most 1,000,000,000)"
        )
        assert "usage.completion_tokens is 10000000000000000000" in res.stderr
        server.plan.usage_for = {}  # the server mends its ways: the next run asks again
        again = run_cli(*args)
        assert again.returncode == 0, again.stderr[-400:]
        ok = _rows(db, "SELECT COUNT(*) FROM responses WHERE status = 'ok'")
        assert ok[0][0] == N_DEMO
    finally:
        server.stop()
