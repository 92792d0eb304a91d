"""The worker: take queued requests one at a time and run them through the pipeline's stages.

The pipeline is a list of stages (callables taking a :class:`StageContext`): generation
first, then judging and scoring when they are configured. A stage that is not configured is
simply not in the list. Every stage must be resumable (skip what is already stored), because a
worker killed mid-request leaves its request to the next worker once the lease runs out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from intima.core.config import ModelConfig
from intima.core.errors import IntimaError
from intima.dataset import PromptSet, load_prompts
from intima.service.queue import (
    DEFAULT_LEASE_S,
    DEFAULT_MAX_ATTEMPTS,
    RequestRecord,
    claim_next,
    fail,
    finish,
    heartbeat,
    list_requests,
    release,
)
from intima.store import Store, claim_owner

#: Receives the worker's one-line reports; they hold untrusted text (model specs, server
#: errors), so a terminal must escape them (the CLI does).
OnMessage = Callable[[str], None]


class StageFailed(IntimaError):
    """A stage could not complete the request; the message becomes the request's reason."""


@dataclass
class StageContext:
    store: Store
    request: RequestRecord
    config: ModelConfig
    prompts: PromptSet
    run_ids: list[str] = field(default_factory=list)
    on_message: OnMessage | None = None


Stage = Callable[[StageContext], None]


class WorkSummary(BaseModel):
    worker_id: str
    claimed: int = 0
    finished: int = 0
    failed: int = 0
    lost: int = 0  # leases taken over by another worker while this one was still working


def generation_stage(ctx: StageContext) -> None:
    """Ask the model for every prompt still missing; stored answers are reused."""
    from intima.generate import runner

    summaries = runner.generate(ctx.store, ctx.prompts, [ctx.config])
    ctx.run_ids.extend(s.run_id for s in summaries)
    bad = [s for s in summaries if s.status != "complete"]
    if bad:
        s = bad[0]
        raise StageFailed(
            f"generation {s.status}: {s.failed} of {s.n_prompts} prompts failed after retries; "
            "request the model again to retry the missing ones"
        )


def judging_stage(judges: Sequence[ModelConfig]) -> Stage:
    """Judge every response of the request's runs with each judge (resumable: only missing)."""
    from intima.judges.loop import judge

    def stage(ctx: StageContext) -> None:
        judge(ctx.store, list(judges), ctx.run_ids)

    return stage


def scoring_stage() -> Stage:
    """Score the request's responses with the offline affect measure (only unscored ones)."""
    from intima.affect.store_io import score_store

    def stage(ctx: StageContext) -> None:
        score_store(ctx.store, ctx.run_ids)

    return stage


def default_stages(judges: Sequence[ModelConfig] = (), *, score: bool = False) -> list[Stage]:
    stages: list[Stage] = [generation_stage]
    if judges:
        stages.append(judging_stage(judges))
    if score:
        stages.append(scoring_stage())
    return stages


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
    lease_s: float = DEFAULT_LEASE_S,
    poll_s: float = 2.0,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    worker_id: str | None = None,
    on_message: OnMessage | None = None,
) -> WorkSummary:
    """Process queued requests one by one.

    ``once``: process at most one request, then return. ``drain``: return when nothing is
    pending or running (otherwise wait for new requests for ever). ``dataset``: where to read
    the prompts of requests that ask for ``hub`` (a local copy when the Hub is out of reach).
    ``base_urls``: servers for requests that name a model but no server. ``concurrency``:
    requests in flight per model on this worker's machine; ``max_retries``: retries per prompt
    (neither changes the answers, so neither is part of the cache key).
    """
    if lease_s <= 0 or poll_s <= 0:
        raise IntimaError("--lease and --poll must be positive numbers of seconds")
    pipeline = list(stages) if stages is not None else default_stages(judges, score=score)
    summary = WorkSummary(worker_id=worker_id or new_worker_id())
    with Store.open(store_path) as store:
        while True:
            req = claim_next(store, summary.worker_id, lease_s, max_attempts=max_attempts)
            if req is None:
                if once or (drain and _queue_idle(store)):
                    return summary
                time.sleep(poll_s)
                continue
            summary.claimed += 1
            _say(on_message, f"{req.request_id}: {req.spec} (attempt {req.attempts})")
            outcome = _process(store, req, pipeline, dataset=dataset, limit=limit,
                               config=_config_for(req, base_urls, concurrency, max_retries),
                               lease_s=lease_s, on_message=on_message)  # fmt: skip
            setattr(summary, outcome, getattr(summary, outcome) + 1)
            if once:
                return summary


def _queue_idle(store: Store) -> bool:
    return not any(r.status in ("pending", "running") for r in list_requests(store))


def _process(
    store: Store,
    req: RequestRecord,
    pipeline: Sequence[Stage],
    *,
    dataset: str | None,
    limit: int | None,
    config: ModelConfig,
    lease_s: float,
    on_message: OnMessage | None,
) -> str:
    """Run the stages under a renewed lease; returns 'finished', 'failed' or 'lost'."""
    beat = _Heartbeat(store.path, req.request_id, req.worker_id or "", lease_s)
    beat.start()
    worker_id = req.worker_id or ""
    try:
        ctx = StageContext(
            store=store, request=req, config=config,
            prompts=_prompts_for(req, dataset, limit), on_message=on_message,
        )  # fmt: skip
        for stage in pipeline:
            stage(ctx)
    except (KeyboardInterrupt, SystemExit):
        beat.stop()
        release(store, req.request_id, worker_id, "worker stopped; released")
        raise
    except IntimaError as exc:
        beat.stop()
        return _failed(store, req, worker_id, str(exc), on_message)
    except Exception as exc:  # a bug or an unexpected library error must not stop the worker
        beat.stop()
        return _failed(store, req, worker_id, f"{type(exc).__name__}: {exc}", on_message)
    beat.stop()
    if not finish(store, req.request_id, worker_id, _unique(ctx.run_ids)):
        _say(on_message, f"{req.request_id}: lease lost to another worker; its result stands")
        return "lost"
    _say(on_message, f"{req.request_id}: finished")
    return "finished"


def _failed(
    store: Store, req: RequestRecord, worker_id: str, reason: str, on_message: OnMessage | None
) -> str:
    if not fail(store, req.request_id, worker_id, reason):
        return "lost"
    _say(on_message, f"{req.request_id}: failed: {reason}")
    return "failed"


def _config_for(
    req: RequestRecord, base_urls: Sequence[str], concurrency: int | None, max_retries: int | None
) -> ModelConfig:
    """Operational knobs only: neither changes the cache key, so answers are shared."""
    update: dict[str, object] = {}
    if base_urls and not req.config.parsed.base_urls:
        update["base_urls"] = tuple(base_urls)
    if concurrency is not None:
        update["concurrency"] = concurrency
    if max_retries is not None:
        update["max_retries"] = max_retries
    return ModelConfig.model_validate({**req.config.model_dump(), **update})


def _prompts_for(req: RequestRecord, dataset: str | None, limit: int | None) -> PromptSet:
    source = dataset if (req.dataset == "hub" and dataset) else req.dataset
    return load_prompts(source).first(limit)


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _say(on_message: OnMessage | None, text: str) -> None:
    if on_message is not None:
        on_message(text)


class _Heartbeat:
    """Renews the lease from a thread with its own connection (a Store is per thread)."""

    def __init__(self, store_path: Path, request_id: str, worker_id: str, lease_s: float) -> None:
        self._args = (store_path, request_id, worker_id, lease_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="intima-heartbeat")
        self.lost = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        path, request_id, worker_id, lease_s = self._args
        with Store.open(path) as store:
            while not self._stop.wait(lease_s / 3):
                if not heartbeat(store, request_id, worker_id, lease_s):
                    self.lost = True
                    return
