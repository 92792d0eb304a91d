"""One lease state machine (``service.lease``), two queues: the same scenario, step by step,
against the local queue (a real SQLite file) and the Hub queue (the fake Hub through
huggingface_hub's real client) gives the same outcome at every step and the same history."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from intima.service import lease
from intima.service.hub_queue import HubQueue
from intima.service.queue import LocalQueue, QueueError, RequestRecord, add_request, get_request
from intima.store import Store
from test_hub_queue import SPEC, URL, hub  # noqa: F401  (the fake Hub fixture)

T0 = 1_000_000.0


class Clock:
    """A clock the test moves: leases run out when the scenario says, not after a sleep."""

    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


class Local:
    def __init__(self, path: Path, clock: Clock) -> None:
        self.path, self.queue = path, LocalQueue(path, clock=clock)

    def add(self) -> RequestRecord:
        with Store.open(self.path) as store:
            return add_request(store, SPEC)

    def get(self, rid: str) -> RequestRecord:
        with Store.open(self.path) as store:
            return get_request(store, rid)

    def history(self, rid: str) -> list[tuple[Any, ...]]:
        with Store.open(self.path) as store:
            rows = store.query(
                "SELECT status, worker_id, detail FROM request_events WHERE request_id = ? "
                "ORDER BY rowid",
                (rid,),
            )
        return [tuple(r) for r in rows]


class Hub:
    def __init__(self, clock: Clock) -> None:
        self.queue = HubQueue(URL, clock=clock)

    def add(self) -> RequestRecord:
        return self.queue.add(SPEC)

    def get(self, rid: str) -> RequestRecord:
        return self.queue.get(rid)

    def history(self, rid: str) -> list[tuple[Any, ...]]:
        return [(e.status, e.worker_id, e.detail) for e in self.queue.get(rid).history]


Backend = Local | Hub
Step = Callable[[Backend, Clock, str], object]


def _claim(worker: str, lease_s: float, max_attempts: int = 3) -> Step:
    def step(b: Backend, clock: Clock, rid: str) -> object:
        got = b.queue.claim_next(worker, lease_s, max_attempts=max_attempts)
        return None if got is None else (got.status, got.worker_id, got.attempts)

    return step


def _at(seconds: float) -> Step:
    def step(b: Backend, clock: Clock, rid: str) -> object:
        clock.t = T0 + seconds
        return None

    return step


def _state(b: Backend, clock: Clock, rid: str) -> object:
    r = b.get(rid)
    expires = None if r.lease_expires is None else r.lease_expires - T0
    return (r.status, r.worker_id, r.attempts, expires, r.reason)


def _add(b: Backend, clock: Clock, rid: str) -> object:
    r = b.add()
    return (r.is_new, r.status, r.attempts)


def _cancel(b: Backend, clock: Clock, rid: str) -> object:
    try:
        return b.queue.cancel(rid, by="maintainer").status
    except QueueError as exc:
        return str(exc).replace(rid, "RID")


def _reopen(b: Backend, clock: Clock, rid: str) -> object:
    try:
        return b.queue.reopen(rid, by="maintainer").status
    except QueueError as exc:
        return str(exc).replace(rid, "RID")


ABANDONED = "abandoned after 2 attempts whose workers stopped"
REFUSED = (
    "request RID is {}; only a request that is pending_review or pending or running can be "
    "cancelled"
)
#: (what is done, what it must give); the clock starts at 0 and only ``_at`` moves it.
SCENARIO: list[tuple[str, Step, object]] = [
    ("w1 claims for 20 s", _claim("w1", 20), ("running", "w1", 1)),
    ("w2 finds nothing: the lease is live", _claim("w2", 60), None),
    ("w2 cannot renew w1's lease", lambda b, c, r: b.queue.heartbeat(r, "w2", 20), False),
    ("10 s later", _at(10), None),
    ("w1 renews for 20 s", lambda b, c, r: b.queue.heartbeat(r, "w1", 20), True),
    ("the lease ends at 30", _state, ("running", "w1", 1, 30.0, None)),
    ("25 s: still live", _at(25), None),
    ("w2 still finds nothing", _claim("w2", 60), None),
    ("31 s: run out", _at(31), None),
    ("w2 takes over", _claim("w2", 60), ("running", "w2", 2)),
    ("w1 can no longer renew", lambda b, c, r: b.queue.heartbeat(r, "w1", 20), False),
    ("... nor finish", lambda b, c, r: b.queue.finish(r, "w1", ["run-x"]), False),
    ("... nor fail", lambda b, c, r: b.queue.fail(r, "w1", "boom"), False),
    ("... nor release", lambda b, c, r: b.queue.release(r, "w1"), False),
    ("w2 releases: not an attempt", lambda b, c, r: b.queue.release(r, "w2", "bye"), True),
    ("back in the queue", _state, ("pending", None, 1, None, None)),
    ("w3 claims for 10 s", _claim("w3", 10, max_attempts=2), ("running", "w3", 2)),
    ("42 s: w3 stopped", _at(42), None),
    ("attempts exhausted: failed, not handed out", _claim("w4", 60, max_attempts=2), None),
    ("failed with why", _state, ("failed", None, 2, None, ABANDONED)),
    ("asked again: back in the queue afresh", _add, (True, "pending", 0)),
    ("cancelled", _cancel, "cancelled"),
    ("a cancelled request is not claimed", _claim("w5", 60), None),
    ("cancelling twice is refused", _cancel, REFUSED.format("cancelled")),
    ("asked again after cancelling: it stays cancelled", _add, (False, "cancelled", 0)),
    ("still not claimed", _claim("w5", 60), None),
    ("a maintainer reopens it", _reopen, "pending"),
    (
        "reopening twice is refused",
        _reopen,
        "request RID is pending; only a cancelled request can be reopened",
    ),
    ("w5 claims", _claim("w5", 60), ("running", "w5", 1)),
    ("w5 finishes", lambda b, c, r: b.queue.finish(r, "w5", ["run-1"]), True),
    ("finished", _state, ("finished", "w5", 1, None, None)),
    ("a finished request is not cancelled", _cancel, REFUSED.format("finished")),
    ("nor queued again", _add, (False, "finished", 1)),
]


def _play(b: Backend, clock: Clock) -> tuple[list[object], list[tuple[Any, ...]]]:
    rid = b.add().request_id
    outcomes = [step(b, clock, rid) for _, step, _ in SCENARIO]
    return outcomes, b.history(rid)


@pytest.mark.usefixtures("hub")
def test_both_queues_make_the_same_moves_from_one_state_machine(tmp_path: Path) -> None:
    local_clock, hub_clock = Clock(), Clock()
    local = _play(Local(tmp_path / "q.db", local_clock), local_clock)
    remote = _play(Hub(hub_clock), hub_clock)
    expected = [want for _, _, want in SCENARIO]
    for name, (outcomes, _) in (("sqlite", local), ("hub", remote)):
        for (what, _, want), got in zip(SCENARIO, outcomes, strict=True):
            assert got == want, f"{name}: {what}"
    assert local[0] == remote[0] == expected
    assert local[1] == remote[1]  # the same history, event by event
    assert local[1][:3] == [
        ("pending", None, "requested"),
        ("running", "w1", "claimed"),
        ("running", "w2", "lease of w1 expired; resumed"),
    ]
    assert ("failed", "w4", ABANDONED) in local[1]
    assert ("cancelled", None, "cancelled by maintainer") in local[1]
    assert ("pending", None, "reopened by maintainer") in local[1]


def test_the_rules_themselves() -> None:
    """The pure functions, without a store: what each refuses."""
    base = RequestRecord.model_validate(
        {"request_id": "0" * 16, "spec": SPEC, "requester": None, "dataset": "hub",
         "config_key": "k", "config": {"spec": SPEC}, "status": "pending",
         "package_version": "0", "created_at": "t", "updated_at": "t"}
    )  # fmt: skip
    held = base.model_copy(update={"status": "running", "worker_id": "w", "lease_expires": 5.0})
    assert lease.claimable(base, 0.0) and not lease.claimable(held, 5.0)
    assert lease.claimable(held, 5.1)  # strictly after the lease ends
    assert lease.renew(held, "other", 0.0, 10) is None
    renewed = lease.renew(held, "w", 100.0, 10)
    assert renewed is not None and renewed.lease_expires == 110.0 and not renewed.event
    assert lease.release(base, "w", "x") is None  # a pending request has no holder
    assert lease.review(held.model_copy(update={"status": "finished"}), "cancelled", "") is None
    assert lease.review(base, "pending", "") is None  # approve only what awaits review
    assert lease.requeue(held, "pending") is None


@pytest.mark.parametrize("expires", [float("nan"), float("inf"), 1e18])
def test_a_lease_no_worker_could_have_written_is_taken_over_in_both_queues(
    tmp_path: Path, expires: float, request: pytest.FixtureRequest
) -> None:
    """Issue 30: a running request whose ``lease_expires`` was NaN, inf or 1e18 (a hand-written
    file) was never reclaimed, and ``worker --drain`` polled for it for ever."""
    import json

    from test_hub_queue import REPO, _files

    held = {"status": "running", "worker_id": "ghost", "lease_expires": expires, "attempts": 1}
    assert lease.claimable(_record(**held), T0)
    assert not lease.lease_valid(expires, T0)
    live = _record(**{**held, "lease_expires": T0 + 2 * lease.MAX_LEASE_S})
    assert lease.lease_valid(live.lease_expires, T0) and not lease.claimable(live, T0)
    # The local queue: the row as SQLite stores it (NaN is stored as NULL, read as no lease).
    local = Local(tmp_path / "q.db", Clock())
    rid = local.add().request_id
    with Store.open(local.path) as store, store.transaction() as conn:
        conn.execute(
            "UPDATE requests SET status='running', worker_id='ghost', lease_expires=?, "
            "attempts=1 WHERE request_id=?",
            (expires, rid),
        )
    taken = local.queue.claim_next("w1", 60)
    assert taken is not None and (taken.worker_id, taken.attempts) == ("w1", 2)
    assert taken.lease_expires == T0 + 60
    # The Hub queue: the file as anyone with a write token can write it (json writes NaN,
    # Infinity and 1e+18, and json.loads reads them back).
    fake = request.getfixturevalue("hub")
    remote = Hub(Clock())
    rid = remote.add().request_id
    path = f"requests/{rid}.json"
    doc = {**_files(fake)[path], **held}
    repo = fake.repo(REPO)
    repo.add_commit({**repo.head(), path: json.dumps(doc).encode()}, "a ghost's lease")
    taken = remote.queue.claim_next("w1", 60)
    assert taken is not None and (taken.worker_id, taken.attempts) == ("w1", 2)
    assert taken.lease_expires == T0 + 60


def _record(**update: Any) -> RequestRecord:
    base = {"request_id": "0" * 16, "spec": SPEC, "requester": None, "dataset": "hub",
            "config_key": "k", "config": {"spec": SPEC}, "status": "pending",
            "package_version": "0", "created_at": "t", "updated_at": "t"}  # fmt: skip
    return RequestRecord.model_validate({**base, **update})
