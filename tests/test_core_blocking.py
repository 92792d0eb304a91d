"""``blocking``: the blocking twin of an async API function keeps its one signature and
documentation (what a notebook's ``help()`` and an editor show) and returns its result."""

from __future__ import annotations

import inspect

from intima.core.blocking import blocking


async def ahalve(x: float, *, by: float = 2.0) -> float:
    """Divide ``x`` by ``by``."""
    return x / by


def test_the_blocking_twin_has_the_async_signature_name_and_doc() -> None:
    halve = blocking(ahalve)
    assert halve(9.0) == 4.5 and halve(9.0, by=3.0) == 3.0
    assert halve.__name__ == "halve"
    assert str(inspect.signature(halve)) == "(x: 'float', *, by: 'float' = 2.0) -> 'float'"
    assert halve.__doc__ is not None and "Divide ``x`` by ``by``." in halve.__doc__
    assert ":func:`ahalve`" in halve.__doc__


def test_the_api_pairs_share_one_signature() -> None:
    from intima.generate.batch import agenerate_batch, generate_batch
    from intima.generate.runner import agenerate, generate
    from intima.judges.batch import ajudge_batch, judge_batch
    from intima.judges.loop import ajudge, judge

    pairs = [(generate, agenerate), (judge, ajudge)]
    pairs += [(generate_batch, agenerate_batch), (judge_batch, ajudge_batch)]
    for sync, coro in pairs:
        assert inspect.signature(sync) == inspect.signature(coro), sync.__name__
        assert not inspect.iscoroutinefunction(sync) and inspect.iscoroutinefunction(coro)
        assert sync.__doc__ and coro.__doc__ and coro.__doc__ in sync.__doc__
