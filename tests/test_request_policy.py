"""Request files on the Hub are written by whoever holds a write token: a worker checks each one
where it runs it (issue 20). Hostile files are committed straight into the fake Hub's requests
repo, as an attacker with the Space's token would, then a real worker reads them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from fake_hub import FakeHub, hf_env, point_hf_at, running_hub
from fake_openai import FakeOpenAI
from intima.service.hub_queue import FOLDER, HubQueue
from intima.service.queue import QueueError
from intima.service.worker import WorkerSettings, work
from reliability_summary import TALLY

REQUESTS, RESULTS = "org/requests", "org/results"
URL = f"hf://datasets/{REQUESTS}"
#: the worker's Hub write token: the prize of a request that names a server and HF_TOKEN
TOKEN = "hf_sentinel_worker_write_token_77aa"
MODEL = "acme/chat-8b"
#: paths an attacker names; the worker must not open them
_WATCHED: set[str] = set()
_OPENED: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _WATCHED and isinstance(args[0], str | Path):
        if str(args[0]) in _WATCHED:
            _OPENED.append(str(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    for server in running_hub():
        server.write_token = TOKEN
        server.add_repo(REQUESTS)
        server.add_repo(RESULTS)
        server.add_repo(MODEL, {"config.json": b"{}"}, repo_type="model")
        point_hf_at(server, tmp_path / "hf-cache", tmp_path, monkeypatch, token=TOKEN)
        yield server


def _template(rid: str) -> dict[str, Any]:
    """A valid request file, as the form writes it."""
    return HubQueue(URL).get(rid).model_dump(mode="json", exclude={"is_new"})


def _plant(hub: FakeHub, files: dict[str, bytes]) -> None:
    head = hub.repo(REQUESTS).head()
    hub.repo(REQUESTS).add_commit({**head, **files}, "an attacker with the Space's token")


def _hostile(base: dict[str, Any], rid: str, **change: Any) -> tuple[str, bytes]:
    doc = json.loads(json.dumps(base))
    doc["request_id"] = rid
    for key, value in change.items():
        if key.startswith("config."):
            doc["config"][key.removeprefix("config.")] = value
        else:
            doc[key] = value
    return f"{FOLDER}/{rid}.json", json.dumps(doc).encode()


def test_a_request_file_cannot_steer_the_worker_s_servers_keys_files_or_data(
    hub: FakeHub, tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    served, attacker = fake_server(), fake_server()
    key_file = tmp_path / "worker-key.txt"
    key_file.write_text("sk-sentinel-key-file-4242\n")
    rows = tmp_path / "private-rows.jsonl"
    rows.write_text(json.dumps({"prompt": "PRIVATE-ROW-SENTINEL", "code": "love"}) + "\n")
    legit = HubQueue(URL).add(f"openai-compat:{MODEL}", "ada", dataset="demo").request_id
    base = _template(legit)
    at_attacker = f"openai-compat:{MODEL}@{attacker.base_url}"
    cases = {  # request id -> (the change, what the reason must name)
        "a000000000000001": ({"config.base_urls": [attacker.base_url],
                              "config.api_key_env": "HF_TOKEN"}, "api_key_env, base_urls"),
        "a000000000000002": ({"spec": at_attacker, "config.spec": at_attacker},
                             "name a model, not a server"),
        "a000000000000003": ({"config.api_key_file": str(key_file)}, "api_key_file"),
        "a000000000000004": ({"dataset": str(rows)}, "cannot be requested"),
        "a000000000000005": ({"spec": "llamacpp:/etc/passwd",
                              "config.spec": "llamacpp:/etc/passwd"}, "takes Hub models"),
        "a000000000000006": ({"spec": "transformers:/etc", "config.spec": "transformers:/etc"},
                             "takes Hub models"),
        "a000000000000007": ({"config.system_prompt": "x" * 90_000}, "the limit is 20000"),
        "a000000000000008": ({"config.concurrency": 4096, "config.timeout_s": 0.01},
                             "concurrency, timeout_s"),
        "a000000000000009": ({"config.spec": "openai:gpt-4o"}, "does not match"),
        # the key alone: a request filed under another configuration's results
        "a00000000000000a": ({"config_key": "0" * 16}, "does not match"),
    }  # fmt: skip
    _plant(hub, dict(_hostile(base, rid, **change) for rid, (change, _) in cases.items()))
    _WATCHED.update({str(key_file), str(rows)})
    try:
        summary = work(
            tmp_path / "worker.db",
            WorkerSettings(
                drain=True,
                poll_s=0.05,
                base_urls=(served.base_url,),
                results=f"hf://datasets/{RESULTS}",
            ),
            queue=HubQueue(URL),
        )
    finally:
        _WATCHED.clear()
    assert _OPENED == []  # neither the key file nor the private rows were read
    assert attacker.requests == 0 and sum(attacker.auth_seen.values()) == 0
    assert not any(TOKEN in auth for auth in served.auth_seen)
    done = {r.request_id: r for r in HubQueue(URL).requests()}
    # Counted before asserting, so a failing run still reports its true figures.
    TALLY.requests_crafted += len(cases)
    TALLY.requests_refused += sum(
        done[rid].status == "failed" and (done[rid].reason or "").startswith("refused: ")
        for rid in cases
    )
    for rid, (_, named) in cases.items():
        assert done[rid].status == "failed", rid
        assert done[rid].reason is not None and named in done[rid].reason, done[rid].reason
        assert done[rid].reason.startswith("refused: ") and done[rid].results == []
    assert done[legit].status == "finished" and len(done[legit].results) == 1
    assert (summary.finished, summary.failed) == (1, len(cases))
    assert served.completed == 62  # the one legitimate request, on the worker's own server
    for files in hub.repo(RESULTS).snapshots.values():
        for content in files.values():
            assert b"PRIVATE-ROW-SENTINEL" not in content and TOKEN.encode() not in content


def test_hostile_files_are_skipped_with_a_warning_and_the_queue_keeps_working(
    hub: FakeHub, tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    served = fake_server()
    legit = HubQueue(URL).add(f"openai-compat:{MODEL}", dataset="demo").request_id
    deep = b"[" * 40_000 + b"]" * 40_000
    _plant(hub, {
        f"{FOLDER}/deep.json": deep,
        # the same id as the real request, under another name: once claimed and published
        # the same request for ever and left the finished record reading "running"
        f"{FOLDER}/b000000000000001.json": json.dumps(_template(legit)).encode(),
        f"{FOLDER}/evil.json": _hostile(_template(legit), "../../evil")[1],
    })  # fmt: skip
    env = hf_env(hub, tmp_path / "cli-cache", tmp_path / "cli-home", TOKEN)
    listed = run_cli("requests", "--queue", URL, env=env)
    assert listed.returncode == 0, listed.stderr
    warnings = [line for line in listed.stderr.splitlines() if line.startswith("warning:")]
    TALLY.requests_crafted += 3
    TALLY.requests_refused += min(len(warnings), 3)
    assert len(warnings) == 3 and legit in listed.stdout
    assert any("b000000000000001.json holds request " + legit in w for w in warnings)
    assert any("deep.json is not a valid request" in w for w in warnings)
    added = run_cli("request", f"openai-compat:{MODEL}", "--system-prompt", "Be brief.",
                    "--dataset", "demo", "--queue", URL, env=env)  # fmt: skip
    assert added.returncode == 0, added.stderr
    # from the command line there is no form: the refusal names the public queue's rule
    local = run_cli("request", "llamacpp:/models/x.gguf", "--queue", URL, env=env)
    assert local.returncode == 2 and "a public queue takes Hub models" in local.stderr
    assert "form" not in local.stderr
    worker = subprocess.run(
        [sys.executable, "-m", "intima", "worker", "--queue", URL, "--drain",
         "--base-url", served.base_url, "--poll", "0.1", "--results", f"hf://datasets/{RESULTS}",
         "--store", str(tmp_path / "w.db")],
        capture_output=True, text=True, env={**env, "NO_COLOR": "1"}, timeout=180,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr + worker.stdout
    assert "2 claimed, 2 finished, 0 failed" in worker.stdout
    done = HubQueue(URL).get(legit)
    statuses = [e.status for e in done.history]
    assert done.status == "finished" and statuses.count("running") == 1
    assert statuses.count("finished") == 1 and len(done.results) == 1
    for bad in ("../../evil", "nothex0000000000"):
        refused = run_cli("requests", "cancel", bad, "--queue", URL, env=env)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert (
            refused.stderr.strip()
            .splitlines()[-1]
            .endswith("is not a request id (16 hex digits); see `intima requests`")
        )


def test_a_draining_worker_ends_with_the_reason_when_the_queue_stays_out_of_reach(
    tmp_path: Path,
) -> None:
    from conftest import free_port

    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens: the Hub is out of reach
    env = {"HF_ENDPOINT": closed, "HF_HUB_CACHE": str(tmp_path / "c"), "HF_HOME": str(tmp_path),
           "HF_TOKEN": TOKEN, "NO_PROXY": "127.0.0.1", "HF_HUB_DISABLE_XET": "1"}  # fmt: skip
    res = run_cli("worker", "--queue", URL, "--drain", "--poll", "0.05", "--give-up-after", "0.3",
                  "--store", str(tmp_path / "w.db"), env=env, timeout=120)  # fmt: skip
    # It used to retry for ever, then claim to have released a request it never claimed.
    assert res.returncode == 2, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: could not read the request queue " + URL)
    assert "without reaching the queue (--give-up-after 0.3); nothing was claimed" in last
    assert "released" not in res.stderr and "Traceback" not in res.stderr
    assert TOKEN not in res.stderr + res.stdout


def test_a_draining_worker_waits_out_a_short_outage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to --give-up-after the worker keeps trying (an injected clock, no sleeping on time)."""
    from intima.service.queue import QueueUnavailable, RequestRecord

    class Flaky:
        public = True

        def __init__(self) -> None:
            self.reads = 0

        def claim_next(self, *a: object, **k: object) -> RequestRecord | None:
            self.reads += 1
            if self.reads <= 3:
                raise QueueUnavailable("could not read the request queue (ConnectError)")
            return None

        def idle(self) -> bool:
            return True

    now = iter([0.0, 10.0, 29.0])  # within 30 s of the first failure, then recovered
    queue = Flaky()
    monkeypatch.setattr("intima.service.worker.time.sleep", lambda s: None)
    summary = work(
        tmp_path / "w.db",
        WorkerSettings(drain=True, give_up_s=30.0),
        queue=queue,
        clock=lambda: next(now),
    )
    assert queue.reads == 4 and summary.claimed == 0
    stuck = Flaky()
    late = iter([0.0, 10.0, 31.0])
    with pytest.raises(QueueUnavailable, match="stopped after 31 s"):
        work(
            tmp_path / "w.db",
            WorkerSettings(drain=True, give_up_s=30.0),
            queue=stuck,
            clock=lambda: next(late),
        )
    assert stuck.reads == 3


def _consistent(base: dict[str, Any], rid: str, spec: str, **config: Any) -> tuple[str, bytes]:
    """A request file that agrees with itself (spec, configuration, key), as a careful attacker
    writes it, so only the rule under test can refuse it."""
    from intima.core.config import ModelConfig
    from intima.providers import effective_config

    cfg = effective_config(ModelConfig(spec=spec, **config))
    doc = json.loads(json.dumps(base))
    doc.update(request_id=rid, spec=cfg.spec, config_key=cfg.config_key,
               config=cfg.model_dump(mode="json"))  # fmt: skip
    return f"{FOLDER}/{rid}.json", json.dumps(doc).encode()


def test_a_worker_runs_no_private_or_gated_model_and_nothing_over_the_form_s_limits(
    hub: FakeHub, tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """Issue 30: the form's checks (public, not gated; 512 tokens, a short system prompt) ran
    only where a request was written; a hand-written file naming the operator's private model,
    or asking for 131,072-token answers, was run with the worker's token and money."""
    from intima.core.config import GenerationSettings

    served = fake_server()
    hub.add_repo("someone/secret-model", {"config.json": b"{}"}, repo_type="model", private=True)
    hub.add_repo("acme/gated-8b", {"config.json": b"{}"}, repo_type="model", gated="manual")
    legit = HubQueue(URL).add(f"openai-compat:{MODEL}", "ada", dataset="demo").request_id
    base = _template(legit)
    cases = {  # request id -> (spec, configuration fields, what the reason must name)
        "c000000000000001": ("openai-compat:someone/secret-model", {},
                             "someone/secret-model is not a public model on the Hugging Face"),
        "c000000000000002": ("openai-compat:acme/gated-8b", {}, "acme/gated-8b is private or gated"),
        "c000000000000003": (f"openai-compat:{MODEL}",
                             {"generation": GenerationSettings(max_tokens=131_072)},
                             "max_tokens is 131,072; a public request takes at most 512"),
        "c000000000000004": (f"openai-compat:{MODEL}",
                             {"generation": GenerationSettings(max_tokens=None)},
                             "max_tokens is the provider's default"),
        "c000000000000005": (f"openai-compat:{MODEL}", {"system_prompt": "x" * 20_000},
                             "system prompt is 20,000 characters; a public request takes at most"),
    }  # fmt: skip
    _plant(hub, dict(_consistent(base, rid, spec, **cfg) for rid, (spec, cfg, _) in cases.items()))
    summary = work(
        tmp_path / "worker.db",
        WorkerSettings(
            drain=True,
            poll_s=0.05,
            base_urls=(served.base_url,),
            results=f"hf://datasets/{RESULTS}",
        ),
        queue=HubQueue(URL),
    )
    done = {r.request_id: r for r in HubQueue(URL).requests()}
    TALLY.requests_crafted += len(cases)
    TALLY.requests_refused += sum(
        done[rid].status == "failed" and (done[rid].reason or "").startswith("refused: ")
        for rid in cases
    )
    for rid, (_, _, named) in cases.items():
        assert done[rid].status == "failed", rid
        assert (done[rid].reason or "").startswith("refused: "), done[rid].reason
        assert named in (done[rid].reason or ""), done[rid].reason
    assert done[legit].status == "finished" and (summary.finished, summary.failed) == (1, 5)
    assert served.completed == 62  # the legitimate request's prompts, nothing else
    # The form refuses the same, with the same words, before anything is written.
    with pytest.raises(QueueError, match="max_tokens is 131,072"):
        HubQueue(URL).add(f"openai-compat:{MODEL}",
                          generation=GenerationSettings(max_tokens=131_072))  # fmt: skip
    with pytest.raises(QueueError, match="private or gated"):
        HubQueue(URL).add("openai-compat:acme/gated-8b")


def test_a_folder_or_a_lone_surrogate_in_the_requests_repo_stops_no_worker_and_no_form(
    hub: FakeHub, tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """Issue 30: ``"he\\ud800llo"`` in a request file parsed, then could not be written back, so
    every claim (and ``requests cancel``) of it crashed and the file stayed pending for ever; a
    folder ``requests/<id>.json/`` made ``IsADirectoryError`` escape every claim and every form
    post."""
    served = fake_server()
    legit = HubQueue(URL).add(f"openai-compat:{MODEL}", dataset="demo").request_id
    base = _template(legit)
    prompt, name, raw = "d000000000000001", "d000000000000002", "d000000000000003"
    _plant(hub, {
        # json.dumps writes a lone surrogate as the escape \ud800: valid JSON, invalid text
        **dict([_hostile(base, prompt, **{"config.system_prompt": "he\ud800llo"})]),
        **dict([_hostile(base, name, requester="ann\udcffe")]),
        # a raw 0xFF byte in the requester: not UTF-8 at all
        f"{FOLDER}/{raw}.json": _hostile(base, raw, requester="ann#e")[1].replace(b"#", b"\xff"),
    })  # fmt: skip
    invalid = "is not a valid request (it holds text that is not valid Unicode); it is skipped"
    reader = HubQueue(URL)
    ids = [r.request_id for r in reader.requests()]
    TALLY.requests_crafted += 3  # counted before asserting: a failing run reports true figures
    TALLY.requests_refused += sum(rid not in ids for rid in (prompt, name, raw))
    assert ids == [legit]
    assert reader.problems == [
        f"{FOLDER}/{rid}.json {invalid} (fix or delete it)" for rid in (prompt, name, raw)
    ]
    summary = work(
        tmp_path / "w.db",
        WorkerSettings(drain=True, poll_s=0.05, base_urls=(served.base_url,)),
        queue=HubQueue(URL),
    )
    assert (summary.claimed, summary.finished, summary.failed) == (1, 1, 0)
    # Then a folder named like a request file: the form and the workers keep going.
    folder = "ffffffffffffffff"
    _plant(hub, {f"{FOLDER}/{folder}.json/x.json": json.dumps(base).encode()})
    added = HubQueue(URL).add(f"openai-compat:{MODEL}", "bo", dataset="demo", system_prompt="Hi.")
    assert added.is_new  # the form still queues
    summary = work(
        tmp_path / "w.db",
        WorkerSettings(drain=True, poll_s=0.05, base_urls=(served.base_url,)),
        queue=HubQueue(URL),
    )
    assert (summary.claimed, summary.finished, summary.failed) == (1, 1, 0)
    reader.requests()
    TALLY.requests_crafted += 1
    TALLY.requests_refused += len(reader.problems) == 4
    assert reader.problems[-1] == f"{FOLDER}/{folder}.json is not a file; it is skipped (delete it)"
    env = hf_env(hub, tmp_path / "cli-cache", tmp_path / "cli-home", TOKEN)
    listed = run_cli("requests", "--queue", URL, env=env)
    assert listed.returncode == 0, listed.stderr
    assert len([ln for ln in listed.stderr.splitlines() if ln.startswith("warning:")]) == 4
    for action, rid in [("cancel", prompt), ("cancel", name), ("cancel", folder),
                        ("approve", raw)]:  # fmt: skip
        res = run_cli("requests", action, rid, "--queue", URL, env=env)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, res.stderr
        assert lines[0].startswith(f"error: {FOLDER}/{rid}.json is not a"), lines[0]
    head = hub.repo(REQUESTS).head()
    assert f"{FOLDER}/{folder}.json/x.json" in head and f"{FOLDER}/{prompt}.json" in head
