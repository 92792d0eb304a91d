import asyncio

import pytest

from intima.core.errors import ProviderError
from intima.core.spending import Budget
from intima.generate.pool import GroupWriter, run_pool


def test_a_fatal_error_surfaces_as_itself_and_finished_results_are_kept() -> None:
    seen: list[int] = []

    async def work(i: int) -> int:
        await asyncio.sleep(0.001 * i)
        if i == 5:
            raise ProviderError("key refused")
        return i

    with pytest.raises(ProviderError, match="key refused"):
        asyncio.run(run_pool(range(20), work, concurrency=2, on_result=seen.append))
    assert seen and 5 not in seen and all(i < 8 for i in seen)


def test_budget_stops_new_work_but_counts_what_finished() -> None:
    budget = Budget(limit=3.0)
    done: list[int] = []

    async def work(i: int) -> int:
        budget.add(1.0)
        return i

    stats = asyncio.run(
        run_pool(range(10), work, concurrency=1, on_result=done.append, budget=budget)
    )
    assert stats.stopped_by_budget and done == [0, 1, 2]


def test_each_requests_worst_case_is_held_before_it_starts_so_the_cap_holds() -> None:
    """50 workers used to start 50 requests before any cost was known (13x over the cap)."""
    budget = Budget(limit=1.0)
    done: list[int] = []
    in_flight = peak = 0

    async def work(i: int) -> int:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(5):  # every other worker gets its turn to try to start meanwhile
            await asyncio.sleep(0)
        in_flight -= 1
        budget.add(0.1)  # the real cost: a third of the worst case held for it
        return i

    stats = asyncio.run(
        run_pool(range(100), work, concurrency=50, on_result=done.append, budget=budget,
                 worst_cost=lambda i: 0.3)
    )  # fmt: skip
    assert stats.stopped_by_budget and 10 <= len(done) < 100
    # Started only while the spent and held money was under the cap: 0, 0.3, 0.6, 0.9.
    assert peak == 4
    assert 1.0 <= budget.spent <= 1.0 + 0.3 and budget.reserved == 0


def test_group_writer_batches_within_one_loop_turn() -> None:
    batches: list[list[int]] = []

    async def main() -> None:
        writer: GroupWriter[int] = GroupWriter(batches.append)
        for i in range(5):
            writer.add(i)
        await asyncio.sleep(0)
        writer.add(99)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert batches == [[0, 1, 2, 3, 4], [99]]
