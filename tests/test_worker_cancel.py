"""A worker whose request is cancelled, or whose lease another worker takes, while it runs it
(issue 38): it stops at its next heartbeat, publishes nothing, keeps what it stored and says
which it was, on the store's own queue and on the Hub's.

Nothing here is timed: the fake server holds the worker's first requests until the test has
cancelled (or taken over) the request and the worker has said it noticed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fake_hub import FakeHub, point_hf_at, running_hub
from fake_openai import FakeOpenAI
from intima.service.hub_queue import HubQueue
from intima.service.queue import LocalQueue, RequestQueue, add_request, claim_next, get_request
from intima.service.worker import WorkerSettings, WorkSummary, work
from intima.store import Store
from reliability_summary import TALLY

REPO = "org/requests"
URL = f"hf://datasets/{REPO}"
TOKEN = "hf_fake_write_token_0123456789"
MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
#: every prompt of the demo set, which a worker that did not stop would answer
DEMO_PROMPTS = 62
#: a deadlock guard only: every wait below ends on an event long before it
GUARD_S = 120


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    for server in running_hub():
        server.write_token = TOKEN
        server.add_repo(REPO)
        server.add_repo(MODEL, {"config.json": b"{}"}, repo_type="model")
        point_hf_at(server, tmp_path / "hf-cache", tmp_path, monkeypatch, token=TOKEN)
        yield server


class _Run:
    """``work`` in a thread, its lines collected; ``noticed`` is set once it says it is
    stopping."""

    def __init__(self, db: Path, settings: WorkerSettings, queue: RequestQueue) -> None:
        self.said: list[str] = []
        self.noticed = threading.Event()
        self.summary: list[WorkSummary] = []

        def say(line: str) -> None:
            self.said.append(line)
            if "stopping" in line:
                self.noticed.set()

        def run() -> None:
            self.summary.append(work(db, settings, queue=queue, on_message=say))

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def result(self) -> WorkSummary:
        self.thread.join(GUARD_S)
        assert not self.thread.is_alive(), self.said
        return self.summary[0]


def _stopped_midway(
    server: FakeOpenAI, run: _Run, take_away: Callable[[], None], results: Path
) -> WorkSummary:
    """While the worker's first requests are held: take the request away, wait until the
    worker says it noticed, then let the held requests through."""
    assert server.held.wait(GUARD_S), run.said
    take_away()
    assert run.noticed.wait(GUARD_S), run.said
    server.open_hold()
    summary = run.result()
    published = results.exists() and any(results.rglob("*"))
    TALLY.taken_away += 1
    TALLY.taken_away_published += published
    assert (summary.claimed, summary.finished, summary.failed) == (1, 0, 0)
    assert not published, "a bundle was published"
    assert not any("published" in line and "nothing published" not in line for line in run.said)
    # What was in flight when it stopped was answered and kept; nothing started after.
    assert 1 <= server.requests <= 2 < DEMO_PROMPTS
    return summary


@pytest.mark.parametrize("how", ["cancelled", "lost"])
def test_a_request_taken_away_from_a_local_worker_stops_it_and_nothing_is_published(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI], how: str
) -> None:
    """``requests cancel`` (or another worker taking the lease over) while a worker ran the
    request: it ran all 62 prompts, published its bundle and said "lease lost to another
    worker; its result stands"."""
    server = fake_server(hold=True)
    db, results = tmp_path / "w.db", tmp_path / "results"
    with Store.open(db) as store:
        rec = add_request(store, f"openai-compat:fake@{server.base_url}", dataset="demo")

    def take_away() -> None:
        with Store.open(db) as store:
            if how == "cancelled":
                LocalQueue(db).cancel(rec.request_id, by="maintainer")
            else:  # its lease has run out, as another worker's clock sees it
                later = time.time() + 3600
                assert claim_next(store, "other-worker", clock=lambda: later) is not None

    settings = WorkerSettings(once=True, lease_s=0.3, concurrency=2, results=str(results))
    run = _Run(db, settings, LocalQueue(db))
    summary = _stopped_midway(server, run, take_away, results)
    assert (summary.cancelled, summary.lost) == ((1, 0) if how == "cancelled" else (0, 1))
    said = run.said[-1]
    assert said.startswith(f"{rec.request_id}: ")
    if how == "cancelled":
        assert "cancelled in the queue while running" in said
    else:
        assert "lease lost to another worker" in said
    assert "nothing published" in said and "answers stored so far are kept" in said
    with Store.open(db) as store:
        after = get_request(store, rec.request_id)
        stored = store.query("SELECT COUNT(*) FROM responses WHERE status = 'ok'")[0][0]
        [(status,)] = store.query("SELECT status FROM runs")
    assert after.status == ("cancelled" if how == "cancelled" else "running")
    assert after.finished_at is None
    assert stored == server.requests  # every request in flight was answered and kept
    assert status == "interrupted"  # resumable: the next run asks only for the rest


@pytest.mark.parametrize("how", ["cancelled", "lost"])
def test_a_request_taken_away_from_a_hub_worker_stops_it_and_nothing_is_published(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI], hub: FakeHub, how: str
) -> None:
    """The same on the Hub's queue, which went through the same lines."""
    server = fake_server(hold=True)
    results = tmp_path / "results"
    rid = HubQueue(URL).add(f"openai-compat:{MODEL}", dataset="demo").request_id

    def take_away() -> None:
        if how == "cancelled":
            HubQueue(URL).cancel(rid, by="maintainer")
        else:
            later = time.time() + 3600
            assert HubQueue(URL, clock=lambda: later).claim_next("other-worker") is not None

    settings = WorkerSettings(
        once=True, lease_s=1.5, concurrency=2, results=str(results),
        base_urls=(server.base_url,),
    )  # fmt: skip
    run = _Run(tmp_path / "w.db", settings, HubQueue(URL))
    summary = _stopped_midway(server, run, take_away, results)
    assert (summary.cancelled, summary.lost) == ((1, 0) if how == "cancelled" else (0, 1))
    after = HubQueue(URL).get(rid)
    assert after.status == ("cancelled" if how == "cancelled" else "running")
    assert after.results == [] and after.finished_at is None
    expected = "cancelled in the queue" if how == "cancelled" else "lease lost to another worker"
    assert expected in run.said[-1] and "nothing published" in run.said[-1]
