"""Batch mode (``intima run --batch``, ``intima judge --batch``): what is missing goes to the
vendor's batch API as one batch, at half price, answered within 24 hours.

The batch id is stored (``provider_batches``) as soon as the vendor gives it, so a command that
is killed and run again polls the same batch and never submits twice. Vendors publish a batch's
answers once it has ended; they are then imported like any other answer. Items that expired or
failed are stored with their reason and asked again by the next run (a new, smaller batch); so
are items whose result line is malformed (one warning line says so). An item answered twice
counts once, by its first answer.
Cost is recorded at the batch price: half the price table's.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from intima.core.blocking import blocking
from intima.core.config import GenerationSettings, ModelConfig, Price, PriceTable
from intima.core.errors import ConfigError, ProviderError
from intima.core.progress import OnProgress, Ticker
from intima.dataset import Prompt, PromptSet
from intima.generate.batch_store import (
    batch_ids,
    confirm_batch,
    drop_intent,
    intent_created,
    mark_imported,
    open_batch,
    record_batch,
)
from intima.generate.pool import CallOutcome
from intima.generate.runner import (
    RunSummary,
    RunTally,
    final_status,
    messages_for,
    open_run,
    to_record,
)
from intima.generate.usage import settled
from intima.providers import get_model
from intima.providers.base import (
    BatchClient,
    BatchItem,
    BatchResult,
    BatchResults,
    BatchState,
    Message,
    Model,
    TransientError,
)
from intima.store import Store

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


def batch_pricing(
    prices: PriceTable | None, config: ModelConfig
) -> tuple[Price | None, str | None]:
    """What one of the model's batch requests costs (None: unpriced), and the source each
    stored cost names ("TABLE, at the batch price")."""
    if prices is None:
        return None, None
    source = prices.priced_by(config.parsed)
    priced_by = None if source is None else f"{source}, at the batch price"
    return batch_price(prices.for_model(config.parsed)), priced_by


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
    #: the vendor answered a preflight already (a new run checks before it is written)
    reached: bool = False


@dataclass(frozen=True)
class Ask:
    """One item to ask: ``ref`` is what it answers for the caller (a prompt id, a content
    hash); the batch gives it its custom id."""

    ref: str
    messages: list[Message]
    json_schema: dict[str, Any] | None = None


@dataclass
class BatchOutcome:
    batch_id: str
    state: BatchState
    #: custom id -> the reference the caller gave it (a prompt id, a content hash)
    refs: dict[str, str]
    #: one per item of ``refs``: its answer or why there is none
    results: list[BatchResult]
    #: what was wrong with the vendor's results, in one line (None when nothing was)
    warning: str | None = None


async def run_batch(
    store: Store,
    job: BatchJob,
    build: Callable[[], list[Ask]],
    on_progress: OnProgress | None,
) -> BatchOutcome | None:
    """Resume this scope's submitted batch, or submit one from ``build()`` (None when nothing
    is missing); poll until it has ended; return every item's result (an item the vendor did not
    answer gets the batch's reason)."""
    client = batch_client(job.model)
    found = open_batch(store, job.purpose, job.scope)
    asks = build() if found is None else []
    if found is None and not asks:
        return None
    if not job.reached:
        # A vendor that is not there is one line now, with nothing stored, not a traceback
        # from the submission or twenty failed polls.
        await job.model.preflight()
    if found is not None and found[0].startswith(PENDING):
        found = await _adopt(store, client, job, *found, on_progress)
        asks = build() if found is None else []
        if found is None and not asks:
            return None
    if found is None:
        # The intent is stored before the vendor hears of it, under a token the vendor keeps
        # (OpenAI: the batch's metadata; Anthropic, which keeps none: every request's custom
        # id): a command killed before it learns the batch id finds the batch by the token.
        # (Anthropic takes custom ids of 1-64 characters of [A-Za-z0-9_-]: hex, "-", a count.)
        token = PENDING + uuid.uuid4().hex
        items = [
            BatchItem(custom_id=f"{token.removeprefix(PENDING)}-{n}", messages=ask.messages,
                      json_schema=ask.json_schema)
            for n, ask in enumerate(asks)
        ]  # fmt: skip
        refs = {item.custom_id: ask.ref for item, ask in zip(items, asks, strict=True)}
        record_batch(store, token, job.model.config.parsed.provider, job.purpose, job.scope, refs)
        batch_id = await _submit(store, client, job, items, token)
    else:
        batch_id, refs = found
    ticker = Ticker(f"{job.label} (batch {batch_id})", len(refs), on_progress)
    state = await _poll_until_ended(client.poll, batch_id, job, ticker)
    read = await _retrying(lambda: client.results(batch_id), job)
    results, warning = _settle(batch_id, state, refs, read)
    return BatchOutcome(batch_id=batch_id, state=state, refs=refs, results=results,
                        warning=warning)  # fmt: skip


def batch_client(model: Model) -> BatchClient:
    """The model's batch API, or a one-line refusal (checked before anything is written)."""
    client = model.batches()
    if client is None:
        provider = model.config.parsed.provider
        raise ConfigError(f"{provider} has no batch API; --batch works with openai and anthropic")
    return client


def _settle(
    batch_id: str, state: BatchState, refs: dict[str, str], read: BatchResults
) -> tuple[list[BatchResult], str | None]:
    """One result per item of ``refs``: an item answered twice counts once (its first answer,
    or its first failure when none answered); an item with no readable answer fails with the
    batch's reason. The warning says what was wrong with the vendor's lines."""
    kept: dict[str, BatchResult] = {}
    repeated: set[str] = set()
    for result in read.results:
        if result.custom_id not in refs:
            continue  # not this batch's item: nothing to store it under
        first = kept.setdefault(result.custom_id, result)
        if first is not result:
            repeated.add(result.custom_id)
            if first.completion is None and result.completion is not None:
                kept[result.custom_id] = result
    why = f"batch {state.status}" + (f": {state.reason}" if state.reason else ": no answer")
    if read.problems:
        why += f" (the results had {len(read.problems)} malformed line(s))"
    results = [kept.get(c) or BatchResult(custom_id=c, error=why) for c in refs]
    said = []
    if read.problems:
        said.append(f"{len(read.problems)} malformed result line(s) ({read.problems[0]})")
    if repeated:
        said.append(f"{len(repeated)} item(s) answered more than once (the first answer is kept)")
    if not said:
        return results, None
    failed = sum(r.completion is None for r in results)
    warning = (
        f"warning: batch {batch_id}: " + "; ".join(said) + f"; {failed} item(s) stored as "
        "failed with their reason, asked again by the next run"
    )
    return results, warning


def warning_notes(outcome: BatchOutcome | None) -> list[str]:
    return [outcome.warning] if outcome is not None and outcome.warning else []


async def _submit(
    store: Store, client: BatchClient, job: BatchJob, items: list[BatchItem], token: str
) -> str:
    """Submit once; the vendor's id replaces the stored intent. A vendor that refused the
    submission (an HTTP 4xx: no batch API, a bad key) created no batch, so the intent is dropped;
    one that failed on the way (a lost connection, a 5xx, no answer) may have created it, so the
    intent is kept for the next run to find (or drop) by its token."""
    try:
        batch_id = await client.submit(items, job.settings, token)
    except TransientError as exc:
        raise ProviderError(
            f"{job.label}: the batch could not be submitted ({exc}); nothing is lost: run the "
            "command again, and it takes up this batch if the vendor received it, or submits it"
        ) from exc
    except ProviderError:
        drop_intent(store, token)
        raise
    confirm_batch(store, token, batch_id)
    return batch_id


async def _adopt(
    store: Store,
    client: BatchClient,
    job: BatchJob,
    token: str,
    refs: dict[str, str],
    on_progress: OnProgress | None,
) -> tuple[str, dict[str, str]] | None:
    """A submission whose batch id was never stored: the vendor's batch with that token (or
    those custom ids), or None (the row is dropped) when the vendor never got it. A batch is
    taken only by what the vendor keeps of ours (OpenAI: the token in its metadata; Anthropic:
    the custom ids in its results), never by its size: while batches that may be it are still in
    progress (Anthropic shows a batch's custom ids only once it has ended), this stops and says
    so, the intent kept, rather than wait up to a day on what may be someone else's batch."""
    since = intent_created(store, token)
    taken = {b for b in batch_ids(store) if not b.startswith(PENDING)}
    Ticker(f"{job.label} (finding the batch submitted before)", len(refs), on_progress)
    search = await _retrying(lambda: client.find(token, refs.keys(), since, taken), job)
    if search.batch_id is None and search.undecided:
        raise ProviderError(
            f"{job.label}: a batch of {len(refs)} requests was submitted at "
            f"{since:%Y-%m-%d %H:%M} UTC and its id never stored; {search.undecided} batch(es) "
            "of that size "
            "are still in progress at the vendor, and which one is this submission cannot be "
            "told before they end (the vendor shows a batch's custom ids only in its results). "
            "Nothing is lost and nothing was submitted again: run the same command once they "
            "have ended (within 24 hours)"
        )
    if search.batch_id is None:
        drop_intent(store, token)
        return None
    confirm_batch(store, token, search.batch_id)
    return search.batch_id, refs


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
    last = ""
    for _ in range(MAX_FAILED_POLLS):
        try:
            return await call()
        except TransientError as exc:
            last = str(exc)
            await job.sleep(job.poll_s)
    raise ProviderError(
        f"the batch API failed {MAX_FAILED_POLLS} times in a row (last: {last}); nothing is "
        "lost: run the command again to resume the same batch"
    )


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
    """Submit what each configuration's run is missing as one batch (all submitted before any is
    waited for), poll every ``poll_s`` seconds until each has ended, and store the answers,
    priced by ``prices`` at the batch price. ``sleep``: injected by tests."""
    models = [get_model(c) for c in configs]  # a bad spec fails before anything is submitted
    for model in models:
        batch_client(model)
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


generate_batch = blocking(agenerate_batch)


def _settled(config: ModelConfig, prompt: Prompt, result: BatchResult) -> CallOutcome:
    """A batch item's outcome, its counts settled as a live reply's are (a line without usage
    is counted or taken at its worst, never free)."""
    c = result.completion
    if c is not None:
        c = settled(c, config.parsed.model, messages_for(config, prompt), config.generation)
    return CallOutcome(c, result.error, 1, 0.0)


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
    run = await open_run(store, prompts, model)
    record, by_id, missing = run.record, run.by_id, run.missing
    price, priced_by = batch_pricing(prices, config)
    started = time.perf_counter()

    def build() -> list[Ask]:
        return [Ask(ref=pid, messages=messages_for(config, by_id[pid])) for pid in missing]

    job = BatchJob(model, "generate", record.run_id, record.label, config.generation, poll_s, sleep,
                   reached=run.is_new)  # fmt: skip
    tally = RunTally()
    try:
        outcome = await run_batch(store, job, build, on_progress)
    except Exception:
        store.set_run_status(record.run_id, "failed")  # not "running": nothing runs any more
        raise
    if outcome is not None:
        records = [
            to_record(config.config_key, by_id[outcome.refs[r.custom_id]],
                      _settled(config, by_id[outcome.refs[r.custom_id]], r), price, priced_by)
            for r in outcome.results
            if outcome.refs[r.custom_id] in by_id
        ]  # fmt: skip
        store.record_responses(records)
        for rec in records:
            tally.add(rec)
        mark_imported(store, outcome.batch_id, outcome.state.status)
    status = final_status(store, record.run_id, config.config_key, "done")
    store.set_run_status(record.run_id, status)
    return RunSummary(
        run_id=record.run_id, label=record.label, n_prompts=len(prompts),
        already_done=len(prompts) - len(missing), generated=tally.ok, failed=tally.failed,
        prompt_tokens=tally.prompt_tokens, completion_tokens=tally.completion_tokens,
        cost_usd=tally.cost if price else None, elapsed_s=time.perf_counter() - started,
        status=status, notes=[*model.notes, *warning_notes(outcome)],
    )  # fmt: skip
