"""The judging loop: every stored response, every judge, only what is missing.

Concurrency, transport retries, the cost budget and grouped writes are the engine's, exactly as
in ``intima run``. On top, an invalid reply is asked again (bounded by ``max_reasks``) with the
parser's reason; after that the judgment is stored *unscored* with the raw reply and the reason.
Nothing is dropped, nothing is coerced to a default.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from intima.core.blocking import blocking
from intima.core.config import GenerationSettings, ModelConfig, Price, PriceTable
from intima.core.progress import OnProgress, Ticker
from intima.core.spending import Budget, require_prices
from intima.generate.claimed import ClaimedJob, claim_lease_s, run_claimed
from intima.generate.pool import call_with_retries, worst_cost
from intima.generate.usage import TEMPLATE_TOKENS_PER_MESSAGE, schema_bytes, weakest
from intima.judges.parse import ParseOutcome, parse_reply
from intima.judges.prompt import (
    JUDGE_PROMPT_SHA256,
    JUDGE_PROMPT_VERSION,
    judge_messages,
    retry_message,
)
from intima.judges.samples import SampleSpec, drawn, thin_scopes
from intima.judges.schema import reply_json_schema
from intima.judges.store_io import (
    JudgmentRecord,
    judgment_id_for,
    load_targets,
    scored_hashes,
    write_judgments,
)
from intima.providers import get_model
from intima.providers.base import Completion, Message, Model, UsageSource
from intima.store import ClaimState, Store, StoredResponse

#: Judges rate deterministically by default; max_tokens leaves room for 13 keys and a sentence.
DEFAULT_JUDGE_SETTINGS = GenerationSettings(temperature=0.0, max_tokens=400, seed=0)
DEFAULT_MAX_REASKS = 2
_MAX_ECHO_CHARS = 4000  # how much of a bad reply is shown back to the judge when asking again
#: The most one re-ask adds to the prompt: the echoed reply (4 bytes a character at most), the
#: note with its longest problem, and their two messages' template markers.
_REASK_BYTES = (
    4 * _MAX_ECHO_CHARS
    + len(retry_message("\U0010ffff" * 300).content.encode("utf-8"))
    + 2 * TEMPLATE_TOKENS_PER_MESSAGE
)


class JudgeSummary(BaseModel):
    judge_label: str
    judge_key: str
    n_targets: int
    already_done: int
    scored: int
    unscored: int
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    elapsed_s: float
    stopped_by_budget: bool
    #: Why this call's unscored judgments are unscored: reason -> count.
    unscored_reasons: dict[str, int] = {}
    #: What the backend learned that the user should hear once (e.g. the structured-output
    #: form a server takes).
    notes: list[str] = []

    @property
    def all_failed(self) -> bool:
        """Every judgment this call asked for is unscored (there was at least one)."""
        return self.unscored > 0 and self.scored == 0


def unscored_reasons(summaries: Iterable[JudgeSummary]) -> Counter[str]:
    """The reasons of every summary's unscored judgments, added up."""
    total: Counter[str] = Counter()
    for s in summaries:
        total.update(s.unscored_reasons)
    return total


def stored_unscored_reasons(
    store: Store, judge_keys: Sequence[str], run_ids: Sequence[str] | None = None
) -> Counter[str]:
    """Why the stored judgments of these judges on the runs' responses (all runs if None) are
    unscored, under the current judge prompt: reason -> count."""
    if not judge_keys:
        return Counter()
    hashes = {t.content_hash for t in load_targets(store, run_ids)}
    marks = ",".join("?" * len(judge_keys))
    rows = store.query(
        f"SELECT content_hash, reason FROM judgments WHERE status = 'unscored' "
        f"AND prompt_version = ? AND judge_key IN ({marks})",
        (JUDGE_PROMPT_VERSION, *judge_keys),
    )
    return Counter(r[1] or "unknown" for r in rows if r[0] in hashes)


def judge_config_json(config: ModelConfig) -> dict[str, object]:
    """What produced a judgment, stored with it (a key's variable name, never a key)."""
    return {
        **config.model_dump(mode="json"),
        "judge_prompt_version": JUDGE_PROMPT_VERSION,
        "judge_prompt_sha256": JUDGE_PROMPT_SHA256,
    }


async def ajudge(
    store: Store,
    judges: Sequence[ModelConfig],
    run_ids: Sequence[str] | None = None,
    *,
    prices: PriceTable | None = None,
    max_cost: float | None = None,
    max_reasks: int = DEFAULT_MAX_REASKS,
    on_progress: OnProgress | None = None,
    sample: SampleSpec | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[JudgeSummary]:
    """Judge the stored responses of the runs (all runs if None) with each judge in turn; with
    ``sample``, only each run's seeded random sample (recorded, see :mod:`.samples`).
    ``prices`` prices each judgment (None: costs unknown); ``max_cost`` (USD) caps what the
    judges spend together, and needs a price for each
    (:func:`intima.core.spending.require_prices`).
    ``stop``: asked before each judgment starts; once True no more start (a worker whose
    request was cancelled), those in flight are stored."""
    targets = load_targets(store, run_ids)
    models = [get_model(c) for c in judges]  # a bad spec fails before any work starts
    require_prices(prices, max_cost, [m.config for m in models])
    budget = Budget(limit=max_cost)
    out = []
    try:
        for model in models:
            price = prices.for_model(model.config.parsed) if prices else None
            source = prices.priced_by(model.config.parsed) if prices else None
            job = JudgeJob(store, model, price, budget, max_reasks, priced_by=source)
            mine, thin = targets, []
            if sample is not None:  # every run's responses, each run sampled on its own
                every = store.responses(run_ids, distinct=False)
                got = drawn(store, model.config.config_key, every, sample)
                mine, thin = got.members, [*got.notes, *thin_scopes(got.members, every)]
            summary = await job.run(mine, on_progress, stop)
            out.append(summary.model_copy(update={"notes": [*thin, *summary.notes]}))
            if budget.exhausted or (stop is not None and stop()):
                break
    finally:
        for model in models:
            await model.aclose()
    return out


judge = blocking(ajudge)


@dataclass
class JudgeTally:
    """What one judge's pass judged (live or batched): counts, reasons, tokens and cost."""

    scored: int = 0
    unscored: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    seen: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, rec: JudgmentRecord, requests: int) -> None:
        self.seen += 1
        if rec.status == "scored":
            self.scored += 1
        else:
            self.unscored += 1
            self.reasons[rec.reason or "unknown"] += 1
        self.requests += requests
        self.prompt_tokens += rec.prompt_tokens or 0
        self.completion_tokens += rec.completion_tokens or 0
        self.cost += rec.cost_usd or 0.0


@dataclass
class Attempt:
    """Accumulates one judgment's calls: tokens, latency, replies and problems."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    problems: list[str] = field(default_factory=list)
    #: The structured-output form the backend used (auto mode picks it per server).
    structured_output: str | None = None
    #: Where the replies' counts came from (:mod:`intima.generate.usage`), one per reply.
    sources: list[UsageSource | None] = field(default_factory=list)

    def add(self, c: Completion | None, attempts: int, latency_s: float) -> None:
        self.requests += attempts
        self.latency_s += latency_s
        if c is not None:
            self.prompt_tokens += c.prompt_tokens or 0
            self.completion_tokens += c.completion_tokens or 0
            self.sources.append(c.usage_source)


class JudgeJob:
    """One judge over the stored responses: what is left to judge (:meth:`todo`) and how a
    reply becomes a stored judgment (:meth:`record`); the live loop and ``judges.batch`` share
    it."""

    def __init__(
        self,
        store: Store,
        model: Model,
        price: Price | None,
        budget: Budget,
        max_reasks: int,
        *,
        priced_by: str | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.config = model.config
        self.key = model.config.config_key
        self.price = price
        self.budget = budget
        self.max_reasks = max(0, max_reasks)
        self.schema = reply_json_schema()
        self.settings = model.config.generation
        self.meta = judge_config_json(model.config)
        if price is not None and priced_by is not None:  # a stored cost names its price table
            self.meta["priced_by"] = priced_by

    def todo(self, targets: Sequence[StoredResponse]) -> list[StoredResponse]:
        """The distinct responses this judge has not scored under the current prompt."""
        done = scored_hashes(self.store, self.key, JUDGE_PROMPT_VERSION)
        todo: dict[str, StoredResponse] = {}
        for t in targets:
            if t.content_hash not in done:
                todo.setdefault(t.content_hash, t)  # identical text is judged once
        return list(todo.values())

    async def run(
        self,
        targets: Sequence[StoredResponse],
        on_progress: OnProgress | None,
        stop: Callable[[], bool] | None = None,
    ) -> JudgeSummary:
        todo = self.todo(targets)
        n_unique = len({t.content_hash for t in targets})
        tally = JudgeTally()
        started = time.perf_counter()
        if todo:
            await self.model.preflight()
        label = f"judge {self.config.display_name}"
        ticker = Ticker(label, len(todo), on_progress)
        # Two processes judging the same responses at once share them through claims.
        lease = claim_lease_s(self.config, asks=self.max_reasks + 1)

        def done(result: tuple[JudgmentRecord, int]) -> None:
            rec, requests = result
            tally.add(rec, requests)
            ticker.advance()

        def claim(part: Sequence[StoredResponse], owner: str) -> Sequence[ClaimState]:
            ids = [judgment_id_for(t.content_hash, self.key, JUDGE_PROMPT_VERSION) for t in part]
            return self.store.claim_judgments(ids, owner, lease)

        def write(results: list[tuple[JudgmentRecord, int]]) -> None:
            write_judgments(self.store, [rec for rec, _ in results])

        job = ClaimedJob(
            claim, self.store.release_claims, self._judge_one, write, on_result=done,
            on_done_elsewhere=ticker.advance,
        )  # fmt: skip
        ending = await run_claimed(
            todo, job, concurrency=self.model.concurrency, budget=self.budget,
            worst_cost=self._worst, stop=stop,
        )  # fmt: skip
        stopped = ending == "stopped by budget"
        notes = list(getattr(self.model, "notes", []))
        return self.summary(tally, n_unique, len(todo), started, stopped=stopped, notes=notes)

    def summary(
        self,
        tally: JudgeTally,
        n_unique: int,
        n_todo: int,
        started: float,
        *,
        stopped: bool,
        notes: list[str],
    ) -> JudgeSummary:
        """One pass of this judge (live or batched) as the commands report it; ``started``:
        its ``time.perf_counter()`` at the start."""
        return JudgeSummary(
            judge_label=self.config.display_name,
            judge_key=self.key,
            n_targets=n_unique,
            already_done=n_unique - n_todo,
            scored=tally.scored,
            unscored=tally.unscored,
            requests=tally.requests,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
            cost_usd=tally.cost if self.price else None,
            elapsed_s=time.perf_counter() - started,
            stopped_by_budget=stopped,
            unscored_reasons=dict(tally.reasons),
            notes=notes,
        )

    def _worst(self, target: StoredResponse) -> float:
        """Every ask of one judgment at its worst (held against --max-cost before it starts):
        each re-ask also carries the echoed reply and the parser's note."""
        if self.price is None:
            return 0.0
        messages = judge_messages(target.prompt, target.response, target.context)
        schema = schema_bytes(self.schema)
        return sum(
            worst_cost(self.price, messages, self.settings, schema + ask * _REASK_BYTES)
            for ask in range(self.max_reasks + 1)
        )

    async def _judge_one(self, target: StoredResponse) -> tuple[JudgmentRecord, int]:
        messages: list[Message] = judge_messages(target.prompt, target.response, target.context)
        acc = Attempt()
        raw: str | None = None
        for _ask in range(self.max_reasks + 1):
            outcome = await call_with_retries(
                self.model, messages, self.settings, json_schema=self.schema
            )
            acc.add(outcome.completion, outcome.attempts, outcome.latency_s)
            if outcome.completion is not None and outcome.completion.structured_output:
                acc.structured_output = outcome.completion.structured_output
            if outcome.completion is None:
                # A transport failure is not a judge's verdict: store it unscored, with why.
                reason = f"request failed: {outcome.error}"
                return self.record(target, acc, raw, None, reason), acc.requests
            raw = outcome.completion.text
            parsed = parse_reply(raw)
            if parsed.ok:
                return self.record(target, acc, raw, parsed, None), acc.requests
            problem = parsed.problem or "invalid reply"
            acc.problems.append(problem)
            messages = [
                *messages,
                Message(role="assistant", content=raw[:_MAX_ECHO_CHARS]),
                retry_message(problem),
            ]
        asks = len(acc.problems)
        reason = f"invalid reply after {asks} ask(s): " + " | ".join(acc.problems)
        return self.record(target, acc, raw, None, reason), acc.requests

    def _meta(self, acc: Attempt) -> dict[str, object]:
        used = acc.structured_output
        if used is None or used == self.config.structured_output:
            return self.meta
        return {**self.meta, "structured_output_used": used}

    def record(
        self,
        target: StoredResponse,
        acc: Attempt,
        raw: str | None,
        parsed: ParseOutcome | None,
        reason: str | None,
    ) -> JudgmentRecord:
        """The stored judgment: scored from ``parsed``, or unscored with ``reason`` and the raw
        reply; its cost is added to the budget."""
        cost = None
        if self.price is not None:
            cost = self.price.cost(acc.prompt_tokens, acc.completion_tokens)
            self.budget.add(cost)
        base = JudgmentRecord(
            content_hash=target.content_hash,
            judge_key=self.key,
            judge_kind="llm",
            judge_label=self.config.display_name,
            judge_model=self.config.spec.split("@")[0],
            prompt_version=JUDGE_PROMPT_VERSION,
            prompt_sha256=JUDGE_PROMPT_SHA256,
            status="unscored",
            raw_reply=raw,
            reason=reason,
            prompt_tokens=acc.prompt_tokens,
            completion_tokens=acc.completion_tokens,
            cost_usd=cost,
            latency_s=acc.latency_s,
            attempts=acc.requests,
            judge_config=self._meta(acc),
            usage_source=weakest(acc.sources),
        )
        if parsed is None or parsed.reply is None:
            return base
        reply = parsed.reply
        repairs = parsed.repairs + [f"asked again: {p}" for p in acc.problems]
        return base.model_copy(
            update={
                "status": "scored",
                "ratings": {c: lv.label for c, lv in reply.levels().items()},
                "primary": reply.primary(),
                "rationale": reply.rationale,
                "repairs": repairs,
                "reason": None,
            }
        )
