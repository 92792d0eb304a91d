"""``intima judge --batch``: the responses a judge has not scored go to the vendor's batch API as
one batch (see :mod:`intima.generate.batch` for resuming, expiry and the batch price).

A reply that does not parse is stored unscored with the parser's reason (a batch cannot ask
again within itself); unscored judgments are asked again by the next run, as without --batch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from intima.core.blocking import blocking
from intima.core.config import ModelConfig, PriceTable
from intima.core.progress import OnProgress
from intima.core.spending import Budget
from intima.generate.batch import (
    DEFAULT_POLL_S,
    Ask,
    BatchJob,
    Sleep,
    batch_client,
    batch_pricing,
    run_batch,
    warning_notes,
)
from intima.generate.batch_store import mark_imported
from intima.generate.usage import settled
from intima.judges.loop import Attempt, JudgeJob, JudgeSummary, JudgeTally
from intima.judges.parse import parse_reply
from intima.judges.prompt import judge_messages
from intima.judges.store_io import JudgmentRecord, load_targets, write_judgments
from intima.providers import get_model
from intima.providers.base import BatchResult
from intima.store import Store, StoredResponse


async def ajudge_batch(
    store: Store,
    judges: Sequence[ModelConfig],
    run_ids: Sequence[str] | None = None,
    *,
    prices: PriceTable | None = None,
    poll_s: float = DEFAULT_POLL_S,
    on_progress: OnProgress | None = None,
    sleep: Sleep = asyncio.sleep,
) -> list[JudgeSummary]:
    """Submit what each judge has not scored as one batch (a panel's all submitted before any
    is waited for), poll every ``poll_s`` seconds until each has ended, and store the
    judgments, priced by ``prices`` at the batch price. ``sleep``: injected by tests."""
    targets = load_targets(store, run_ids)
    models = [get_model(c) for c in judges]  # a bad spec fails before anything is submitted
    for model in models:
        batch_client(model)
    jobs = []
    for m in models:
        price, priced_by = batch_pricing(prices, m.config)
        jobs.append(JudgeJob(store, m, price, Budget(), max_reasks=0, priced_by=priced_by))
    try:
        # A panel's batches are all submitted before any is waited for: each takes hours.
        return list(
            await asyncio.gather(
                *(_judge_one(store, job, targets, poll_s, sleep, on_progress) for job in jobs)
            )
        )
    finally:
        for model in models:
            await model.aclose()


judge_batch = blocking(ajudge_batch)


async def _judge_one(
    store: Store,
    job: JudgeJob,
    targets: Sequence[StoredResponse],
    poll_s: float,
    sleep: Sleep,
    on_progress: OnProgress | None,
) -> JudgeSummary:
    started = time.perf_counter()
    todo = job.todo(targets)
    n_unique = len({t.content_hash for t in targets})

    def build() -> list[Ask]:
        return [
            Ask(
                ref=t.content_hash,
                messages=judge_messages(t.prompt, t.response, t.context),
                json_schema=job.schema,
            )
            for t in todo
        ]

    label = f"judge {job.config.display_name}"
    spec = BatchJob(job.model, "judge", job.key, label, job.settings, poll_s, sleep)
    outcome = await run_batch(store, spec, build, on_progress)
    tally = JudgeTally()
    if outcome is not None:
        # A resumed batch may answer responses of runs this call did not name.
        by_hash = {t.content_hash: t for t in (*targets, *load_targets(store, None))}
        records = [
            _record(job, by_hash[outcome.refs[r.custom_id]], r)
            for r in outcome.results
            if outcome.refs[r.custom_id] in by_hash
        ]
        write_judgments(store, records)
        for rec in records:
            tally.add(rec, 1)
        mark_imported(store, outcome.batch_id, outcome.state.status)
    notes = [*job.model.notes, *warning_notes(outcome)]
    return job.summary(tally, n_unique, len(todo), started, stopped=False, notes=notes)


def _record(job: JudgeJob, target: StoredResponse, result: BatchResult) -> JudgmentRecord:
    acc = Attempt()
    c = result.completion
    if c is not None:  # counted or at its worst where the line has no usage, as a live reply
        messages = judge_messages(target.prompt, target.response, target.context)
        c = settled(c, job.config.parsed.model, messages, job.settings, job.schema)
    acc.add(c, 1, 0.0)
    if c is None:
        return job.record(target, acc, None, None, f"request failed: {result.error}")
    # Every judge item carries the schema: the form it went in, as a live judgment records it.
    acc.structured_output = c.structured_output or job.model.structured_form()
    raw = c.text
    parsed = parse_reply(raw)
    if parsed.ok:
        return job.record(target, acc, raw, parsed, None)
    return job.record(target, acc, raw, None, f"invalid reply: {parsed.problem or 'unparsed'}")
