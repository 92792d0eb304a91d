"""The leaderboard as a service: requests on the (fake) Hub, workers with the bundled model
behind llama-cpp-python's server, results published to a results repo, all through
huggingface_hub's real client and the real ``intima`` command."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chat_proxy import ChatProxy, running
from conftest import run_cli, wait_for
from fake_hub import FakeHub, hf_env, point_hf_at, running_hub
from intima.core.config import GenerationSettings
from intima.service.hub_queue import HubQueue

REQUESTS, RESULTS = "org/requests", "org/results"
TOKEN = "hf_fake_write_token_service_0123"
#: the model server's key, from the worker's environment: it must reach no file on the Hub
SENTINEL = "sk-sentinel-hub-service-9f8e7d6c5b4a"
#: every prompt of a request is run (with --limit it is a smoke test, never finished, issue 33),
#: so the requests ask for ``hub`` and the workers read these first INTIMA rows as its local
#: copy (--dataset): each SmolLM2 answer costs CPU, and the 62 demo prompts took 80 s a run
LIMIT = 8
#: requests on the Hub name a public Hub model; the workers' server serves the bundled SmolLM2
#: under the name smollm2, hence the workers' --allow-unlisted-model
MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    for server in running_hub():
        server.write_token = TOKEN
        server.add_repo(REQUESTS)
        server.add_repo(RESULTS)
        server.add_repo(MODEL, {"config.json": b"{}"}, repo_type="model")
        point_hf_at(server, tmp_path / "hf-cache", tmp_path, monkeypatch, token=TOKEN)
        yield server


class OneAnswer(ChatProxy):
    """Lets one chat request through to the model and holds every later one until released
    (then drops it): worker A is killed with an answer stored and the next in flight, at a
    known point and without timing, however small the request."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.released = threading.Event()
        self._let_through = 1
        self._lock = threading.Lock()

    def admit(self, payload: dict[str, Any]) -> bool:
        with self._lock:
            self._let_through -= 1
            if self._let_through >= 0:
                return True
        self.released.wait(300)
        return False  # its worker was killed meanwhile


@pytest.fixture
def one_answer(llama_server: str) -> Iterator[OneAnswer]:
    proxy = OneAnswer(llama_server)
    with running(proxy):
        yield proxy
        proxy.released.set()


@pytest.fixture
def intima_part(intima_jsonl: Path, tmp_path: Path) -> Path:
    """The first LIMIT rows of the shared INTIMA file, read from ../shared into this test's
    folder (never into the repo): the workers' local copy of the hub dataset."""
    part = tmp_path / "intima-part.jsonl"
    with intima_jsonl.open(encoding="utf-8") as rows:
        part.write_text("".join(next(rows) for _ in range(LIMIT)), encoding="utf-8")
    return part


def _worker(hub: FakeHub, tmp: Path, name: str, llama: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, **hf_env(hub, tmp / f"cache-{name}", tmp / f"home-{name}", TOKEN),
           "INTIMA_API_KEY": SENTINEL}  # fmt: skip
    log = (tmp / f"{name}.log").open("w")
    return subprocess.Popen(
        [sys.executable, "-m", "intima", "worker", "--queue", f"hf://datasets/{REQUESTS}",
         "--results", f"hf://datasets/{RESULTS}", "--base-url", llama,
         "--concurrency", "1", "--lease", "3", "--poll", "0.2", "--allow-unlisted-model",
         "--dataset", str(tmp / "intima-part.jsonl"), "--store",
         str(tmp / "worker.db"), *extra],
        stdout=log, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip


def _answers(db: Path) -> list[tuple[str, str, str]]:
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT config_key, prompt_id, created_at FROM responses WHERE status = 'ok'"
        ).fetchall()
    except sqlite3.OperationalError:  # the worker is still creating the store's tables
        return []
    finally:
        conn.close()


@pytest.mark.slow
def test_two_workers_run_three_hub_requests_once_each_and_resume_a_killed_one(
    hub: FakeHub, tmp_path: Path, llama_server: str, one_answer: OneAnswer, intima_part: Path
) -> None:
    queue = HubQueue(f"hf://datasets/{REQUESTS}")
    gen = GenerationSettings(max_tokens=4, temperature=0.0)  # short: every prompt is run
    ids = [
        queue.add(f"openai-compat:{MODEL}", "ci", dataset="hub", system_prompt=sp,
                  generation=gen).request_id
        for sp in ("Answer briefly.", "Answer warmly.", "Answer plainly.")
    ]  # fmt: skip
    db = tmp_path / "worker.db"
    # Worker A takes the oldest request and is killed once it has stored an answer (its
    # model is behind a proxy that answers once and holds the next request).
    a = _worker(hub, tmp_path, "a", one_answer.base_url, "--once")
    wait_for(lambda: len(_answers(db)) >= 1, 120, "worker A's first answer")
    a.send_signal(signal.SIGKILL)
    a.wait(30)
    kept = set(_answers(db))
    assert 1 <= len(kept) < LIMIT
    killed = queue.get(ids[0])
    assert killed.status == "running" and killed.results == []
    # Two workers drain the queue; one of them takes over A's request once its lease runs out.
    # Their model is behind a recording proxy: what they asked is what the server received.
    with running(ChatProxy(llama_server)) as later:
        b = _worker(hub, tmp_path, "b", later.base_url, "--drain")
        c = _worker(hub, tmp_path, "c", later.base_url, "--drain")
        for proc, name in ((b, "b"), (c, "c")):
            assert proc.wait(300) == 0, (tmp_path / f"{name}.log").read_text()
    done = {r.request_id: r for r in queue.requests()}
    assert {rid: done[rid].status for rid in ids} == dict.fromkeys(ids, "finished")
    for rid in ids:
        events = [e.status for e in done[rid].history]
        assert events.count("finished") == 1 and len(done[rid].results) == 1
    resumed = [e.detail for e in done[ids[0]].history if e.status == "running"]
    assert resumed[0] == "claimed" and resumed[1].startswith("lease of ")
    assert resumed[1].endswith("expired; resumed") and len(resumed) == 2
    # Every answer exactly once, A's answer kept as it was and not asked again.
    answers = _answers(db)
    assert len(answers) == 3 * LIMIT == len({(k, p) for k, p, _ in answers})
    assert kept <= set(answers)
    [answered] = one_answer.chats
    assert answered["messages"] not in [chat["messages"] for chat in later.chats]
    # The results repo holds one bundle per request; importing it gives every answer once.
    bundles = {p.split("/")[1] for p in hub.repo(RESULTS).head() if p.startswith("bundles/")}
    assert {r.split("/")[1] for rid in ids for r in done[rid].results} == bundles
    fresh = tmp_path / "reader.db"
    imported = run_cli("import", f"hf://datasets/{RESULTS}", "--store", str(fresh),
                       env=hf_env(hub, tmp_path / "cache-r", tmp_path / "home-r"))  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert sorted((k, p) for k, p, _ in _answers(fresh)) == sorted((k, p) for k, p, _ in answers)
    # Neither the Hub token nor the model server's key was written to the Hub, at any commit,
    # nor printed by a worker.
    for repo in (REQUESTS, RESULTS):
        for files in hub.repo(repo).snapshots.values():
            for content in files.values():
                assert TOKEN.encode() not in content and SENTINEL.encode() not in content
    for name in ("a", "b", "c"):
        log = (tmp_path / f"{name}.log").read_text()
        assert TOKEN not in log and SENTINEL not in log
    manifest = json.loads(next(c for p, c in hub.repo(RESULTS).head().items()
                               if p.endswith("manifest.json")))  # fmt: skip
    assert manifest["kind"] == "intima-results-bundle"
