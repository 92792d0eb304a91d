"""Batch mode (``intima run --batch``, ``intima judge --batch``): what is missing goes to the
vendor's batch API as one batch, at half price, answered within 24 hours.

The batch id is stored (``provider_batches``) as soon as the vendor gives it, so a command that
is killed and run again polls the same batch and never submits twice. Vendors publish a batch's
answers once it has ended; they are then imported like any other answer. Items that expired or
failed are stored with their reason and asked again by the next run (a new, smaller batch).
Cost is recorded at the batch price: half the price table's.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeVar

from intima.core.config import GenerationSettings, ModelConfig, Price, PriceTable
from intima.core.errors import ConfigError, ProviderError
from intima.core.progress import OnProgress, Ticker
from intima.dataset import PromptSet
from intima.generate.pool import CallOutcome
from intima.generate.runner import (
    RunSummary,
    _final_status,
    _Tally,
    _to_record,
    messages_for,
    run_record,
)
from intima.providers import get_model
from intima.providers.base import (
    BatchClient,
    BatchItem,
    BatchResult,
    BatchState,
    Model,
    TransientError,
)
from intima.store import Store, now, response_id_for

#: What a batch request costs, as a share of the same request's price.
BATCH_PRICE_FACTOR = 0.5
#: The stored id of a batch being submitted, until the vendor's id replaces it.
PENDING = "pending-"
#: Seconds between polls of a submitted batch.
DEFAULT_POLL_S = 30.0
#: Polls in a row that may fail (429, 5xx, a lost connection) before the command gives up.
MAX_FAILED_POLLS = 20

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
Purpose = Literal["generate", "judge"]


def batch_price(price: Price | None) -> Price | None:
    if price is None:
        return None
    return Price(
        input_per_mtok=price.input_per_mtok * BATCH_PRICE_FACTOR,
        output_per_mtok=price.output_per_mtok * BATCH_PRICE_FACTOR,
    )


@dataclass
class BatchJob:
    """One batch's worth of work for one model: which items, and what each one answers."""

    model: Model
    purpose: Purpose
    #: what the batch answers: a run id (generation) or a judge key (judging)
    scope: str
    label: str
    settings: GenerationSettings
    poll_s: float = DEFAULT_POLL_S
    sleep: Sleep = asyncio.sleep


@dataclass
class BatchOutcome:
    batch_id: str
    state: BatchState
    #: custom id -> the reference the caller gave it (a prompt id, a content hash)
    refs: dict[str, str]
    results: list[BatchResult]


async def run_batch(
    store: Store,
    job: BatchJob,
    build: Callable[[], list[tuple[BatchItem, str]]],
    on_progress: OnProgress | None,
) -> BatchOutcome | None:
    """Resume this scope's submitted batch, or submit one from ``build()`` (None when nothing
    is missing); poll until it has ended; return every item's result (an item the vendor did not
    answer gets the batch's reason)."""
    client = job.model.batches()
    if client is None:
        provider = job.model.config.parsed.provider
        raise ConfigError(f"{provider} has no batch API; --batch works with openai and anthropic")
    found = _open_batch(store, job.purpose, job.scope)
    if found is not None and found[0].startswith(PENDING):
        found = await _adopt(store, client, job, *found)
    if found is None:
        pairs = build()
        if not pairs:
            return None
        refs = {item.custom_id: ref for item, ref in pairs}
        # The intent is stored before the vendor hears of it, under a token the vendor keeps:
        # a command killed before it learns the batch id finds the batch by the token.
        token = PENDING + uuid.uuid4().hex
        _record_batch(store, job, token, refs)
        batch_id = await client.submit([item for item, _ in pairs], job.settings, token)
        _confirm_batch(store, token, batch_id)
    else:
        batch_id, refs = found
    ticker = Ticker(f"{job.label} (batch {batch_id})", len(refs), on_progress)
    state = await _poll_until_ended(client.poll, batch_id, job, ticker)
    results = await _retrying(lambda: client.results(batch_id), job)
    answered = {r.custom_id for r in results}
    why = f"batch {state.status}" + (f": {state.reason}" if state.reason else ": no answer")
    results = [r for r in results if r.custom_id in refs]
    results += [BatchResult(custom_id=c, error=why) for c in refs if c not in answered]
    return BatchOutcome(batch_id=batch_id, state=state, refs=refs, results=results)


def mark_imported(store: Store, batch_id: str, vendor_status: str) -> None:
    """After the results are stored: the next run submits anew for whatever is still missing."""
    with store.transaction() as conn:
        conn.execute(
            "UPDATE provider_batches SET status = 'imported', vendor_status = ?, updated_at = ? "
            "WHERE batch_id = ?",
            (vendor_status, now(), batch_id),
        )


async def _adopt(
    store: Store, client: BatchClient, job: BatchJob, token: str, refs: dict[str, str]
) -> tuple[str, dict[str, str]] | None:
    """A submission whose batch id was never stored: the vendor's batch with that token, or
    None (the row is dropped) when the vendor never got it."""
    [row] = store.query("SELECT created_at FROM provider_batches WHERE batch_id = ?", (token,))
    since = datetime.fromisoformat(row["created_at"])
    batch_id = await _retrying(lambda: client.find(token, len(refs), since), job)
    if batch_id is None:
        with store.transaction() as conn:
            conn.execute("DELETE FROM provider_batches WHERE batch_id = ?", (token,))
        return None
    _confirm_batch(store, token, batch_id)
    return batch_id, refs


def _confirm_batch(store: Store, token: str, batch_id: str) -> None:
    with store.transaction() as conn:
        conn.execute(
            "UPDATE provider_batches SET batch_id = ?, updated_at = ? WHERE batch_id = ?",
            (batch_id, now(), token),
        )


def _open_batch(store: Store, purpose: str, scope: str) -> tuple[str, dict[str, str]] | None:
    rows = store.query(
        "SELECT batch_id, items_json FROM provider_batches WHERE purpose = ? AND scope = ? "
        "AND status = 'submitted' ORDER BY created_at LIMIT 1",
        (purpose, scope),
    )
    return (rows[0]["batch_id"], json.loads(rows[0]["items_json"])) if rows else None


def _record_batch(store: Store, job: BatchJob, batch_id: str, refs: dict[str, str]) -> None:
    stamp = now()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO provider_batches (batch_id, provider, purpose, scope, status, "
            "vendor_status, n_items, items_json, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 'submitted', NULL, ?, ?, ?, ?)",
            (batch_id, job.model.config.parsed.provider, job.purpose, job.scope, len(refs),
             json.dumps(refs, sort_keys=True), stamp, stamp),
        )  # fmt: skip


async def _poll_until_ended(
    poll: Callable[[str], Awaitable[BatchState]], batch_id: str, job: BatchJob, ticker: Ticker
) -> BatchState:
    while True:
        state = await _retrying(lambda: poll(batch_id), job)
        ticker.set(state.done, state.total or ticker.total)
        if state.ended:
            return state
        await job.sleep(job.poll_s)


async def _retrying(call: Callable[[], Awaitable[T]], job: BatchJob) -> T:
    """A vendor call that may pass (429, 5xx, lost connection) is tried again after a poll
    interval, up to :data:`MAX_FAILED_POLLS` times in a row."""
    for _ in range(MAX_FAILED_POLLS):
        try:
            return await call()
        except TransientError:
            await job.sleep(job.poll_s)
    raise ProviderError(
        f"the batch API failed {MAX_FAILED_POLLS} times in a row; run the command again to "
        "resume the same batch"
    )


def generate_batch(
    store: Store,
    prompts: PromptSet,
    configs: Sequence[ModelConfig],
    *,
    prices: PriceTable | None = None,
    poll_s: float = DEFAULT_POLL_S,
    on_progress: OnProgress | None = None,
) -> list[RunSummary]:
    return asyncio.run(agenerate_batch(store, prompts, configs, prices=prices, poll_s=poll_s,
                                       on_progress=on_progress))  # fmt: skip


async def agenerate_batch(
    store: Store,
    prompts: PromptSet,
    configs: Sequence[ModelConfig],
    *,
    prices: PriceTable | None = None,
    poll_s: float = DEFAULT_POLL_S,
    on_progress: OnProgress | None = None,
    sleep: Sleep = asyncio.sleep,
) -> list[RunSummary]:
    models = [get_model(c) for c in configs]  # a bad spec fails before anything is submitted
    try:
        # Every configuration's batch is submitted before any is waited for: each takes hours.
        return list(
            await asyncio.gather(
                *(_generate_one(store, prompts, m, prices, poll_s, sleep, on_progress)
                  for m in models)
            )
        )  # fmt: skip
    finally:
        for model in models:
            await model.aclose()


async def _generate_one(
    store: Store,
    prompts: PromptSet,
    model: Model,
    prices: PriceTable | None,
    poll_s: float,
    sleep: Sleep,
    on_progress: OnProgress | None,
) -> RunSummary:
    config = model.config
    record = run_record(config, prompts)
    store.ensure_run(record, prompts.prompts)
    by_id = {p.prompt_id: p for p in prompts.prompts}
    price = batch_price(prices.for_model(config.parsed) if prices else None)
    source = prices.priced_by(config.parsed) if prices else None
    priced_by = None if source is None else f"{source}, at the batch price"
    started = time.perf_counter()
    missing = store.missing_prompt_ids(record.run_id, config.config_key)

    def build() -> list[tuple[BatchItem, str]]:
        return [
            (BatchItem(custom_id=response_id_for(config.config_key, pid),
                       messages=messages_for(config, by_id[pid])), pid)
            for pid in missing
        ]  # fmt: skip

    job = BatchJob(model, "generate", record.run_id, record.label, config.generation, poll_s, sleep)
    tally = _Tally()
    outcome = await run_batch(store, job, build, on_progress)
    if outcome is not None:
        records = [
            _to_record(config.config_key, by_id[outcome.refs[r.custom_id]],
                       CallOutcome(r.completion, r.error, 1, 0.0), price, priced_by)
            for r in outcome.results
            if outcome.refs[r.custom_id] in by_id
        ]  # fmt: skip
        store.record_responses(records)
        for rec in records:
            tally.add(rec)
        mark_imported(store, outcome.batch_id, outcome.state.status)
    status = _final_status(store, record.run_id, config.config_key, "done")
    store.set_run_status(record.run_id, status)
    return RunSummary(
        run_id=record.run_id, label=record.label, n_prompts=len(prompts),
        already_done=len(prompts) - len(missing), generated=tally.ok, failed=tally.failed,
        prompt_tokens=tally.prompt_tokens, completion_tokens=tally.completion_tokens,
        cost_usd=tally.cost if price else None, elapsed_s=time.perf_counter() - started,
        status=status, notes=list(model.notes),
    )  # fmt: skip
