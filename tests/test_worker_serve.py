"""``intima worker --serve`` and ``--route hf``: a worker that serves what was requested. The
model server is a stand-in executable (tests/fake_model_server.py) that serves the model it is
told to; the router is a local stand-in for Inference Providers (tests/fake_vendors.py)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from conftest import run_cli
from fake_openai import FakeOpenAI
from fake_vendors import FakeVendor
from intima.providers.hf_router import ROUTER_ENV
from intima.service.queue import add_request, get_request
from intima.store import Store

STAND_IN = Path(__file__).parent / "fake_model_server.py"
MODEL = "Qwen/Qwen3-0.6B"
MODELS = (MODEL, "HuggingFaceTB/SmolLM2-360M-Instruct")
RESULTS = "org/results"
HUB_TOKEN = "hf_fake_write_token_serve_0123"


def _count(db: Path, sql: str) -> int:
    with Store.open(db) as store:
        return int(store.query(sql)[0][0])


def test_worker_serves_each_requested_model_and_fails_one_that_cannot_load(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """Two requests for two models and one for a model that cannot load: each server is
    started for its request and stopped after it, both good requests publish a bundle to the
    results repo on the (fake) Hub, the third fails with the server's reason."""
    from fake_hub import hf_env, running_hub

    judge = fake_server()  # the worker's own judge server: it keeps running throughout
    db, starts = tmp_path / "w.db", tmp_path / "starts.jsonl"
    with Store.open(db) as store:
        good = [add_request(store, f"openai-compat:{m}", dataset="demo") for m in MODELS]
        bad = add_request(store, "openai-compat:org/broken-model", dataset="demo")
    for hub in running_hub():
        hub.write_token = HUB_TOKEN
        hub.add_repo(RESULTS)
        env = hf_env(hub, tmp_path / "hf-cache", tmp_path / "hf-home", HUB_TOKEN)
        result = run_cli(
            "worker", "--drain", "--poll", "0.1", "--serve", "vllm",
            "--serve-command", f"{sys.executable} {STAND_IN}", "--tensor-parallel", "2",
            "--gpu-memory-utilization", "0.85", "--judge", f"openai-compat:fake@{judge.base_url}",
            "--results", f"hf://datasets/{RESULTS}", "--store", str(db),
            "--serve-env", "FAKE_SERVER_LOG",
            env={**env, "FAKE_SERVER_LOG": str(starts)},
        )  # fmt: skip
        bundles = {p.split("/")[1] for p in hub.repo(RESULTS).head() if p.startswith("bundles/")}
    assert result.returncode == 1, result.stderr  # one request failed
    with Store.open(db) as store:
        done = [get_request(store, r.request_id) for r in good]
        failed = get_request(store, bad.request_id)
    assert [d.status for d in done] == ["finished", "finished"], [d.reason for d in done]
    assert failed.status == "failed"
    assert "could not load org/broken-model" in (failed.reason or "")
    assert "unsupported architecture" in (failed.reason or "")
    assert len(bundles) == 2  # one bundle per finished request, none for the failed one
    assert _count(db, "SELECT COUNT(*) FROM responses WHERE status = 'ok'") == 2 * 62
    # The stand-in echoes the prompt, so both models gave the same 62 answers: a judgment
    # is keyed by (prompt, answer), and each distinct answer is judged once.
    assert _count(db, "SELECT COUNT(*) FROM judgments WHERE status = 'scored'") == 62
    assert judge.completed == 62
    launched = [json.loads(line) for line in starts.read_text().splitlines()]
    assert [s["args"][0] for s in launched] == [*MODELS, "org/broken-model"]
    for start in launched:
        assert "HF_TOKEN" not in start["env"] and "PATH" in start["env"]  # the worker's is kept
        args = start["args"]
        assert args[args.index("--tensor-parallel-size") + 1] == "2"
        assert args[args.index("--gpu-memory-utilization") + 1] == "0.85"
        try:
            os.kill(start["pid"], 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"the server for {args[0]} was left running")


def test_worker_routes_hub_requests_to_inference_providers(tmp_path: Path) -> None:
    token = "hf_SENTINELworker41"
    router = FakeVendor("hf", token)
    db = tmp_path / "w.db"
    try:
        with Store.open(db) as store:
            req = add_request(store, f"openai-compat:{MODEL}", dataset="demo")
        result = run_cli("worker", "--drain", "--poll", "0.1", "--route", "hf",
                         "--store", str(db), env={"HF_TOKEN": token, ROUTER_ENV: router.base_url})  # fmt: skip
    finally:
        router.stop()
    assert result.returncode == 0, result.stderr
    with Store.open(db) as store:
        assert get_request(store, req.request_id).status == "finished"
    assert [b["model"] for b in router.chat_bodies] == [MODEL] * 62
    assert token not in result.stdout + result.stderr and b"SENTINEL" not in db.read_bytes()


def test_serve_options_that_contradict_each_other_are_refused(tmp_path: Path) -> None:
    store = str(tmp_path / "w.db")
    both = run_cli("worker", "--drain", "--serve", "vllm", "--route", "hf", "--store", store)
    assert both.returncode != 0 and "--route" in both.stderr and "Traceback" not in both.stderr
    alone = run_cli("worker", "--drain", "--serve-command", "vllm serve", "--store", store)
    assert alone.returncode != 0 and "--serve" in alone.stderr


def test_serve_options_a_server_cannot_take_are_one_line_before_any_claim(tmp_path: Path) -> None:
    """Issue #30: an unclosed quote in --serve-command was a traceback; --tensor-parallel and
    --gpu-memory-utilization were silently ignored by llama-server; a secret could be lent."""
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, f"openai-compat:{MODEL}", dataset="demo")
    cases = [
        (("--serve", "vllm", "--serve-command", 'vllm"serve'), "--serve-command"),
        (("--serve", "vllm", "--serve-command", "''"), "--serve-command names no program"),
        (("--serve", "llamacpp", "--tensor-parallel", "2"), "cannot honour --tensor-parallel"),
        (("--serve", "llamacpp", "--gpu-memory-utilization", "0.5"), "--gpu-memory-utilization"),
        (("--serve", "vllm", "--serve-env", "HF_TOKEN"), "--serve-env HF_TOKEN"),
        (("--serve-env", "HOME"), "--serve-env needs --serve"),
    ]
    for args, expected in cases:
        res = run_cli("worker", "--drain", *args, "--store", str(db))
        assert res.returncode == 2 and expected in res.stderr, (args, res.stderr)
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    with Store.open(db) as store:
        assert get_request(store, rec.request_id).attempts == 0


def test_router_url_with_credentials_is_refused_before_any_claim(tmp_path: Path) -> None:
    """Issue #30: INTIMA_HF_ROUTER_URL=http://user:pw@... was printed and stored."""
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, f"openai-compat:{MODEL}", dataset="demo")
    env = {"HF_TOKEN": "hf_x_0123456789", ROUTER_ENV: "http://user:SENTINELpw@127.0.0.1:9/v1"}
    res = run_cli("worker", "--drain", "--route", "hf", "--store", str(db), env=env)
    assert res.returncode == 2 and ROUTER_ENV in res.stderr, res.stderr
    assert "SENTINEL" not in res.stdout + res.stderr and b"SENTINEL" not in db.read_bytes()
    with Store.open(db) as store:
        assert get_request(store, rec.request_id).attempts == 0


def test_a_worker_that_cannot_work_refuses_to_start_and_claims_nothing(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """Issue 33: ``--serve vllm`` without vLLM ("No such file or directory"), ``--route hf``
    without HF_TOKEN, and an unreachable router or server each failed every claimed request.
    Each is now one line before the first claim, and the backlog is untouched."""
    from conftest import free_port, invoke_cli

    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, f"openai-compat:{MODEL}", dataset="demo")
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    live = fake_server().base_url
    cases: list[tuple[tuple[str, ...], dict[str, str | None], str]] = [
        (("--serve", "vllm"), {"PATH": str(tmp_path)},
         "vLLM is not installed (pip install vllm), or pass --serve-command"),
        (("--serve", "llamacpp"), {"PATH": str(tmp_path)}, "llama-server is not on PATH"),
        (("--serve", "vllm", "--serve-command", "no-such-server-xyz serve"), {},
         "--serve-command: no program 'no-such-server-xyz'"),
        (("--route", "hf"), {"HF_TOKEN": None, ROUTER_ENV: live}, "--route hf needs HF_TOKEN"),
        (("--route", "hf"), {"HF_TOKEN": "hf_x_0123456789", ROUTER_ENV: closed},
         f"cannot reach {closed}"),
        (("--base-url", closed), {}, f"cannot reach {closed}"),
        (("-j", f"openai-compat:judge@{closed}"), {}, f"cannot reach {closed}"),
        (("-j", "openai:gpt-4o-mini"), {"OPENAI_API_KEY": None},
         "missing API key: set the environment variable OPENAI_API_KEY"),
    ]  # fmt: skip
    for args, env, expected in cases:
        res = invoke_cli("worker", "--drain", *args, "--store", str(db), env=env)
        assert res.returncode == 2 and expected in res.stderr, (args, res.stderr)
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    with Store.open(db) as store:
        after = get_request(store, rec.request_id)
    assert (after.status, after.attempts) == ("pending", 0)


def test_a_server_program_that_cannot_start_releases_the_request_instead_of_failing_it(
    tmp_path: Path,
) -> None:
    """The program was there when the worker started and is gone (or not executable) when a
    request comes: the worker's failure, so the request goes back to the queue."""
    from intima.service.model_server import ServeSettings
    from intima.service.worker import WorkerSettings, work

    program = tmp_path / "server"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, f"openai-compat:{MODEL}", dataset="demo")
    settings = ServeSettings(kind="vllm", executable=(str(program),))

    def gone(seconds: float) -> None:
        raise AssertionError("--once does not wait")

    class Vanishing:  # the program is removed between the start and the claim
        def __init__(self) -> None:
            from intima.service.queue import LocalQueue

            self.inner, self.public = LocalQueue(db), False

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def claim_next(self, *a: object, **k: object) -> object:
            program.chmod(0o644)  # no longer executable
            return self.inner.claim_next(*a, **k)  # type: ignore[arg-type]

    summary = work(db, WorkerSettings(once=True, serve=settings), queue=Vanishing(), sleep=gone)  # type: ignore[arg-type]
    assert (summary.claimed, summary.failed, summary.released) == (1, 0, 1)
    with Store.open(db) as store:
        after = get_request(store, rec.request_id)
    assert (after.status, after.attempts) == ("pending", 0)
    assert "cannot start the vllm server" in next(iter(summary.released_reasons))


def test_a_request_with_no_price_fails_before_its_server_is_started(tmp_path: Path) -> None:
    """Issue 41: the worker checks the request's price before it starts a server for it; with
    the check gone, the later checks (at the first generation call) still failed the request,
    so no test saw the server started, loading a model for a request that was never to run.
    Here the server program only leaves a mark that it ran."""
    mark = tmp_path / "started"
    program = tmp_path / "server"
    program.write_text(f"#!/bin/sh\ntouch {mark}\nexit 1\n")
    program.chmod(0o755)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"fake": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}}))
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        rec = add_request(store, "openai-compat:org/unpriced-model", dataset="demo")
    res = run_cli("worker", "--once", "--serve", "vllm", "--serve-command", str(program),
                  "--prices", str(prices), "--max-cost", "5", "--store", str(db))  # fmt: skip
    assert res.returncode == 1, res.stderr
    with Store.open(db) as store:
        after = get_request(store, rec.request_id)
    assert after.status == "failed", (after.status, after.reason)
    assert "--max-cost cannot price openai-compat:org/unpriced-model" in (after.reason or "")
    assert not mark.exists()  # no server was started for it
