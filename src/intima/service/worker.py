"""The worker: take queued requests one at a time and run them through the pipeline's stages
(:mod:`intima.service.stages`: generation, then judging and scoring when configured).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from intima.core.config import ModelConfig, PriceTable
from intima.core.errors import IntimaError
from intima.dataset import PromptSet, load_prompts
from intima.service.backoff import MAX_WAIT_S, Backoff
from intima.service.heartbeat import Heartbeat
from intima.service.model_server import Route, ServeSettings, serving
from intima.service.queue import (
    DEFAULT_LEASE_S,
    DEFAULT_MAX_ATTEMPTS,
    MAX_REASON_CHARS,
    LocalQueue,
    QueueUnavailable,
    RequestQueue,
    RequestRecord,
    redact,
)
from intima.service.request_policy import RequestRefused, runnable_config
from intima.service.spending import BudgetReached, NoPrice, Spending
from intima.service.stages import (  # re-exported: the worker's API names them
    OnMessage,
    Stage,
    StageContext,
    StageFailed,
    default_stages,
    generation_stage,
    judging_stage,
    scoring_stage,
)
from intima.service.stages import say as _say
from intima.service.worker_checks import check_before_claiming, check_supplied, workers_fault
from intima.store import Store, claim_owner

__all__ = [
    "DEFAULT_GIVE_UP_S", "OnMessage", "Stage", "StageContext", "StageFailed", "WorkSummary",
    "default_stages", "generation_stage", "judging_stage", "scoring_stage", "work",
]  # fmt: skip

#: Seconds a draining worker keeps trying to reach a queue it cannot read before it stops.
DEFAULT_GIVE_UP_S = 120.0
#: Requests released in a row for the worker's own failure after which a draining worker stops.
FAULTS_IN_A_ROW = 3


class WorkSummary(BaseModel):
    worker_id: str
    claimed: int = 0
    finished: int = 0
    failed: int = 0
    lost: int = 0  # leases taken over by another worker while this one was still working
    #: given back to the queue for the worker's own failure (not the request's)
    released: int = 0
    #: Why requests were released: reason -> count.
    released_reasons: dict[str, int] = {}
    #: run on the first ``limit`` prompts only, then given back (never finished, never published)
    smoke_tested: int = 0
    #: Why the worker stopped before the queue was done (its --max-cost), if it did.
    stopped: str | None = None
    #: Why requests failed: reason -> count.
    failed_reasons: dict[str, int] = {}
    #: Judgments left unscored in requests that finished: reason -> count.
    unscored_reasons: dict[str, int] = {}

    @property
    def unscored(self) -> int:
        return sum(self.unscored_reasons.values())


def new_worker_id() -> str:
    return claim_owner()


def work(
    store_path: Path | str,
    *,
    once: bool = False,
    drain: bool = False,
    stages: Sequence[Stage] | None = None,
    judges: Sequence[ModelConfig] = (),
    score: bool = False,
    dataset: str | None = None,
    limit: int | None = None,
    base_urls: Sequence[str] = (),
    concurrency: int | None = None,
    max_retries: int | None = None,
    timeout_s: float | None = None,
    max_reasks: int | None = None,
    lease_s: float = DEFAULT_LEASE_S,
    poll_s: float = 2.0,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    worker_id: str | None = None,
    on_message: OnMessage | None = None,
    queue: RequestQueue | None = None,
    results: str | None = None,
    serve: ServeSettings | None = None,
    route: Route | None = None,
    give_up_s: float = DEFAULT_GIVE_UP_S,
    allow_unlisted_model: bool = False,
    clock: Callable[[], float] = time.monotonic,
    prices: PriceTable | None = None,
    max_cost: float | None = None,
    sleep: Callable[[float], None] | None = None,
) -> WorkSummary:
    """Process queued requests one by one.

    ``queue``: where requests come from (default: the store's own queue; a
    :class:`~intima.service.hub_queue.HubQueue` for a requests repo on the Hub). ``results``: a
    folder or ``hf://datasets/OWNER/NAME`` that each finished request's bundle is published to
    before the request is marked finished (a failed publish fails the request with the reason).

    ``once``: process at most one request, then return. ``drain``: return when nothing is
    pending or running (otherwise wait for new requests for ever); a draining worker that
    cannot read the queue for ``give_up_s`` seconds in a row raises
    :class:`~intima.service.queue.QueueUnavailable` (a worker that is not draining keeps trying).
    Between tries at an unreachable queue it waits ``poll_s``, then twice as long each time, up
    to a minute, and says so when the failure starts or changes (``sleep``, ``clock``: injected
    by tests).
    ``dataset``: where to read the prompts of requests that ask for ``hub`` (a local copy when
    the Hub is out of reach).
    ``base_urls``: servers for requests that name a model but no server. ``concurrency``:
    requests in flight per model on this worker's machine; ``max_retries``: retries per prompt
    (neither changes the answers, so neither is part of the cache key); ``allow_unlisted_model``:
    run a request even if its server does not list the model; ``timeout_s``: seconds
    before a request is retried. ``max_reasks``: times an invalid judge reply is asked again.
    ``serve``: start a model server for each request for a Hub model (stopped after it; a model
    that fails to load fails the request with the server's reason); ``route="hf"``: send those
    requests to Inference Providers. Neither changes a configuration key.
    ``max_cost``: USD this worker may spend over all its requests (``prices`` says what each
    model costs; a request for a model with no price fails); once it is spent, the request in
    hand goes back to the queue and the worker stops (``summary.stopped``).

    What the worker can check of itself is checked before the first claim (its servers, the
    program it serves with, its route's key): it refuses to start rather than fail requests.
    A failure that is the worker's, not the request's (:mod:`intima.service.worker_checks`),
    releases the request to the queue (``summary.released``); the worker does not take it again
    while draining (for a minute otherwise) and waits longer after each such failure in a row;
    a draining worker stops after :data:`FAULTS_IN_A_ROW` of them.

    A request fails (with the reason) when generation leaves prompts unanswered or a judge's
    judgments are all unscored; the summary counts failed requests and, for finished ones,
    unscored judgments, each with its reasons.
    """
    if lease_s <= 0 or poll_s <= 0 or give_up_s < 0:
        raise IntimaError(
            "--lease and --poll must be positive numbers of seconds, --give-up-after at least 0"
        )
    # The worker's own options are checked before anything is claimed: a bad one must not use
    # up a request's attempts, nor fail the backlog.
    spending = Spending(prices, max_cost)
    spending.check_judges(judges)
    check_before_claiming(base_urls, results, route, serve, judges)
    pause = sleep or time.sleep  # looked up now: tests replace time.sleep
    pipeline = (
        list(stages)
        if stages is not None
        else default_stages(judges, score=score, max_reasks=max_reasks)
    )
    failed_reasons: Counter[str] = Counter()
    unscored_reasons: Counter[str] = Counter()
    released_reasons: Counter[str] = Counter()
    summary = WorkSummary(worker_id=worker_id or new_worker_id())
    source = queue if queue is not None else LocalQueue(store_path)
    unreachable_since: float | None = None
    outage, faults = Backoff(poll_s), Backoff(poll_s)
    #: requests this worker gave back for its own failure -> until when it leaves them alone
    passed: dict[str, float] = {}
    with Store.open(store_path) as store:
        while True:
            if spending.exhausted:
                summary.stopped = spending.reached()
                return summary
            skip = _still_passed(passed, clock) if passed else ()
            try:
                req = source.claim_next(
                    summary.worker_id, lease_s, max_attempts=max_attempts, skip=skip
                )
            except QueueUnavailable as exc:
                if once:
                    raise
                at = clock()
                unreachable_since = at if unreachable_since is None else unreachable_since
                waited = at - unreachable_since
                if drain and waited >= give_up_s:
                    # A draining worker must end: an unreachable queue cannot be known empty.
                    raise QueueUnavailable(
                        f"{exc}; stopped after {waited:.0f} s without reaching the queue "
                        f"(--give-up-after {give_up_s:g}); nothing was claimed meanwhile"
                    ) from exc
                # A queue on the Hub can be out of reach for a while; keep the worker alive,
                # asking less often the longer it lasts, and saying so once, not every try.
                wait = outage.next_wait()
                if drain:
                    wait = min(wait, max(give_up_s - waited, poll_s))
                if outage.news(str(exc)):
                    then = f"then less often (at most every {MAX_WAIT_S:g} s) while it lasts"
                    _say(on_message, f"{exc}; trying again in {wait:g} s, {then}")
                pause(wait)
                continue
            unreachable_since = None
            if outage.reset():
                _say(on_message, "the queue answers again")
            if req is None:
                # A draining worker that passed requests over ends when nothing else is left.
                if once or (drain and (skip or source.idle())):
                    return summary
                pause(poll_s)
                continue
            summary.claimed += 1
            _say(on_message, f"{req.request_id}: {req.spec} (attempt {req.attempts})")
            try:
                # Checked where it runs: a request file may have been written by anyone.
                wanted = runnable_config(req, public=source.public)
                spending.check_price(wanted)  # before a server is started for it
            except (RequestRefused, NoPrice) as exc:
                outcome, reasons = _failed(source, req, req.worker_id or "", str(exc), on_message)
            else:
                config = _config_for(wanted, base_urls, concurrency, max_retries, timeout_s,
                                     allow_unlisted_model)  # fmt: skip
                outcome, reasons = _process(store, source, req, pipeline, dataset=dataset,
                                            limit=limit, config=config, lease_s=lease_s,
                                            results=results, on_message=on_message,
                                            serve=serve, route=route, spending=spending,
                                            wanted=wanted)  # fmt: skip
            if outcome == "stopped":
                summary.stopped = spending.reached()
                return summary
            setattr(summary, outcome, getattr(summary, outcome) + 1)
            if outcome == "released":
                released_reasons.update(reasons)
                summary.released_reasons = dict(released_reasons)
                passed[req.request_id] = math.inf if (drain or once) else clock() + MAX_WAIT_S
                if drain and faults.failures + 1 >= FAULTS_IN_A_ROW:
                    summary.stopped = (
                        f"{FAULTS_IN_A_ROW} requests in a row released for this worker's own "
                        f"failure (the last: {next(iter(reasons))}); they wait in the queue"
                    )
                    return summary
                if not once:
                    wait = faults.next_wait()
                    _say(on_message, f"waiting {wait:g} s before the next claim")
                    pause(wait)
            elif outcome != "lost":
                faults.reset()
            if outcome == "smoke_tested":
                passed[req.request_id] = math.inf  # tried once; it waits for a full run
            if outcome == "failed":
                failed_reasons.update(reasons)
            elif outcome == "finished":
                unscored_reasons.update(reasons)
            summary.failed_reasons = dict(failed_reasons)
            summary.unscored_reasons = dict(unscored_reasons)
            if once:
                return summary


def _process(
    store: Store,
    queue: RequestQueue,
    req: RequestRecord,
    pipeline: Sequence[Stage],
    *,
    dataset: str | None,
    limit: int | None,
    config: ModelConfig,
    lease_s: float,
    results: str | None,
    on_message: OnMessage | None,
    serve: ServeSettings | None = None,
    route: Route | None = None,
    spending: Spending | None = None,
    wanted: ModelConfig | None = None,
) -> tuple[str, Counter[str]]:
    """Run the stages (and publish) under a renewed lease; returns 'finished', 'failed',
    'released' or 'lost', with the failure's or release's reason or the reasons of the work
    left unscored. ``wanted``: the request's configuration before the worker's servers."""
    beat = Heartbeat(queue, req.request_id, req.worker_id or "", lease_s)
    beat.start()
    worker_id = req.worker_id or ""
    published: list[str] = []
    try:
        # Inside the lease: loading a model can take longer than a lease.
        with serving(config, serve, route) as config:
            if config.parsed.base_urls and (serve is not None or route is not None):
                _say(on_message, f"{req.request_id}: {req.spec} at {config.parsed.base_urls[0]}")
            check_supplied(wanted or config, config)
            prompts, of = _prompts_for(req, dataset, limit)
            ctx = StageContext(
                store=store, request=req, config=config, prompts=prompts,
                on_message=on_message, spending=spending or Spending(),
            )  # fmt: skip
            try:
                for stage in pipeline:
                    stage(ctx)
            except StageFailed as exc:
                if serve is None:  # a server that went away mid-run is no fault of the request
                    check_supplied(wanted or config, config, after=exc)
                raise
            if len(prompts) < of:  # a smoke test is no result: neither finished nor published
                beat.stop()
                return _smoke_tested(queue, req, worker_id, len(prompts), of, on_message)
            if results is not None:
                published.append(_publish(store, results, _unique(ctx.run_ids), on_message))
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
        if (mine := workers_fault(exc)) is not None:
            return _released(queue, req, worker_id, mine, on_message)
        return _failed(queue, req, worker_id, str(exc), on_message)
    except Exception as exc:  # a bug or an unexpected library error must not stop the worker
        beat.stop()
        return _failed(queue, req, worker_id, f"{type(exc).__name__}: {exc}", on_message)
    beat.stop()
    if not queue.finish(req.request_id, worker_id, _unique(ctx.run_ids), published):
        _say(on_message, f"{req.request_id}: lease lost to another worker; its result stands")
        return "lost", Counter()
    if ctx.unscored:
        n = sum(ctx.unscored.values())
        _say(on_message, f"{req.request_id}: finished with {n} judgment(s) unscored")
    else:
        _say(on_message, f"{req.request_id}: finished")
    return "finished", ctx.unscored


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
    _say(on_message, f"{req.request_id}: released to the queue, answers kept: this worker's "
                     f"failure, not the request's: {reason}")  # fmt: skip
    return "released", Counter({reason: 1})


def _still_passed(passed: dict[str, float], clock: Callable[[], float]) -> set[str]:
    """The requests this worker still leaves alone (their time is up: forget them)."""
    now = clock()
    for request_id in [r for r, until in passed.items() if until <= now]:
        del passed[request_id]
    return set(passed)


def _config_for(
    wanted: ModelConfig,
    base_urls: Sequence[str],
    concurrency: int | None,
    max_retries: int | None,
    timeout_s: float | None = None,
    allow_unlisted_model: bool = False,
) -> ModelConfig:
    """The request's model and settings with the worker's own operational knobs (none changes
    the cache key, so answers are shared)."""
    update: dict[str, object] = {"allow_unlisted_model": allow_unlisted_model}
    if timeout_s is not None:
        update["timeout_s"] = timeout_s
    if base_urls and not wanted.parsed.base_urls:
        update["base_urls"] = tuple(base_urls)
    if concurrency is not None:
        update["concurrency"] = concurrency
    if max_retries is not None:
        update["max_retries"] = max_retries
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
