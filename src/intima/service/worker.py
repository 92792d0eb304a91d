"""The worker: take queued requests one at a time and run them through the pipeline's stages
(:mod:`intima.service.stages`: generation, then judging and scoring when configured).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from intima.core.config import ModelConfig
from intima.core.errors import IntimaError
from intima.core.spending import Budget, NoPrice
from intima.dataset import PromptSet, load_prompts
from intima.service.heartbeat import Gone, Heartbeat, why_gone
from intima.service.model_server import serving
from intima.service.queue import (
    MAX_REASON_CHARS,
    LocalQueue,
    RequestQueue,
    RequestRecord,
    redact,
)
from intima.service.request_policy import RequestRefused, runnable_config
from intima.service.stages import (  # re-exported: the worker's API names them
    BudgetReached,
    OnMessage,
    Stage,
    StageContext,
    StageFailed,
    budget_reached,
    default_stages,
    generation_stage,
    judging_stage,
    scoring_stage,
)
from intima.service.stages import say as _say
from intima.service.worker_checks import check_before_claiming, check_supplied, workers_fault
from intima.service.worker_claims import Claims, WorkSummary
from intima.service.worker_settings import DEFAULT_GIVE_UP_S, WorkerSettings
from intima.store import Store, claim_owner

__all__ = [
    "DEFAULT_GIVE_UP_S", "OnMessage", "Stage", "StageContext", "StageFailed", "WorkSummary",
    "WorkerSettings", "default_stages", "generation_stage", "judging_stage", "scoring_stage",
    "work",
]  # fmt: skip


def new_worker_id() -> str:
    return claim_owner()


def work(
    store_path: Path | str,
    settings: WorkerSettings | None = None,
    *,
    stages: Sequence[Stage] | None = None,
    queue: RequestQueue | None = None,
    on_message: OnMessage | None = None,
    worker_id: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] | None = None,
) -> WorkSummary:
    """Process queued requests one by one, as ``settings`` say (:class:`WorkerSettings`).

    ``queue``: where requests come from (default: the store's own queue; a
    :class:`~intima.service.hub_queue.HubQueue` for a requests repo on the Hub). ``stages``:
    what each request is run through (default: generation, then judging and scoring as the
    settings ask). ``on_message``: receives the worker's one-line reports; ``sleep``,
    ``clock``: injected by tests.

    What the worker can check of itself is checked before the first claim (its servers, the
    program it serves with, its route's key, a price for each judge): it refuses to start
    rather than fail requests.
    A failure that is the worker's, not the request's (:mod:`intima.service.worker_checks`),
    releases the request to the queue (``summary.released``); the worker does not take it again
    while draining (for a minute otherwise) and waits longer after each such failure in a row;
    a draining worker stops after :data:`~intima.service.worker_claims.FAULTS_IN_A_ROW` of
    them. A draining worker that cannot read the queue for ``settings.give_up_s`` raises
    :class:`~intima.service.queue.QueueUnavailable`.

    A request fails (with the reason) when generation leaves prompts unanswered or a judge's
    judgments are all unscored; the summary counts failed requests and, for finished ones,
    unscored judgments, each with its reasons.
    """
    s = settings if settings is not None else WorkerSettings()
    # The worker's own settings are checked before anything is claimed: a bad one must not
    # use up a request's attempts, nor fail the backlog.
    s.spending.require(s.judges)  # a cap needs a price for each judge: refuse to start
    spent = s.spending.budget()  # what the worker spends, over every request it runs
    check_before_claiming(s.base_urls, s.results, s.route, s.serve, s.judges)
    pause = sleep or time.sleep  # looked up now: tests replace time.sleep
    pipeline = (
        list(stages)
        if stages is not None
        else default_stages(s.judges, score=s.score, max_reasks=s.max_reasks)
    )
    summary = WorkSummary(worker_id=worker_id or new_worker_id())
    source = queue if queue is not None else LocalQueue(store_path)
    claims = Claims(s, source, summary, clock, pause, on_message)
    with Store.open(store_path) as store:
        while not spent.exhausted:
            req = claims.next()
            if req is None:
                return summary
            outcome, reasons = _run_one(store, source, req, pipeline, s, spent, on_message)
            if outcome == "stopped":  # the spending limit, reached during the request
                break
            if not claims.settle(req, outcome, reasons):
                return summary
    summary.stopped = str(budget_reached(spent))
    return summary


def _run_one(
    store: Store,
    source: RequestQueue,
    req: RequestRecord,
    pipeline: Sequence[Stage],
    s: WorkerSettings,
    spent: Budget,
    on_message: OnMessage | None,
) -> tuple[str, Counter[str]]:
    """One claimed request: refused as it stands, or run with the worker's own knobs."""
    try:
        # Checked where it runs: a request file may have been written by anyone.
        wanted = runnable_config(req, public=source.public)
        s.spending.require([wanted])  # a cap needs its price: before a server is started for it
    except (RequestRefused, NoPrice) as exc:
        return _failed(source, req, req.worker_id or "", str(exc), on_message)
    config = _config_for(wanted, s)
    return _process(
        store,
        source,
        req,
        pipeline,
        s,
        config=config,
        spent=spent,
        wanted=wanted,
        on_message=on_message,
    )


def _process(
    store: Store,
    queue: RequestQueue,
    req: RequestRecord,
    pipeline: Sequence[Stage],
    s: WorkerSettings,
    *,
    config: ModelConfig,
    spent: Budget,
    wanted: ModelConfig,
    on_message: OnMessage | None,
) -> tuple[str, Counter[str]]:
    """Run the stages (and publish) under a renewed lease; returns 'finished', 'failed',
    'released', 'cancelled' or 'lost', with the failure's or release's reason or the reasons of
    the work left unscored. ``wanted``: the request's configuration before the worker's servers.

    A request cancelled in the queue, or whose lease another worker took, stops at the next
    heartbeat: no prompt or judgment starts after it (those in flight are stored), nothing is
    published, and what was stored stays for whoever runs the request again."""
    serve, route = s.serve, s.route

    def stopping(why: Gone) -> None:
        _say(
            on_message,
            f"{req.request_id}: {_GONE[why]}; stopping: nothing new starts, what is "
            "in flight is stored",
        )

    beat = Heartbeat(queue, req.request_id, req.worker_id or "", s.lease_s, stopping)
    beat.start()
    worker_id = req.worker_id or ""
    published: list[str] = []
    try:
        # Inside the lease: loading a model can take longer than a lease.
        with serving(config, serve, route) as config:
            if config.parsed.base_urls and (serve is not None or route is not None):
                _say(on_message, f"{req.request_id}: {req.spec} at {config.parsed.base_urls[0]}")
            check_supplied(wanted, config)
            prompts, of = _prompts_for(req, s.dataset, s.limit)
            ctx = StageContext(
                store=store,
                request=req,
                config=config,
                prompts=prompts,
                on_message=on_message,
                spending=s.spending,
                spent=spent,
                stop=beat.is_gone,
            )
            try:
                for stage in pipeline:
                    if beat.is_gone():
                        break
                    stage(ctx)
            except StageFailed as exc:
                if serve is None and not beat.is_gone():  # a server gone mid-run: not the request
                    check_supplied(wanted, config, after=exc)
                raise
            if beat.held():  # asked again now: a cancel since the last beat counts too
                if len(prompts) < of:  # a smoke test is no result: not finished nor published
                    beat.stop()
                    return _smoke_tested(queue, req, worker_id, len(prompts), of, on_message)
                if s.results is not None:
                    published.append(_publish(store, s.results, _unique(ctx.run_ids), on_message))
    except (KeyboardInterrupt, SystemExit):
        beat.stop()
        if queue.release(req.request_id, worker_id, "worker stopped; released"):
            _say(on_message, f"{req.request_id}: released to the queue; finished answers kept")
        raise
    except BudgetReached as exc:
        beat.stop()  # not the request's fault: another worker (or a bigger budget) finishes it
        if queue.release(req.request_id, worker_id, f"{exc}; released"):
            _say(on_message, f"{req.request_id}: {exc}; released to the queue, answers kept")
        return "stopped", Counter()
    except IntimaError as exc:
        beat.stop()
        if beat.gone is not None:  # the stages stopped because the request went: no failure
            return _gone(req, beat.gone, on_message)
        if (mine := workers_fault(exc)) is not None:
            return _released(queue, req, worker_id, mine, on_message)
        return _failed(queue, req, worker_id, str(exc), on_message)
    except Exception as exc:  # a bug or an unexpected library error must not stop the worker
        beat.stop()
        if beat.gone is not None:
            return _gone(req, beat.gone, on_message)
        return _failed(queue, req, worker_id, f"{type(exc).__name__}: {exc}", on_message)
    beat.stop()
    if beat.gone is not None:
        return _gone(req, beat.gone, on_message)
    if not queue.finish(req.request_id, worker_id, _unique(ctx.run_ids), published):
        # Gone between the last look and now, while publishing: the bundle is out already.
        why = why_gone(queue, req.request_id)
        _say(
            on_message,
            f"{req.request_id}: {_GONE[why]} as its bundle was published; the "
            "request keeps its status",
        )
        return why, Counter()
    if ctx.unscored:
        n = sum(ctx.unscored.values())
        _say(on_message, f"{req.request_id}: finished with {n} judgment(s) unscored")
    else:
        _say(on_message, f"{req.request_id}: finished")
    return "finished", ctx.unscored


def _gone(req: RequestRecord, why: Gone, on_message: OnMessage | None) -> tuple[str, Counter[str]]:
    """The request stopped being this worker's while it ran: say which, publish nothing."""
    _say(
        on_message,
        f"{req.request_id}: {_GONE[why]}; stopped: nothing published, the "
        "answers stored so far are kept",
    )
    return why, Counter()


_GONE: dict[Gone, str] = {
    "cancelled": "cancelled in the queue while running",
    "lost": "lease lost to another worker, which carries on with the request",
}


def _publish(store: Store, dest: str, run_ids: list[str], on_message: OnMessage | None) -> str:
    from intima.service.worker_results import publish_results

    manifest, where = publish_results(store, dest, run_ids)
    _say(on_message, f"published bundle {manifest.bundle_id} to {dest}")
    return where


def _failed(
    queue: RequestQueue,
    req: RequestRecord,
    worker_id: str,
    reason: str,
    on_message: OnMessage | None,
) -> tuple[str, Counter[str]]:
    reason = redact(reason)  # as stored: secrets from the environment blanked out
    if not queue.fail(req.request_id, worker_id, reason):
        return "lost", Counter()
    _say(on_message, f"{req.request_id}: failed: {reason}")
    return "failed", Counter({reason: 1})


def _released(
    queue: RequestQueue,
    req: RequestRecord,
    worker_id: str,
    reason: str,
    on_message: OnMessage | None,
) -> tuple[str, Counter[str]]:
    """Give the request back for a failure of this worker's (or its network's), not the
    request's: it keeps its attempts and its answers, for this worker later or another one."""
    reason = redact(reason)[:MAX_REASON_CHARS]
    if not queue.release(req.request_id, worker_id, f"released: the worker's failure: {reason}"):
        return "lost", Counter()
    _say(
        on_message,
        f"{req.request_id}: released to the queue, answers kept: this worker's "
        f"failure, not the request's: {reason}",
    )
    return "released", Counter({reason: 1})


def _config_for(wanted: ModelConfig, s: WorkerSettings) -> ModelConfig:
    """The request's model and settings with the worker's own operational knobs (none changes
    the cache key, so answers are shared)."""
    update: dict[str, object] = {"allow_unlisted_model": s.allow_unlisted_model}
    if s.timeout_s is not None:
        update["timeout_s"] = s.timeout_s
    if s.base_urls and not wanted.parsed.base_urls:
        update["base_urls"] = tuple(s.base_urls)
    if s.concurrency is not None:
        update["concurrency"] = s.concurrency
    if s.max_retries is not None:
        update["max_retries"] = s.max_retries
    return ModelConfig.model_validate({**wanted.model_dump(), **update})


def _prompts_for(
    req: RequestRecord, dataset: str | None, limit: int | None
) -> tuple[PromptSet, int]:
    """The prompts to run, and how many the request asks for."""
    if req.dataset == "hub" and dataset:
        # A path, always: ``--dataset demo`` once answered a hub request with the demo prompts
        # and recorded it as hub.
        full = load_prompts(Path(dataset).resolve())
    else:
        full = load_prompts(req.dataset)
    return full.first(limit), len(full)


def _smoke_tested(
    queue: RequestQueue,
    req: RequestRecord,
    worker_id: str,
    n: int,
    of: int,
    on_message: OnMessage | None,
) -> tuple[str, Counter[str]]:
    """``--limit`` ran part of the request: it goes back to the queue for a full run (its
    answers kept, its attempt not counted), never finished and never published."""
    note = f"smoke test (--limit): {n} of {of} prompts run, answers kept; released for a full run"
    if not queue.release(req.request_id, worker_id, note):
        return "lost", Counter()
    _say(on_message, f"{req.request_id}: {note}")
    return "smoke_tested", Counter()


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))
