"""``converse()``: every seed prompt becomes a conversation of N assistant turns with a
simulated user, each turn stored as it arrives and resumed where it stopped.

One task per conversation (turns are sequential within it), as many conversations in flight as
the pool allows, the same retries, backoff and claims as ``intima run``: two processes given
the same command share the conversations, and never ask for one turn twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from intima.converse.identity import DEFAULT_USER_RETRIES, ConversationSettings, turn_prompt
from intima.converse.simulator import judge_user_reply, simulator_messages
from intima.converse.state import (
    RunTally,
    StoredUserMessage,
    UserMessageRecord,
    add_turn,
    claim_conversations,
    ensure_conversation_run,
    record_user_message,
    release_conversations,
    run_tally,
    stored_answer,
    unfinished,
    user_messages,
)
from intima.core.config import GenerationSettings, ModelConfig, Price, PriceTable
from intima.core.errors import ConfigError
from intima.core.progress import OnProgress, Ticker
from intima.core.spending import Budget, require_prices
from intima.dataset import Prompt, PromptSet
from intima.dataset.types import Turn
from intima.generate.claimed import ClaimedJob, Ending, claim_lease_s, run_claimed, run_status
from intima.generate.pool import CallOutcome, call_with_retries, worst_cost
from intima.generate.runner import messages_for, to_record
from intima.providers import get_model
from intima.providers.base import Message, Model
from intima.store import ClaimState, RunStatus, Store
from intima.store.db import response_id_for


class ConverseSummary(BaseModel):
    run_id: str
    label: str
    turns: int
    conversations: int
    #: assistant turns answered by this call, and found already stored
    turns_new: int
    turns_reused: int
    turns_stored: int
    complete: int
    stopped_by_user: int
    assistant_errors: int
    user_errors: int
    elapsed_s: float
    status: RunStatus
    #: what this call's requests cost, both models' (None: a model the price table lacks)
    cost_usd: float | None = None
    notes: list[str] = []

    @property
    def failed(self) -> int:
        """Work that failed after retries and is asked again by the next run."""
        return self.assistant_errors + self.user_errors


def converse(
    store: Store,
    config: ModelConfig,
    user_config: ModelConfig,
    prompts: PromptSet,
    turns: int = 3,
    *,
    max_user_retries: int = DEFAULT_USER_RETRIES,
    concurrency: int | None = None,
    on_progress: OnProgress | None = None,
    prices: PriceTable | None = None,
    max_cost: float | None = None,
) -> ConverseSummary:
    """Hold a conversation of ``turns`` assistant turns from each prompt, with ``user_config``
    playing the person who wrote it; resumes what is stored. ``max_cost`` (USD, priced by
    ``prices``) caps both models' requests together, as ``intima run``'s cap does."""
    settings = ConversationSettings(assistant=config, user=user_config, turns=turns)
    return asyncio.run(
        aconverse(
            store,
            settings,
            prompts,
            max_user_retries=max_user_retries,
            concurrency=concurrency,
            on_progress=on_progress,
            prices=prices,
            max_cost=max_cost,
        )
    )


async def aconverse(
    store: Store,
    settings: ConversationSettings,
    prompts: PromptSet,
    *,
    max_user_retries: int = DEFAULT_USER_RETRIES,
    concurrency: int | None = None,
    on_progress: OnProgress | None = None,
    prices: PriceTable | None = None,
    max_cost: float | None = None,
) -> ConverseSummary:
    if max_user_retries < 0:
        raise ConfigError(f"max_user_retries must be at least 0, not {max_user_retries}")
    # Both models first, so that a bad spec or a missing key fails before anything is written.
    assistant, user = get_model(settings.assistant), get_model(settings.user)
    # The cap counts both models: each needs a price.
    require_prices(prices, max_cost, [assistant.config, user.config])
    try:
        spending = _Spending(prices, Budget(limit=max_cost), assistant, user)
        job = _Job(store, settings, prompts, spending, max_user_retries)
        return await job.run(concurrency or assistant.concurrency, on_progress)
    finally:
        await assistant.aclose()
        await user.aclose()


@dataclass
class _Counts:
    new: int = 0
    reused: int = 0


class _Spending:
    """Both models, their prices, and the one ``--max-cost`` budget every request of theirs
    is held against: each request's worst case before it is sent, as in ``intima run``."""

    def __init__(
        self, prices: PriceTable | None, budget: Budget, assistant: Model, user: Model
    ) -> None:
        self.budget, self.assistant, self.user = budget, assistant, user
        self.assistant_price = prices.for_model(assistant.config.parsed) if prices else None
        self.user_price = prices.for_model(user.config.parsed) if prices else None
        self.priced_by = prices.priced_by(assistant.config.parsed) if prices else None
        #: a request was not sent because the cap was reached
        self.stopped = False

    async def call(
        self,
        model: Model,
        price: Price | None,
        messages: list[Message],
        settings: GenerationSettings,
    ) -> CallOutcome | None:
        """One request held against the cap; None (nothing sent) once the cap is reached."""
        held = 0.0 if price is None else worst_cost(price, messages, settings)
        if not await self.budget.reserve(held):
            self.stopped = True
            return None
        try:
            outcome = await call_with_retries(model, messages, settings)
            c = outcome.completion
            if c is not None and price is not None:
                self.budget.add(price.cost(c.prompt_tokens or 0, c.completion_tokens or 0))
        finally:
            self.budget.release(held)
        return outcome

    @property
    def cost(self) -> float | None:
        """What this call's requests cost; None when a model has no price."""
        priced = self.assistant_price is not None and self.user_price is not None
        return self.budget.spent if priced else None


class _Job:
    """One conversation run: its record, its seeds, and the models that hold the turns."""

    def __init__(
        self,
        store: Store,
        settings: ConversationSettings,
        prompts: PromptSet,
        spending: _Spending,
        max_user_retries: int,
    ) -> None:
        self.store, self.settings, self.spending = store, settings, spending
        self.assistant, self.user = spending.assistant, spending.user
        self.max_user_retries = max_user_retries
        self.record = settings.run_record(prompts)
        self.run_id = self.record.run_id
        self.seeds = list(prompts.prompts)
        self.positions = {p.prompt_id: i for i, p in enumerate(self.seeds)}
        self.counts = _Counts()
        self.ticker = Ticker(self.record.label, 0, None)

    async def run(self, concurrency: int, on_progress: OnProgress | None) -> ConverseSummary:
        record, seeds, turns = self.record, self.seeds, self.settings.turns
        is_new = not self.store.query("SELECT 1 FROM runs WHERE run_id = ?", (self.run_id,))
        if seeds and (is_new or unfinished(self.store, self.run_id, list(self.positions))):
            # A server that cannot answer leaves no run behind and stops a resume at once.
            await self.assistant.preflight()
            await self.user.preflight()
        ensure_conversation_run(self.store, record, seeds, self.settings)
        started = time.perf_counter()
        self.ticker = Ticker(record.label, len(seeds) * turns, on_progress)
        ended: list[tuple[RunTally, RunStatus]] = []  # where the run stands once work ended

        def end(ending: Ending) -> None:
            if ending == "done" and self.spending.stopped:  # the last conversations' requests
                ending = "stopped by budget"
            tally = run_tally(self.store, self.run_id, turns)
            done = tally.complete + tally.stopped_by_user >= len(seeds)
            status = run_status(ending, lambda: done)
            self.store.set_run_status(self.run_id, status)
            ended.append((tally, status))

        self.store.set_run_status(self.run_id, "running")
        job: ClaimedJob[Prompt, None] = ClaimedJob(
            self._claim,
            lambda owner: release_conversations(self.store, owner),
            self._conversation,
            on_done_elsewhere=lambda: self.ticker.advance(turns),
            end=end,
        )
        # The budget holds each request inside a conversation; held at 0 per conversation here,
        # it only stops the pool starting conversations once the cap is reached.
        await run_claimed(seeds, job, concurrency=concurrency, budget=self.spending.budget)
        tally, status = ended[-1]
        return ConverseSummary(
            run_id=self.run_id,
            label=record.label,
            turns=turns,
            conversations=len(seeds),
            turns_new=self.counts.new,
            turns_reused=self.counts.reused,
            turns_stored=tally.turns_stored,
            complete=tally.complete,
            stopped_by_user=tally.stopped_by_user,
            assistant_errors=tally.assistant_errors,
            user_errors=tally.user_errors,
            elapsed_s=time.perf_counter() - started,
            status=status,
            cost_usd=self.spending.cost,
            notes=[*self.assistant.notes, *self.user.notes],
        )

    def _claim(self, part: Sequence[Prompt], owner: str) -> Sequence[ClaimState]:
        s = self.settings
        # Every request a conversation may make, with all their retries, bounds its lease.
        asks = s.turns + (s.turns - 1) * (self.max_user_retries + 1)
        lease = max(claim_lease_s(s.assistant, asks), claim_lease_s(s.user, asks))
        ids = [p.prompt_id for p in part]
        return claim_conversations(self.store, self.run_id, ids, owner, lease)

    async def _conversation(self, seed: Prompt) -> None:
        """Carry one conversation on from where the store says it stopped."""
        turns = self.settings.turns
        said = user_messages(self.store, self.run_id, seed.prompt_id)
        conversation: tuple[Turn, ...] = seed.context
        prompt = seed
        for k in range(1, turns + 1):
            answer = await self._answer(prompt)
            self.ticker.advance()
            if answer is None:  # failed after retries: the next run asks again
                self.ticker.advance(turns - k)
                return
            conversation = (
                *conversation,
                Turn(role="user", content=prompt.text),
                Turn(role="assistant", content=answer),
            )
            if k == turns:
                return
            message = said.get(k)
            if message is None or message.status == "error":
                asked = await self._ask_user(seed, conversation, k)
                if asked is None:  # not asked: the cap was reached; the next run goes on
                    self.ticker.advance(turns - k)
                    return
                message = StoredUserMessage(asked.status, asked.text)
            if message.status != "ok" or message.text is None:
                self.ticker.advance(turns - k)
                return
            prompt = turn_prompt(seed, conversation, message.text)
            position = k * len(self.seeds) + self.positions[seed.prompt_id]
            add_turn(self.store, self.run_id, seed.prompt_id, k + 1, prompt, position)

    async def _answer(self, prompt: Prompt) -> str | None:
        """The assistant's reply to one turn: the stored one if there is one, else asked for
        and stored at once (priced as ``intima run`` prices it). None if it failed after
        retries, or was not asked because the cap was reached."""
        config, spending = self.assistant.config, self.spending
        response_id = response_id_for(config.config_key, prompt.prompt_id)
        if (stored := stored_answer(self.store, response_id)) is not None:
            self.counts.reused += 1
            return stored
        price = spending.assistant_price
        messages = messages_for(config, prompt)
        outcome = await spending.call(self.assistant, price, messages, config.generation)
        if outcome is None:
            return None
        rec = to_record(config.config_key, prompt, outcome, price, spending.priced_by)
        self.store.record_responses([rec])
        c = outcome.completion
        if c is None:
            return None
        self.counts.new += 1
        return c.text

    async def _ask_user(
        self, seed: Prompt, conversation: tuple[Turn, ...], after_turn: int
    ) -> UserMessageRecord | None:
        """The simulated user's next message; a reply the character rule refuses is asked
        again (a fresh seed, and a reminder of why) up to ``max_user_retries`` times, then
        stored with its verdict. Stored at once, whatever it is; None, and nothing stored,
        when the cap stopped it before its last ask (its verdict is not the user's)."""
        last_assistant = conversation[-1].content
        rec = UserMessageRecord(
            run_id=self.run_id,
            conversation_id=seed.prompt_id,
            after_turn=after_turn,
            text=None,
            status="error",
            attempts=0,
        )
        reminder: str | None = None
        for attempt in range(self.max_user_retries + 1):
            messages = simulator_messages(seed.code, conversation, reminder)
            outcome = await self.spending.call(
                self.user, self.spending.user_price, messages, _reseeded(self.user, attempt)
            )
            if outcome is None:
                return None
            c = outcome.completion
            rec = rec.model_copy(
                update={
                    "attempts": rec.attempts + outcome.attempts,
                    "latency_s": (rec.latency_s or 0.0) + outcome.latency_s,
                    "error": outcome.error,
                }
            )
            if c is None:
                rec = rec.model_copy(update={"status": "error", "text": None})
                break
            text = c.text.strip()
            verdict = judge_user_reply(text, last_assistant)
            rec = rec.model_copy(
                update={
                    "status": verdict,
                    "text": text,
                    "prompt_tokens": c.prompt_tokens,
                    "completion_tokens": c.completion_tokens,
                    "served_by": c.served_by,
                    "usage_source": c.usage_source,
                }
            )
            if verdict == "ok":
                break
            reminder = verdict
        record_user_message(self.store, rec)
        return rec


def _reseeded(model: Model, attempt: int) -> GenerationSettings:
    """A retry with the same seed would give the same reply from a deterministic server; the
    n-th retry uses seed + n, so retries are as reproducible as the first ask."""
    settings = model.config.generation
    if attempt == 0 or settings.seed is None:
        return settings
    # Wrapped to 32 bits, the range every backend takes (llama.cpp's seeds are unsigned 32-bit).
    return settings.model_copy(update={"seed": (settings.seed + attempt) % 2**32})
