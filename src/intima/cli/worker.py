"""``intima worker``: take requests from a queue and run them (generate, judge, score)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from intima.cli._common import DEFAULT_STORE, StoreOpt, app, console, for_terminal, out
from intima.cli._judge_options import (
    DEFAULT_JUDGE_MAX_TOKENS,
    DEFAULT_STRUCTURED_OUTPUT,
    ApiKeyEnvOpt,
    JudgeMaxTokensOpt,
    MaxReasksOpt,
    StructuredOutputOpt,
    judge_configs,
)
from intima.cli._params import AllowUnlistedOpt, PricesOpt
from intima.cli._serve import (
    GpuMemoryOpt,
    MaxModelLenOpt,
    RouteOpt,
    ServeCommandOpt,
    ServeEnvOpt,
    ServeOpt,
    ServeOptions,
    ServeTimeoutOpt,
    TensorParallelOpt,
)
from intima.cli._signals import stop_cleanly_on_sigterm
from intima.cli._worker_options import (
    DrainOpt,
    GiveUpAfterOpt,
    LeaseOpt,
    MaxAttemptsOpt,
    OnceOpt,
    PollOpt,
    ResultsOpt,
    ScoreOpt,
    SmokeLimitOpt,
    WorkerBaseUrlOpt,
    WorkerConcurrencyOpt,
    WorkerDatasetOpt,
    WorkerJudgeOpt,
    WorkerMaxCostOpt,
    WorkerMaxRetriesOpt,
    WorkerTimeoutOpt,
)
from intima.cli.judge import report_failures
from intima.cli.queue import QueueOpt
from intima.service.queue import RequestQueue
from intima.service.worker_settings import DEFAULT_GIVE_UP_S

if TYPE_CHECKING:  # pragma: no cover
    from intima.service.worker import WorkSummary


def worker_cmd(
    ctx: typer.Context,
    once: OnceOpt = False,
    drain: DrainOpt = False,
    judge: WorkerJudgeOpt = None,
    score: ScoreOpt = False,
    dataset: WorkerDatasetOpt = None,
    limit: SmokeLimitOpt = None,
    base_url: WorkerBaseUrlOpt = None,
    concurrency: WorkerConcurrencyOpt = None,
    max_retries: WorkerMaxRetriesOpt = None,
    timeout: WorkerTimeoutOpt = None,
    structured_output: StructuredOutputOpt = DEFAULT_STRUCTURED_OUTPUT,
    max_tokens: JudgeMaxTokensOpt = DEFAULT_JUDGE_MAX_TOKENS,
    max_reasks: MaxReasksOpt = 2,
    api_key_env: ApiKeyEnvOpt = None,
    lease: LeaseOpt = 120.0,
    poll: PollOpt = 2.0,
    allow_unlisted_model: AllowUnlistedOpt = False,
    max_attempts: MaxAttemptsOpt = 3,
    give_up_after: GiveUpAfterOpt = DEFAULT_GIVE_UP_S,
    store: StoreOpt = DEFAULT_STORE,
    queue: QueueOpt = None,
    results: ResultsOpt = None,
    serve: ServeOpt = None,
    serve_command: ServeCommandOpt = None,
    tensor_parallel: TensorParallelOpt = 1,
    gpu_memory_utilization: GpuMemoryOpt = None,
    max_model_len: MaxModelLenOpt = None,
    serve_timeout: ServeTimeoutOpt = 1800.0,
    serve_env: ServeEnvOpt = None,
    route: RouteOpt = None,
    prices: PricesOpt = None,
    max_cost: WorkerMaxCostOpt = None,
) -> None:
    """Take pending requests one by one: generate, judge and score each.

    Exits 1 when a request failed or a judgment was left unscored (with the count and the most
    common reason) or --max-cost stopped the worker, else 0.

    Example: intima worker --drain -j openai-compat:smollm2@http://127.0.0.1:8080/v1 --score
    """
    from intima.core.spending import SpendingSettings
    from intima.judges.loop import DEFAULT_JUDGE_SETTINGS
    from intima.service.worker import WorkerSettings, work

    judging = DEFAULT_JUDGE_SETTINGS.model_copy(update={"max_tokens": max_tokens})
    judges = judge_configs(
        list(judge or []),
        None,
        judging,
        structured_output=structured_output,
        api_key_env=api_key_env,
        concurrency=concurrency,
        timeout=120.0 if timeout is None else timeout,
        max_retries=6 if max_retries is None else max_retries,
        allow_unlisted_model=allow_unlisted_model,
    )
    settings = WorkerSettings(
        once=once,
        drain=drain,
        judges=tuple(judges),
        score=score,
        max_reasks=max_reasks,
        dataset=None if dataset is None else str(dataset),
        limit=limit,
        base_urls=tuple(base_url or ()),
        concurrency=concurrency,
        max_retries=max_retries,
        timeout_s=timeout,
        allow_unlisted_model=allow_unlisted_model,
        lease_s=lease,
        poll_s=poll,
        give_up_s=give_up_after,
        max_attempts=max_attempts,
        results=results,
        serve=ServeOptions.of(ctx).settings(),
        route=route,
        spending=SpendingSettings.from_options(prices, max_cost),  # --prices over the default
    )
    stop_cleanly_on_sigterm()
    try:
        summary = work(store, settings, queue=_queue(queue), on_message=_say)
    except KeyboardInterrupt:
        # click turns Ctrl-C into a silent normal return; say what happened and exit 130. A
        # request in progress has said it was released; none may have been.
        console.print("Stopped; run the same command again to resume.")
        sys.exit(130)
    if _report(summary):
        raise typer.Exit(1)


def _report(summary: WorkSummary) -> bool:
    """Print what the worker did; True if anything failed, was left unscored or released, or
    the worker stopped early (exit 1)."""
    out.print(
        f"worker {summary.worker_id}: {summary.claimed} claimed, {summary.finished} finished, "
        f"{summary.failed} failed, {summary.lost} lost to another worker"
        + (f", {summary.cancelled} cancelled while running" if summary.cancelled else "")
        + (f", {summary.released} released to the queue" if summary.released else "")
        + (
            f", {summary.smoke_tested} smoke-tested (--limit) and released for a full run"
            if summary.smoke_tested
            else ""
        ),
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if summary.stopped:
        _say(f"worker stopped: {summary.stopped}")
    failed = report_failures("request(s) failed", summary.failed_reasons)
    unscored = report_failures(
        "judgment(s) unscored in finished requests",
        summary.unscored_reasons,
        "`intima judge` with the same judge retries them.",
    )
    released = report_failures(
        "request(s) released to the queue for this worker's own failure, not theirs",
        summary.released_reasons,
        "Fix the worker and run it again; the requests wait.",
    )
    return bool(failed or unscored or released or summary.stopped)


def _queue(url: str | None) -> RequestQueue | None:
    if url is None:
        return None
    from intima.service.hub_queue import HubQueue

    return HubQueue(url)


def _say(text: str) -> None:
    # Escaped for markup, so printed with markup on: "[redacted]" shows as itself, not "\[".
    console.print(for_terminal(text), highlight=False, soft_wrap=True)


# Registered on import; intima.cli.main imports every group.
app.command("worker")(worker_cmd)
