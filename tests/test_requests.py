"""The request queue: validation, de-duplication, atomic claims, leases, and the CLI."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
from intima.core.config import GenerationSettings
from intima.core.errors import ConfigError
from intima.core.escape import for_terminal
from intima.service.queue import (
    QueueError,
    add_request,
    claim_next,
    fail,
    finish,
    get_request,
    heartbeat,
    list_requests,
    release,
    request_events,
)
from intima.store import Store

SPEC = "openai-compat:qwen3@http://127.0.0.1:9/v1"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "q.db")


def _count(path: Path, sql: str = "SELECT COUNT(*) FROM requests") -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(sql).fetchone()[0])


# -- validation ----------------------------------------------------------------------------------
def test_ten_megabyte_name_is_rejected_with_a_clear_message(store: Store) -> None:
    huge = "openai:" + "x" * 10_000_000
    with pytest.raises(QueueError, match=r"10,000,007 characters; the limit is 500"):
        add_request(store, huge)
    with pytest.raises(QueueError, match=r"requester name is 10,000,000 characters"):
        add_request(store, "openai:gpt-4o-mini", "r" * 10_000_000)
    assert list_requests(store) == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty model spec"),
        ("nosuch:model", "unknown model provider 'nosuch'"),
        ("openai:gpt\n4", "one line"),
        ("openai-compat:m@ftp://host/v1", "http"),
        ("openai-compat:m@http://user:pw@host:8000/v1", "credentials"),
        ("openai-compat:m@https://host/v1?api_key=abc", "query string"),
    ],
)
def test_bad_specs_are_refused_and_nothing_is_queued(store: Store, spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        add_request(store, spec)
    assert list_requests(store) == []


def test_untrusted_callers_cannot_name_a_server_or_a_path(store: Store) -> None:
    with pytest.raises(QueueError, match="name a model, not a server"):
        add_request(store, SPEC, allow_urls=False)
    with pytest.raises(QueueError, match="cannot be requested"):
        add_request(store, "openai:gpt-4o-mini", dataset="/etc/passwd")
    rec = add_request(store, "openai:gpt-4o-mini", "form user", allow_urls=False)
    assert rec.is_new and rec.status == "pending" and rec.requester == "form user"


# -- de-duplication ------------------------------------------------------------------------------
def test_same_model_on_another_server_is_the_same_request(store: Store) -> None:
    first = add_request(store, SPEC, "alice")
    again = add_request(store, "openai-compat:qwen3@http://10.0.0.2:8000/v1", "bob")
    assert first.is_new and not again.is_new
    assert again.request_id == first.request_id and again.requester == "alice"
    other_prompt = add_request(store, SPEC, system_prompt="Be brief.")
    other_settings = add_request(store, SPEC, generation=GenerationSettings(max_tokens=64))
    other_data = add_request(store, SPEC, dataset="demo")
    ids = {first.request_id, other_prompt.request_id, other_settings.request_id,
           other_data.request_id}  # fmt: skip
    assert len(ids) == 4
    assert len(list_requests(store)) == 4


def test_a_failed_request_asked_again_goes_back_into_the_queue(store: Store) -> None:
    rec = add_request(store, SPEC)
    claimed = claim_next(store, "w1", 60)
    assert claimed is not None and claimed.request_id == rec.request_id
    assert fail(store, rec.request_id, "w1", "server down")
    assert get_request(store, rec.request_id).status == "failed"
    again = add_request(store, SPEC)
    assert again.is_new and again.request_id == rec.request_id
    assert again.status == "pending" and again.reason is None and again.attempts == 0
    statuses = [e["status"] for e in request_events(store, rec.request_id)]
    assert statuses == ["pending", "running", "failed", "pending"]


def test_a_cancelled_request_asked_for_again_stays_cancelled_until_a_maintainer_reopens_it(
    tmp_path: Path,
) -> None:
    """Issue 38: after a maintainer cancelled a public request, one form post of the same
    model put it back to pending, and workers ran it. It stays cancelled (the form and the CLI
    say so); `requests reopen` puts it back."""
    from intima.leaderboard.request_tab import request_model
    from reliability_summary import TALLY

    db = tmp_path / "q.db"
    spec = "openai:gpt-4o-mini"
    assert invoke_cli("request", spec, "--store", str(db)).returncode == 0
    [rid] = [r[0] for r in sqlite3.connect(db).execute("SELECT request_id FROM requests")]
    assert invoke_cli("requests", "cancel", rid, "--store", str(db)).returncode == 0
    page = request_model(db, spec, "someone")  # the public form, as a visitor posts it
    again = invoke_cli("request", spec, "--store", str(db))
    with Store.open(db) as store:
        after = get_request(store, rid)
        claimed = claim_next(store, "w1", 60)
    TALLY.bad_inputs_tried += 2
    TALLY.bad_inputs_rejected += (after.status == "cancelled") * 2
    assert after.status == "cancelled" and claimed is None  # no worker runs it
    assert "Not queued" in page and "cancelled by the maintainers" in page
    assert again.returncode == 0, again.stderr
    assert "already requested (cancelled)" in again.stdout
    assert f"`intima requests reopen {rid}` undoes it" in again.stdout
    reopened = invoke_cli("requests", "reopen", rid[:6], "--store", str(db), "--by", "maintainer")
    assert reopened.returncode == 0, reopened.stderr
    assert f"{rid} {spec}: pending" in reopened.stderr
    with Store.open(db) as store:
        back = get_request(store, rid)
        events = request_events(store, rid)
        taken = claim_next(store, "w1", 60)
    assert (back.status, back.attempts) == ("pending", 0)
    assert events[-1]["detail"] == "reopened by maintainer"
    assert taken is not None and taken.request_id == rid
    refused = invoke_cli("requests", "reopen", rid, "--store", str(db))  # running, not cancelled
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "only a cancelled request can be reopened" in refused.stderr


# -- claims and leases ---------------------------------------------------------------------------
def test_claims_are_exclusive_and_in_request_order(store: Store) -> None:
    a = add_request(store, SPEC, system_prompt="a")
    b = add_request(store, SPEC, system_prompt="b")
    first = claim_next(store, "w1", 60)
    second = claim_next(store, "w2", 60)
    assert first is not None and second is not None
    assert (first.request_id, second.request_id) == (a.request_id, b.request_id)
    assert (first.worker_id, second.worker_id) == ("w1", "w2")
    assert claim_next(store, "w3", 60) is None
    assert first.started_at is not None and first.lease_expires is not None


def _claim_all(path: str, name: str, barrier: Any, out: Any) -> None:
    """One claiming process: wait for the others, then claim until the queue is empty."""
    try:
        with Store.open(path) as db:
            barrier.wait(60)
            mine = []
            while (rec := claim_next(db, name, 60)) is not None:
                mine.append(rec.request_id)
        out.put((name, mine, None))
    except Exception as exc:  # reported, not lost: a claimer that errors fails the test
        out.put((name, [], f"{type(exc).__name__}: {exc}"))


def test_concurrent_claimers_never_share_a_request(tmp_path: Path) -> None:
    """Four processes released together by a barrier claim from one store. With BEGIN instead
    of BEGIN IMMEDIATE two of them read the same pending row and one fails to upgrade its
    read to a write ("database is locked"), which this test counts as a failure."""
    import multiprocessing as mp

    path = tmp_path / "q.db"
    with Store.open(path) as db:
        for i in range(60):
            add_request(db, SPEC, system_prompt=f"p{i}")
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_claim_all, args=(str(path), f"w{i}", barrier, out))
             for i in range(4)]  # fmt: skip
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
    assert [r[2] for r in results] == [None] * 4
    all_ids = [rid for _, ids, _ in results for rid in ids]
    assert len(all_ids) == 60 and len(set(all_ids)) == 60


class Clock:
    """A clock the test moves: leases run out when the test says, not after a sleep."""

    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def test_an_expired_lease_is_taken_over_and_the_old_worker_cannot_settle(store: Store) -> None:
    rec, clock = add_request(store, SPEC), Clock()
    assert claim_next(store, "dead", 20, clock=clock) is not None
    clock.t += 19.9
    assert claim_next(store, "alive", 60, clock=clock) is None  # lease still valid
    clock.t += 0.2
    taken = claim_next(store, "alive", 60, clock=clock)
    assert taken is not None and taken.request_id == rec.request_id
    assert taken.worker_id == "alive" and taken.attempts == 2
    assert not heartbeat(store, rec.request_id, "dead", 60, clock=clock)
    assert not finish(store, rec.request_id, "dead", ["run-x"])
    assert heartbeat(store, rec.request_id, "alive", 60, clock=clock)
    assert finish(store, rec.request_id, "alive", ["run-1"])
    done = get_request(store, rec.request_id)
    assert done.status == "finished" and done.run_ids == ["run-1"] and done.finished_at
    details = [e["detail"] for e in request_events(store, rec.request_id)]
    assert "lease of dead expired; resumed" in details


def test_heartbeat_keeps_a_lease_alive(store: Store) -> None:
    rec, clock = add_request(store, SPEC), Clock()
    assert claim_next(store, "w1", 30, clock=clock) is not None
    for _ in range(4):  # 80 s in all, each beat within the 30 s lease
        clock.t += 20
        assert heartbeat(store, rec.request_id, "w1", 30, clock=clock)
    assert claim_next(store, "w2", 60, clock=clock) is None
    clock.t += 31  # no beat: the lease runs out and another worker may take it
    assert claim_next(store, "w2", 60, clock=clock) is not None


def test_a_request_that_keeps_killing_workers_is_failed(store: Store) -> None:
    rec, clock = add_request(store, SPEC), Clock()
    for i in range(2):
        assert claim_next(store, f"w{i}", 10, max_attempts=2, clock=clock) is not None
        clock.t += 11  # the worker died; its lease runs out
    assert claim_next(store, "w9", 60, max_attempts=2, clock=clock) is None
    dead = get_request(store, rec.request_id)
    assert dead.status == "failed" and "abandoned after 2 attempts" in (dead.reason or "")


def test_release_returns_a_request_at_once(store: Store) -> None:
    rec = add_request(store, SPEC)
    assert claim_next(store, "w1", 600) is not None
    assert release(store, rec.request_id, "w1")
    again = claim_next(store, "w2", 600)
    assert again is not None and again.request_id == rec.request_id and again.attempts == 1


def test_failure_reasons_never_hold_secrets(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-SENTINEL-0123456789"
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", secret)
    rec = add_request(store, SPEC)
    claim_next(store, "w1", 60)
    assert fail(store, rec.request_id, "w1", f"401 Unauthorized: bad key {secret}")
    reason = get_request(store, rec.request_id).reason or ""
    assert secret not in reason and "<SOME_PROVIDER_API_KEY>" in reason


def test_a_failure_reason_quoting_undecodable_text_is_stored(store: Store) -> None:
    """A server's error quoting a lone surrogate failed the write of the failure itself (a
    UnicodeEncodeError out of SQLite, a serialization error out of the Hub queue's commit)."""
    rec = add_request(store, SPEC)
    claim_next(store, "w1", 60)
    assert fail(store, rec.request_id, "w1", "server said: bad \ud800 reply")
    assert get_request(store, rec.request_id).reason == "server said: bad ? reply"


# -- CLI -----------------------------------------------------------------------------------------
def test_cli_request_and_requests(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    first = invoke_cli("request", "openai:gpt-4o-mini", "--requester", "alice", "--store", str(db))
    assert first.returncode == 0, first.stderr
    assert "queued" in first.stdout
    dup = invoke_cli("request", "openai:gpt-4o-mini", "--store", str(db))
    assert dup.returncode == 0 and "already requested (pending)" in dup.stdout
    assert _count(db) == 1
    row = sqlite3.connect(db).execute("SELECT spec, requester, status FROM requests").fetchone()
    assert row == ("openai:gpt-4o-mini", "alice", "pending")

    long_name = invoke_cli("request", "openai:" + "x" * 20_000, "--store", str(db))
    assert long_name.returncode == 2
    assert "the limit is 500" in long_name.stderr and "Traceback" not in long_name.stderr
    unknown = invoke_cli("request", "nosuch:model", "--store", str(db))
    assert unknown.returncode == 2 and "unknown model provider" in unknown.stderr
    assert _count(db) == 1

    listing = invoke_cli("requests", "--store", str(db))
    assert listing.returncode == 0 and "openai:gpt-4o-mini" in listing.stdout
    assert "alice" in listing.stdout and "pending" in listing.stdout


def test_a_setting_the_provider_cannot_send_is_no_part_of_the_request(store: Store) -> None:
    """Anthropic takes no seed: seed=0 and seed=7 ask for the same answers, so they are one
    request, and its configuration key is the one a run of it stores."""
    from intima.core.config import ModelConfig
    from intima.providers import effective_config

    first = add_request(store, "anthropic:claude-sonnet-4-5", allow_urls=False)
    again = add_request(store, "anthropic:claude-sonnet-4-5", generation=GenerationSettings(seed=7))
    assert first.is_new and not again.is_new and again.request_id == first.request_id
    assert first.config.generation.seed is None
    sent = effective_config(ModelConfig(spec="anthropic:claude-sonnet-4-5"))
    assert first.config_key == sent.config_key


def test_cli_cancels_a_request_in_the_store_s_own_queue(tmp_path: Path) -> None:
    """`requests cancel` works on the local queue too (it took only a Hub queue): the row and
    its history say cancelled, a second cancel and an unknown id are one line each."""
    db = tmp_path / "cli.db"
    assert invoke_cli("request", "openai:gpt-4o-mini", "--store", str(db)).returncode == 0
    [rid] = [r[0] for r in sqlite3.connect(db).execute("SELECT request_id FROM requests")]
    res = invoke_cli("requests", "cancel", rid, "--store", str(db), "--by", "maintainer")
    assert res.returncode == 0, res.stderr
    assert f"{rid} openai:gpt-4o-mini: cancelled" in res.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM requests").fetchone() == ("cancelled",)
        events = [r[0] for r in conn.execute("SELECT detail FROM request_events")]
    assert any("cancelled by maintainer" in (e or "") for e in events), events
    for again in (rid, "0" * 16):
        refused = invoke_cli("requests", "cancel", again, "--store", str(db))
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert len([ln for ln in refused.stderr.splitlines() if ln.strip()]) == 1, refused.stderr
    assert sqlite3.connect(db).execute("SELECT status FROM requests").fetchone() == ("cancelled",)


def test_cancel_takes_the_start_of_an_id_and_refuses_an_ambiguous_one(tmp_path: Path) -> None:
    """As `intima explain` does, `requests cancel` takes a prefix (it needed all 16 digits); a
    prefix two requests share is refused naming both, and neither is touched."""
    from intima.service.request_rules import resolve_request_id

    db = tmp_path / "p.db"
    for spec in ("openai:gpt-4o-mini", "openai:gpt-4o"):
        assert invoke_cli("request", spec, "--store", str(db)).returncode == 0
    ids = [r[0] for r in sqlite3.connect(db).execute("SELECT request_id FROM requests")]
    res = invoke_cli("requests", "cancel", ids[0][:6], "--store", str(db))
    assert res.returncode == 0, res.stderr
    assert f"{ids[0]} " in res.stderr and ": cancelled" in res.stderr
    statuses = dict(sqlite3.connect(db).execute("SELECT request_id, status FROM requests"))
    assert statuses == {ids[0]: "cancelled", ids[1]: "pending"}
    # two ids sharing a start, as the function sees them
    shared = ["abcd000000000001", "abcd000000000002"]
    with pytest.raises(QueueError, match="abcd is the start of 2 requests"):
        resolve_request_id("abcd", shared)
    assert resolve_request_id("abcd0000000000", [*shared, "ffff000000000000"][1:]) == shared[1]
    assert resolve_request_id("../x", shared) == "../x"  # left for the queue's own refusal


def test_a_model_id_is_never_an_option_and_a_refused_request_creates_no_store(
    tmp_path: Path, fake_server: Any
) -> None:
    """Issue 30: ``intima request 'openai-compat:--chat-template=/etc/passwd'`` was queued and a
    worker put the id in a server's argv, where it is a flag; and a refused request left an
    empty store file behind."""
    from intima.core.config import ModelConfig
    from intima.providers import effective_config
    from intima.service.worker import WorkerSettings, work
    from reliability_summary import TALLY

    db = tmp_path / "q.db"
    hostile = "openai-compat:--chat-template=/etc/passwd"
    for spec in (hostile, "openai-compat: -x", "openai-compat:m@http://user:pw@host:8000/v1"):
        res = invoke_cli("request", spec, "--store", str(db))
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert not db.exists(), spec  # nothing created for a refused request
    assert "starts with '-'; a model id never does" in invoke_cli(
        "request", hostile, "--store", str(db)).stderr  # fmt: skip
    # A row written past `intima request` (an older intima, or by hand) is refused where run.
    with Store.open(db) as store:
        rid = add_request(store, "openai-compat:chat-8b", dataset="demo").request_id
    cfg = effective_config(ModelConfig(spec=hostile))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE requests SET spec=?, config_json=?, config_key=?",
                     (cfg.spec, cfg.model_dump_json(), cfg.config_key))  # fmt: skip
    served = fake_server()
    summary = work(
        db, WorkerSettings(drain=True, base_urls=(served.base_url,), limit=1, poll_s=0.05)
    )
    with Store.open(db) as store:
        rec = get_request(store, rid)
    TALLY.requests_crafted += 1
    TALLY.requests_refused += rec.status == "failed" and "refused: " in (rec.reason or "")
    assert (summary.failed, rec.status, served.completed) == (1, "failed", 0)
    assert (
        rec.reason
        == "refused: model '--chat-template=/etc/passwd' starts with '-'; a model id never does"
    )


def test_undecodable_bytes_and_controls_in_a_requester_never_reach_the_terminal(
    tmp_path: Path,
) -> None:
    """Issue 30: a raw 0xFF byte in ``--requester`` reached the terminal. Undecodable bytes and
    control characters are refused at request time; one written into the store by hand is shown
    escaped by ``intima requests``."""
    import os
    import subprocess
    import sys

    db = tmp_path / "q.db"
    # surrogateescape: as in the C locale, where a lone surrogate is written as its raw byte
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "COLUMNS": "200",
        "PYTHONIOENCODING": "utf-8:surrogateescape",
    }

    def intima(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "intima", *args, "--store", str(db)],
                              capture_output=True, env=env, timeout=120)  # fmt: skip

    assert intima("request", "openai:gpt-4o-mini", "--requester", "alice").returncode == 0
    raw = (b"\xff", b"\xc2\x9b", b"\xe2\x80\xae", b"\x1b")  # 0xFF, CSI, RLO, ESC
    for bad, why in zip(raw, (b"is not valid UTF-8", *[b"requester name must be one line"] * 3),
                        strict=True):  # fmt: skip
        res = intima("request", "openai:gpt-4o", "--requester", b"ann" + bad + b"e")
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1 and why in lines[0], res.stderr
        assert not any(b in res.stdout + res.stderr for b in raw), res.stderr
    # What a request file on the Hub holds as "\udcff" is a lone surrogate once read: shown, it
    # is the replacement character, never the raw byte (nor a UnicodeEncodeError).
    assert for_terminal("ann\udcffe") == "ann\ufffde"
    with sqlite3.connect(db) as conn:  # a store edited by hand holds them anyway
        conn.execute("UPDATE requests SET requester = CAST(? AS TEXT)",
                     (b"ann" + b"".join(raw[1:]) + b"e",))  # fmt: skip
    listed = intima("requests")
    assert listed.returncode == 0 and b"alice" not in listed.stdout, listed.stderr
    assert b"ann" in listed.stdout and not any(b in listed.stdout for b in raw)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM requests").fetchone() == (1,)
