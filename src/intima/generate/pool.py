"""The async machinery shared by generation and judging: retries, a bounded pool, and the
budget (:class:`intima.core.spending.Budget`) it holds each request to.

Kept apart from what is being run so that ``intima run`` and ``intima judge`` behave the same
way on 429s, hangs, Ctrl-C and ``--max-cost``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import ValidationError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from intima.core.config import GenerationSettings, Price
from intima.core.errors import IntimaError
from intima.core.spending import Budget
from intima.generate.usage import settled, worst_prompt_tokens, worst_reply_tokens
from intima.providers.base import (
    Completion,
    MalformedReply,
    Message,
    Model,
    RequestError,
    TransientError,
    without_surrogates,
)
from intima.providers.replies import malformed_reason

T = TypeVar("T")
R = TypeVar("R")

MAX_RETRY_AFTER_S = 120.0


def _waiter(backoff_s: float, max_backoff_s: float) -> Callable[[RetryCallState], float]:
    backoff = wait_exponential_jitter(multiplier=backoff_s, max=max_backoff_s, jitter=backoff_s)

    def wait(state: RetryCallState) -> float:
        """Honour the server's Retry-After when it gives one; otherwise back off with jitter."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return min(exc.retry_after, MAX_RETRY_AFTER_S)
        return float(backoff(state))

    return wait


@dataclass
class CallOutcome:
    completion: Completion | None
    error: str | None
    attempts: int
    latency_s: float


async def call_with_retries(
    model: Model,
    messages: list[Message],
    settings: GenerationSettings,
    *,
    json_schema: dict[str, Any] | None = None,
) -> CallOutcome:
    """One request with retries; never raises for a per-request failure, only for fatal ones.

    A reply the :class:`Completion` model refuses (a plugin's negative token count) is that
    request's failure, like a :class:`MalformedReply`, not the run's. A reason is stored and
    printed, so a lone surrogate a server put in its error text is replaced there too. A reply
    comes back with both token counts, counted or at their worst where the vendor gave none
    (:func:`intima.generate.usage.settled`), so that it is never priced at nothing."""
    attempts = 0
    start = time.perf_counter()
    retrying = AsyncRetrying(
        stop=stop_after_attempt(model.config.max_retries + 1),
        wait=_waiter(model.config.backoff_s, model.config.max_backoff_s),
        retry=retry_if_exception_type(TransientError),
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                attempts += 1
                completion = await model.generate(messages, settings, json_schema=json_schema)
    except TransientError as exc:
        error = f"gave up after {attempts} attempts: {exc}"
    except MalformedReply as exc:
        error = str(exc)
    except RequestError as exc:
        error = f"request rejected: {exc}"
    except ValidationError as exc:
        error = malformed_reason(exc)
    else:
        name = model.config.parsed.model
        completion = settled(completion, name, messages, settings, json_schema)
        return CallOutcome(completion, None, attempts, _since(start))
    return CallOutcome(None, without_surrogates(error), attempts, _since(start))


def _since(start: float) -> float:
    return time.perf_counter() - start


def worst_cost(
    price: Price, messages: Sequence[Message], settings: GenerationSettings, extra_bytes: int = 0
) -> float:
    """The most one request can cost: one token per UTF-8 byte of the prompt (a byte-level
    tokenizer never does worse), the template's markers, and a reply of max_tokens.
    ``extra_bytes``: what else the prompt carries, such as a structured-output schema."""
    return price.cost(worst_prompt_tokens(messages, extra_bytes), worst_reply_tokens(settings))


class GroupWriter(Generic[R]):
    """Collects finished results and writes them together once per event-loop turn.

    Under load, many results land in one transaction; when idle, each lands at once. Either
    way a result is committed within one loop turn of finishing.
    """

    def __init__(self, write: Callable[[list[R]], None]) -> None:
        self._write = write
        self._pending: list[R] = []
        self._scheduled = False
        self.written = 0
        #: why the last write failed (a full disk): results are kept for the final flush
        self.failed: Exception | None = None

    def add(self, item: R) -> None:
        self._pending.append(item)
        if self.failed is not None:
            # Stop the pool: asking for more results that cannot be stored only costs money.
            raise self.failed
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_soon)

    def _flush_soon(self) -> None:
        # Run by the event loop, where a raise would only be logged with a traceback: the
        # error is kept in ``failed`` instead, for the next ``add`` and the final flush.
        with contextlib.suppress(Exception):
            self.flush()

    def flush(self) -> None:
        """Write what is pending; if that fails, keep it pending and raise."""
        self._scheduled = False
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            self._write(batch)
        except Exception as exc:
            self._pending[:0] = batch
            self.failed = exc
            raise
        self.failed = None
        self.written += len(batch)


@dataclass
class PoolStats:
    done: int = 0
    failed: int = 0
    stopped_by_budget: bool = False
    #: ``stop`` said so: no item was started after it did
    halted: bool = False
    errors: list[str] = field(default_factory=list)


async def run_pool(
    items: Iterable[T],
    work: Callable[[T], Awaitable[R]],
    *,
    concurrency: int,
    on_result: Callable[[R], None],
    budget: Budget | None = None,
    worst_cost: Callable[[T], float] | None = None,
    stop: Callable[[], bool] | None = None,
) -> PoolStats:
    """Run ``work`` over ``items`` with at most ``concurrency`` in flight.

    Workers pull from a shared iterator, so memory stays flat however many items there are.
    An exception from ``work`` (a fatal provider error) cancels the other workers and
    propagates; results already handed to ``on_result`` are kept. With a ``budget``, each
    item's ``worst_cost`` is held while it is worked on (``work`` adds the real cost).
    ``stop`` is asked before each item starts (it may be set from another thread: a worker's
    request cancelled in its queue); once it says True no item starts, and the items in flight
    finish and are handed on, since they are paid for.
    """
    stats = PoolStats()
    queue = iter(items)

    def stopping() -> bool:
        if stop is not None and stop():
            stats.halted = True
        return stats.halted

    async def worker() -> None:
        for item in queue:
            if stopping():
                return
            held = 0.0
            if budget is not None:
                held = worst_cost(item) if worst_cost is not None else 0.0
                if not await budget.reserve(held):
                    stats.stopped_by_budget = True
                    return
            try:
                result = await work(item)
            finally:
                if budget is not None:
                    budget.release(held)
            on_result(result)
            stats.done += 1

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, concurrency)):
                group.create_task(worker())
    except BaseExceptionGroup as grouped:
        # Surface the error itself so the CLI prints its one-line message, not a group.
        leaves = list(_leaves(grouped))
        raise next((e for e in leaves if isinstance(e, IntimaError)), leaves[0]) from grouped
    return stats


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc
