"""The one claim -> pool -> writer -> release loop (``generate.claimed.run_claimed``) that
generation, judging and conversations share, as a unit: claims and stored results are kept in
a ledger that counts every write, so a lost or duplicated result, a claim left behind, or a
release before the last write is seen. The runners' own tests (test_runner, test_judges_run,
test_converse, test_reliability) run it on real stores, servers and killed processes."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence

import pytest

from intima.core.errors import ProviderError, StoreError
from intima.generate.claimed import ClaimedJob, Ending, run_claimed
from intima.store import ClaimState


class Ledger:
    """Claims and stored results of one store, and the order things happened in."""

    def __init__(self, refuse_writes_from: int | None = None) -> None:
        self.claims: dict[int, str] = {}
        self.stored: dict[int, int] = {}
        self.writes: Counter[int] = Counter()
        self.log: list[str] = []
        self.endings: list[Ending] = []
        self.refuse_writes_from = refuse_writes_from
        self.refuse_release = False
        self.worked: list[int] = []
        self.returned: set[int] = set()
        self.claim_calls: list[list[int]] = []

    def claim(self, items: Sequence[int], owner: str) -> list[ClaimState]:
        self.claim_calls.append(list(items))
        states: list[ClaimState] = []
        for i in items:
            if i in self.stored:
                states.append("done")
            elif self.claims.get(i, owner) != owner:
                states.append("busy")
            else:
                self.claims[i] = owner
                states.append("claimed")
        return states

    def release(self, owner: str) -> None:
        if self.refuse_release:
            raise StoreError("release refused: disk full")
        self.claims = {i: o for i, o in self.claims.items() if o != owner}
        self.log.append("release")

    def write(self, batch: list[int]) -> None:
        n = sum(1 for entry in self.log if entry.startswith("write"))
        if self.refuse_writes_from is not None and n >= self.refuse_writes_from:
            raise StoreError("database or disk is full")
        for i in batch:
            self.stored[i] = i
            self.writes[i] += 1
        self.log.append(f"write {len(batch)}")

    def end(self, ending: Ending) -> None:
        self.endings.append(ending)
        self.log.append("end")

    def job(self, fail_on: int | None = None) -> ClaimedJob[int, int]:
        async def work(i: int) -> int:
            self.worked.append(i)
            await asyncio.sleep(0)
            if i == fail_on:
                raise ProviderError("the key was refused")
            await asyncio.sleep(0)
            self.returned.add(i)
            return i

        return ClaimedJob(self.claim, self.release, work, self.write, end=self.end)


def test_an_error_in_a_worker_releases_every_claim_and_loses_nothing() -> None:
    ledger = Ledger()
    with pytest.raises(ProviderError, match="the key was refused"):
        asyncio.run(run_claimed(range(20), ledger.job(fail_on=7), concurrency=3))
    assert ledger.endings == ["failed"] and ledger.claims == {}
    assert ledger.log[-2:] == ["release", "end"]  # released after the last write
    first = set(ledger.stored)
    assert first == ledger.returned and 7 not in first and len(first) < 20
    # The next run takes every unfinished item, and only those.
    ledger.worked.clear()
    assert asyncio.run(run_claimed(range(20), ledger.job(), concurrency=3)) == "done"
    assert set(ledger.stored) == set(range(20)) and ledger.claims == {}
    assert set(ledger.writes.values()) == {1}  # nothing written twice
    assert sorted(ledger.worked) == sorted(set(range(20)) - first)


def test_a_refused_write_stops_the_pool_and_the_rest_stays_claimable() -> None:
    ledger = Ledger(refuse_writes_from=1)
    with pytest.raises(StoreError, match="disk is full"):
        asyncio.run(run_claimed(range(100), ledger.job(), concurrency=2))
    assert ledger.endings == ["failed"] and ledger.claims == {}
    assert len(ledger.worked) < 10  # stopped at once: asking for more only costs money
    assert 0 < len(ledger.stored) < len(ledger.returned)  # the first write landed, no other
    ledger.refuse_writes_from = None
    assert asyncio.run(run_claimed(range(100), ledger.job(), concurrency=2)) == "done"
    assert set(ledger.stored) == set(range(100)) and set(ledger.writes.values()) == {1}


def test_when_the_release_is_refused_too_the_write_error_is_the_one_reported() -> None:
    ledger = Ledger(refuse_writes_from=0)
    ledger.refuse_release = True
    with pytest.raises(StoreError, match="disk is full"):
        asyncio.run(run_claimed(range(10), ledger.job(), concurrency=2))
    assert ledger.stored == {}
    # A run that went well does not hide a refused release.
    fine = Ledger()
    fine.refuse_release = True
    with pytest.raises(StoreError, match="release refused"):
        asyncio.run(run_claimed(range(3), fine.job(), concurrency=2))
    assert set(fine.stored) == {0, 1, 2}


def test_an_interrupted_run_stores_what_finished_and_lets_go() -> None:
    ledger = Ledger()

    async def main() -> None:
        task = asyncio.create_task(run_claimed(range(50), ledger.job(), concurrency=4))
        while len(ledger.returned) < 5:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert ledger.endings == ["interrupted"] and ledger.claims == {}
    assert set(ledger.stored) == ledger.returned and 5 <= len(ledger.stored) < 50


def test_work_that_stores_itself_needs_no_writer_and_busy_items_wait() -> None:
    """As conversations: no grouped writer; an item another owner holds is looked at again
    until that owner stores it."""
    ledger = Ledger()
    ledger.claims[3] = "someone else"

    async def work(i: int) -> None:
        ledger.stored[i] = i
        if i == 5:  # by now item 3 was found busy; its owner stores it meanwhile
            ledger.stored[3] = 3
            ledger.claims.pop(3)

    elsewhere: list[int] = []
    job: ClaimedJob[int, None] = ClaimedJob(
        ledger.claim, ledger.release, work, on_done_elsewhere=lambda: elsewhere.append(1),
        end=ledger.end,
    )  # fmt: skip
    assert asyncio.run(run_claimed(range(6), job, concurrency=2)) == "done"
    assert set(ledger.stored) == set(range(6)) and elsewhere == [1]
    assert ledger.claim_calls[-1] == [3]  # looked at again, alone, after the others
    assert ledger.endings == ["done"] and ledger.claims == {}
