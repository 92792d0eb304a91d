"""The Hub-backed request queue, through huggingface_hub's real client, against the fake Hub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_hub import FakeHub, point_hf_at, running_hub
from intima.service.hub_queue import FOLDER, HubQueue, HubQueueDenied, HubQueueError
from intima.service.queue import QueueError

REPO = "org/requests"
URL = f"hf://datasets/{REPO}"
TOKEN = "hf_fake_write_token_0123456789"
MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
SPEC = f"openai-compat:{MODEL}"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    for server in running_hub():
        server.write_token = TOKEN
        server.add_repo(REPO)
        server.add_repo(MODEL, {"config.json": b"{}"}, repo_type="model")
        server.add_repo("someone/secret-model", repo_type="model", private=True)
        point_hf_at(server, tmp_path / "hf-cache", tmp_path, monkeypatch, token=TOKEN)
        yield server


def _files(hub: FakeHub) -> dict[str, dict[str, object]]:
    head = hub.repo(REPO).head()
    return {p: json.loads(c) for p, c in head.items() if p.startswith(f"{FOLDER}/")}


def _412s(hub: FakeHub) -> int:
    return sum(1 for r in hub.requests if r.method == "POST" and "/commit/" in r.path) - (
        len(hub.repo(REPO).log) - 1
    )


def test_a_request_is_one_json_file_with_its_history_and_duplicates_are_the_same_file(
    hub: FakeHub,
) -> None:
    q = HubQueue(URL)
    first = q.add(SPEC, "ada", generation=None)
    assert first.is_new and first.status == "pending"
    files = _files(hub)
    assert list(files) == [f"{FOLDER}/{first.request_id}.json"]
    stored = files[f"{FOLDER}/{first.request_id}.json"]
    assert stored["spec"] == SPEC and stored["requester"] == "ada"
    assert [e["status"] for e in stored["history"]] == ["pending"]  # type: ignore[union-attr]
    commits = len(hub.repo(REPO).log)
    again = q.add(SPEC, "bob")
    assert not again.is_new and again.request_id == first.request_id
    assert again.requester == "ada"  # the existing request, unchanged
    assert len(hub.repo(REPO).log) == commits  # a duplicate writes nothing
    other = q.add(SPEC, "ada", system_prompt="Be brief.")
    assert other.is_new and other.request_id != first.request_id


def test_claims_use_the_hubs_optimistic_lock_so_two_workers_never_take_one_request(
    hub: FakeHub,
) -> None:
    q = HubQueue(URL)
    a = q.add(SPEC).request_id
    b = q.add(SPEC, system_prompt="x").request_id
    worker_1, worker_2 = HubQueue(URL), HubQueue(URL)
    # Worker 1 reads the queue; worker 2 claims before worker 1 commits its claim.
    sha, records = worker_1._read()
    got_2 = worker_2.claim_next("w2")
    assert got_2 is not None and got_2.request_id == a
    stale = records[a].model_copy(update={"status": "running", "worker_id": "w1"})
    assert worker_1._commit(sha, stale, "claim") is False  # the Hub answered 412
    assert _412s(hub) == 1
    got_1 = worker_1.claim_next("w1")
    assert got_1 is not None and got_1.request_id == b
    assert worker_1.claim_next("w1") is None
    statuses = {k: (v["status"], v["worker_id"]) for k, v in _files(hub).items()}
    assert statuses == {
        f"{FOLDER}/{a}.json": ("running", "w2"),
        f"{FOLDER}/{b}.json": ("running", "w1"),
    }


def test_an_expired_lease_is_taken_over_and_the_old_holder_can_no_longer_settle(
    hub: FakeHub,
) -> None:
    q = HubQueue(URL)
    rid = q.add(SPEC).request_id
    dead = q.claim_next("dead-worker", lease_s=-1.0)  # its lease has already run out
    assert dead is not None and dead.attempts == 1
    alive = q.claim_next("live-worker", lease_s=60.0)
    assert alive is not None and alive.request_id == rid and alive.attempts == 2
    assert alive.history[-1].detail == "lease of dead-worker expired; resumed"
    assert not q.heartbeat(rid, "dead-worker")
    assert not q.finish(rid, "dead-worker", ["run-x"])
    assert q.heartbeat(rid, "live-worker")
    assert q.finish(rid, "live-worker", ["run-1"], ["bundles/abc"])
    done = q.get(rid)
    assert (done.status, done.run_ids, done.results) == ("finished", ["run-1"], ["bundles/abc"])
    assert [e.status for e in done.history] == ["pending", "running", "running", "finished"]


def test_review_approve_cancel_and_requeue_after_failure(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = HubQueue(URL, require_review=True)
    rid = q.add(SPEC).request_id
    assert q.get(rid).status == "pending_review"
    assert q.claim_next("w") is None  # nothing runs before a maintainer approves
    q.approve(rid, by="maintainer")
    claimed = q.claim_next("w")
    assert claimed is not None and claimed.request_id == rid
    secret = "sk-" + "s3cr3t" * 6
    monkeypatch.setenv("SOME_API_KEY", secret)
    assert q.fail(rid, "w", f"server said: bad key {secret}")
    failed = q.get(rid)
    assert failed.status == "failed" and secret not in (failed.reason or "")
    assert secret.encode() not in b"".join(hub.repo(REPO).head().values())
    again = q.add(SPEC)
    assert again.is_new and again.status == "pending_review" and again.attempts == 0
    q.cancel(rid, by="maintainer")
    assert q.get(rid).status == "cancelled"
    with pytest.raises(
        QueueError, match="cancelled; only a request that is pending_review can be approved"
    ):
        q.approve(rid)


def test_a_cancelled_hub_request_stays_cancelled_when_asked_for_again(hub: FakeHub) -> None:
    """Issue 38: one form post of a model a maintainer had cancelled put it back to pending
    (without --require-review, workers ran it). It stays cancelled; the Space's form says so;
    only a maintainer's `reopen` puts it back (pending: a maintainer decided)."""
    from intima.leaderboard.space import SpaceSettings
    from intima.leaderboard.space_form import HubRequests

    q = HubQueue(URL)
    rid = q.add(SPEC).request_id
    q.cancel(rid, by="maintainer")
    again = q.add(SPEC)
    form = HubRequests(SpaceSettings(results="hf://datasets/org/results", requests=URL), TOKEN)
    page = form(SPEC, "visitor", "session-1")
    assert (again.is_new, again.status) == (False, "cancelled")
    assert q.get(rid).status == "cancelled" and q.claim_next("w") is None
    assert "Not queued: the maintainers cancelled this request" in page
    reviewed = HubQueue(URL, require_review=True)
    back = reviewed.reopen(rid, by="maintainer")
    assert (back.status, back.attempts) == ("pending", 0)
    assert back.history[-1].detail == "reopened by maintainer"
    with pytest.raises(QueueError, match="is pending; only a cancelled request can be reopened"):
        reviewed.reopen(rid)


def test_without_a_write_token_and_with_a_bad_file_the_errors_say_what_to_do(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_hf_at(hub, tmp_path / "hf-cache-2", tmp_path / "anon", monkeypatch, token=None)
    with pytest.raises(HubQueueDenied, match="HF_TOKEN"):
        HubQueue(URL).add(SPEC)
    head = hub.repo(REPO).head()
    hub.repo(REPO).add_commit({**head, f"{FOLDER}/broken.json": b"{not json"}, "vandal")
    reader = HubQueue(URL)
    assert reader.requests() == []  # one bad file does not stop the queue ...
    assert reader.problems == [  # ... and is named, not silently dropped
        "requests/broken.json is not a valid request; it is skipped (fix or delete it)"
    ]
    with pytest.raises(HubQueueDenied, match="does not exist or is private"):
        HubQueue("hf://datasets/org/missing").requests()
    hub.fail_all = 503
    with pytest.raises(HubQueueError, match="could not read the request queue"):
        HubQueue(URL).requests()
    hub.fail_all = None
    writer = HubQueue(URL, token=TOKEN)
    with pytest.raises(QueueError, match="takes Hub models"):
        writer.add("llamacpp:/etc/passwd")
    for missing in ("openai-compat:nobody/no-such-model", "openai-compat:someone/secret-model"):
        with pytest.raises(QueueError, match="not a public model on the Hugging Face Hub"):
            writer.add(missing)
    assert [r.spec for r in writer.requests()] == []  # nothing refused was written


def test_the_cli_requests_lists_approves_and_cancels_on_the_hub(
    hub: FakeHub, tmp_path: Path
) -> None:
    from conftest import run_cli
    from fake_hub import hf_env

    env = hf_env(hub, tmp_path / "cli-cache", tmp_path / "cli-home", TOKEN)
    store = str(tmp_path / "unused.db")
    added = run_cli(
        "request", SPEC, "--requester", "ada", "--queue", URL, "--store", store, env=env
    )
    assert added.returncode == 0, added.stderr
    rid = added.stdout.split()[0]
    assert _files(hub)[f"{FOLDER}/{rid}.json"]["requester"] == "ada"
    listed = run_cli("requests", "--queue", URL, env=env)
    assert listed.returncode == 0 and rid in listed.stdout and "pending" in listed.stdout
    approve = run_cli("requests", "approve", rid, "--queue", URL, env=env)
    assert approve.returncode == 2 and approve.stderr.strip().splitlines()[-1] == (
        f"error: request {rid} is pending; only a request that is pending_review can be approved"
    )
    cancel = run_cli("requests", "cancel", rid, "--queue", URL, "--by", "maintainer", env=env)
    assert cancel.returncode == 0, cancel.stderr
    stored = _files(hub)[f"{FOLDER}/{rid}.json"]
    assert stored["status"] == "cancelled"
    assert stored["history"][-1]["detail"] == "cancelled by maintainer"  # type: ignore[index]
    assert not Path(store).exists()  # the Hub queue never touches a local store
    anon = hf_env(hub, tmp_path / "anon-cache", tmp_path / "anon-home")
    refused = run_cli("requests", "reopen", rid, "--queue", URL, env=anon)  # a write
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "HF_TOKEN" in refused.stderr.strip().splitlines()[-1]
