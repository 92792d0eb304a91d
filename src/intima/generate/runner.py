"""Generation: send every prompt of a prompt set to each model configuration, keep every answer.

A run is identified by its configuration's cache key and the prompt set's fingerprint, so
re-running the same command finds the same run and only asks for what is missing.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from intima.core.blocking import blocking
from intima.core.config import GenerationSettings, ModelConfig, Price, PriceTable
from intima.core.ids import content_id
from intima.core.labels import readable_label
from intima.core.progress import OnProgress, Ticker
from intima.core.spending import Budget, require_prices
from intima.dataset import Prompt, PromptSet
from intima.generate.claimed import ClaimedJob, Ending, claim_lease_s, run_claimed, run_status
from intima.generate.pool import CallOutcome, call_with_retries, worst_cost
from intima.providers import effective_config, get_model
from intima.providers.base import Message, Model
from intima.store import (
    ClaimState,
    ResponseRecord,
    RunRecord,
    RunStatus,
    Store,
    response_id_for,
)


class RunSummary(BaseModel):
    run_id: str
    label: str
    n_prompts: int
    already_done: int
    generated: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    elapsed_s: float
    status: str
    notes: list[str] = []  # what the backend learned or warns about, e.g. an unlisted model


def run_id_for(config: ModelConfig, prompts: PromptSet) -> str:
    return content_id(config.config_key, prompts.fingerprint, length=16)


def messages_for(config: ModelConfig, prompt: Prompt) -> list[Message]:
    system = [Message(role="system", content=config.system_prompt)] if config.system_prompt else []
    earlier = [Message(role=t.role, content=t.content) for t in prompt.context]
    return [*system, *earlier, Message(role="user", content=prompt.text)]


def default_label(config: ModelConfig) -> str:
    """A readable label that tells configurations of one model apart: the model, the first
    words of the system prompt and every generation setting that differs from the default,
    e.g. ``openai-compat:smollm2 · "You are Mia." [max_tokens=64, seed=1]``
    (:func:`intima.core.labels.readable_label`, the board's names too)."""
    if config.label:
        return config.label
    # The defaults as this provider sends them: a setting it cannot take is not a difference.
    as_sent = effective_config(config.model_copy(update={"generation": GenerationSettings()}))
    defaults = as_sent.generation.model_dump()
    differing = {
        name: value
        for name, value in config.generation.model_dump().items()
        if value != defaults[name]
    }
    return readable_label(config.display_name, config.system_prompt, differing)


def run_record(config: ModelConfig, prompts: PromptSet) -> RunRecord:
    spec = config.parsed
    return RunRecord(
        run_id=run_id_for(config, prompts),
        label=default_label(config),
        model_spec=config.spec,
        provider=spec.provider,
        model_name=spec.model,
        config_key=config.config_key,
        # api_key_env holds a variable's name, never a key; keys are never stored.
        config_json=json.dumps(config.model_dump(mode="json"), sort_keys=True),
        dataset=prompts.info,
        dataset_fingerprint=prompts.fingerprint,
        n_prompts=len(prompts),
    )


def check(configs: Sequence[ModelConfig], *, reach: bool) -> None:
    """Raise on a configuration that cannot run (unknown provider, missing key) and, with
    ``reach``, on a server that cannot be reached, before anything is written anywhere."""

    async def go() -> None:
        models = [get_model(c) for c in configs]
        try:
            if reach:
                for model in models:
                    await model.preflight()
        finally:
            for model in models:
                await model.aclose()

    asyncio.run(go())


async def agenerate(
    store: Store,
    prompts: PromptSet,
    configs: Sequence[ModelConfig],
    *,
    prices: PriceTable | None = None,
    max_cost: float | None = None,
    on_progress: OnProgress | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[RunSummary]:
    """Run every configuration over the prompts (in order), resuming what is stored.
    ``prices`` prices each answer (None: costs unknown); ``max_cost`` (USD) caps what all of
    them spend together, and needs a price for every configuration
    (:func:`intima.core.spending.require_prices`).
    ``stop``: asked before each prompt is sent; once True none more are (a worker whose request
    was cancelled), the answers in flight are stored and the run is left interrupted."""
    # Build every model first so a bad spec or a missing key fails before any work starts.
    models = [get_model(c) for c in configs]
    require_prices(prices, max_cost, [m.config for m in models])
    budget = Budget(limit=max_cost)
    summaries = []
    try:
        for model in models:
            summaries.append(
                await _run_one(store, prompts, model, prices, budget, on_progress, stop)
            )
            if budget.exhausted or (stop is not None and stop()):
                break
    finally:
        for model in models:
            await model.aclose()
    return summaries


generate = blocking(agenerate)


@dataclass
class OpenedRun:
    """A run as a pass over it starts: its record (now in the store), whether this pass
    created it, and the prompts still missing an answer."""

    record: RunRecord
    is_new: bool
    by_id: dict[str, Prompt]
    missing: list[str]

    @property
    def todo(self) -> list[Prompt]:
        return [self.by_id[pid] for pid in self.missing]


async def open_run(store: Store, prompts: PromptSet, model: Model) -> OpenedRun:
    """The prologue of every pass, live or batched: a new run's model must answer before the
    run is written (a server or vendor that cannot be reached leaves no run behind)."""
    config = model.config
    record = run_record(config, prompts)
    is_new = not store.query("SELECT 1 FROM runs WHERE run_id = ?", (record.run_id,))
    if is_new and prompts.prompts:
        await model.preflight()
    store.ensure_run(record, prompts.prompts)
    by_id = {p.prompt_id: p for p in prompts.prompts}
    missing = store.missing_prompt_ids(record.run_id, config.config_key)
    return OpenedRun(record, is_new, by_id, missing)


async def _run_one(
    store: Store,
    prompts: PromptSet,
    model: Model,
    prices: PriceTable | None,
    budget: Budget,
    on_progress: OnProgress | None,
    stop: Callable[[], bool] | None = None,
) -> RunSummary:
    config = model.config
    run = await open_run(store, prompts, model)
    record, todo = run.record, run.todo
    price = prices.for_model(config.parsed) if prices else None
    priced_by = prices.priced_by(config.parsed) if prices else None
    tally = RunTally()
    started = time.perf_counter()
    if todo and not run.is_new:
        await model.preflight()
    store.set_run_status(record.run_id, "running")
    ticker = Ticker(record.label, len(todo), on_progress)
    lease = claim_lease_s(config)
    status: RunStatus = "failed"

    async def work(prompt: Prompt) -> ResponseRecord:
        outcome = await call_with_retries(model, messages_for(config, prompt), config.generation)
        rec = to_record(config.config_key, prompt, outcome, price, priced_by)
        budget.add(rec.cost_usd)
        return rec

    def done(rec: ResponseRecord) -> None:
        tally.add(rec)
        ticker.advance()

    def worst(prompt: Prompt) -> float:
        if price is None:
            return 0.0
        return worst_cost(price, messages_for(config, prompt), config.generation)

    def claim(part: Sequence[Prompt], owner: str) -> Sequence[ClaimState]:
        ids = [response_id_for(config.config_key, p.prompt_id) for p in part]
        return store.claim_responses(ids, owner, lease)

    def end(ending: Ending) -> None:
        nonlocal status
        status = final_status(store, record.run_id, config.config_key, ending)
        store.set_run_status(record.run_id, status)

    job = ClaimedJob(
        claim, store.release_claims, work, store.record_responses, on_result=done,
        on_done_elsewhere=ticker.advance, end=end,
    )  # fmt: skip
    await run_claimed(todo, job, concurrency=model.concurrency, budget=budget, worst_cost=worst,
                      stop=stop)  # fmt: skip
    return RunSummary(
        run_id=record.run_id,
        label=record.label,
        n_prompts=len(prompts),
        already_done=len(prompts) - len(todo),
        generated=tally.ok,
        failed=tally.failed,
        prompt_tokens=tally.prompt_tokens,
        completion_tokens=tally.completion_tokens,
        cost_usd=tally.cost if price else None,
        elapsed_s=time.perf_counter() - started,
        status=status,
        notes=list(model.notes),
    )


def final_status(store: Store, run_id: str, config_key: str, ending: Ending) -> RunStatus:
    """A run's status after a pass (live or batched): complete only if no prompt is missing."""
    return run_status(ending, lambda: not store.missing_prompt_ids(run_id, config_key))


class RunTally:
    """What one pass over a run generated: counts, tokens and cost (the run's summary)."""

    def __init__(self) -> None:
        self.n = self.ok = self.failed = self.prompt_tokens = self.completion_tokens = 0
        self.cost = 0.0

    def add(self, rec: ResponseRecord) -> None:
        self.n += 1
        if rec.status == "ok":
            self.ok += 1
        else:
            self.failed += 1
        self.prompt_tokens += rec.prompt_tokens or 0
        self.completion_tokens += rec.completion_tokens or 0
        self.cost += rec.cost_usd or 0.0


def to_record(
    config_key: str,
    prompt: Prompt,
    outcome: CallOutcome,
    price: Price | None,
    priced_by: str | None = None,
) -> ResponseRecord:
    """The stored row for one prompt's outcome (live or from a batch): the answer with its
    tokens and cost, or the error. The completion's counts are settled already
    (:func:`intima.generate.usage.settled`): a reply without usage is not free."""
    base = ResponseRecord(
        response_id=response_id_for(config_key, prompt.prompt_id),
        config_key=config_key,
        prompt_id=prompt.prompt_id,
        status="error",
        error=outcome.error,
        attempts=outcome.attempts,
        latency_s=outcome.latency_s,
    )
    c = outcome.completion
    if c is None:
        return base
    cost = None
    if price is not None:
        cost = price.cost(c.prompt_tokens or 0, c.completion_tokens or 0)
    return base.model_copy(
        update={
            "status": "ok",
            "error": None,
            "text": c.text,
            "finish_reason": c.finish_reason,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "cost_usd": cost,
            "priced_by": priced_by if cost is not None else None,
            "served_by": c.served_by,
            "usage_source": c.usage_source,
        }
    )


def generation_failures(store: Store, run_ids: Sequence[str]) -> Counter[str]:
    """Why the runs' failed prompts failed: error -> number of prompts."""
    reasons: Counter[str] = Counter()
    for run_id in dict.fromkeys(run_ids):
        for row in store.query(_FAILED_SQL, (run_id,)):
            reasons[row[0] or "unknown"] += row[1]
    return reasons


_FAILED_SQL = """
    SELECT r.error, COUNT(*)
    FROM runs ru
    JOIN run_prompts rp ON rp.run_id = ru.run_id
    JOIN responses r ON r.prompt_id = rp.prompt_id AND r.config_key = ru.config_key
    WHERE ru.run_id = ? AND r.status = 'error'
    GROUP BY r.error
"""
