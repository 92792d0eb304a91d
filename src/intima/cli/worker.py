"""``intima worker``: take requests from a queue and run them (generate, judge, score)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from intima.cli._common import DEFAULT_STORE, StoreOpt, app, console, for_terminal, out
from intima.cli._params import AllowUnlistedOpt, PricesOpt, max_cost_option, nonempty
from intima.cli._serve import (
    GpuMemoryOpt,
    MaxModelLenOpt,
    RouteOpt,
    ServeCommandOpt,
    ServeEnvOpt,
    ServeOpt,
    ServeTimeoutOpt,
    TensorParallelOpt,
    serve_settings,
)
from intima.cli._signals import stop_cleanly_on_sigterm
from intima.cli.judge import (
    DEFAULT_JUDGE_MAX_TOKENS,
    DEFAULT_STRUCTURED_OUTPUT,
    ApiKeyEnvOpt,
    JudgeMaxTokensOpt,
    MaxReasksOpt,
    StructuredOutputOpt,
    judge_configs,
    report_failures,
)
from intima.cli.queue import QueueOpt
from intima.service.queue import RequestQueue
from intima.service.worker_settings import DEFAULT_GIVE_UP_S

if TYPE_CHECKING:  # pragma: no cover
    from intima.service.worker import WorkSummary


def worker_cmd(
    once: Annotated[bool, typer.Option(help="Process one request, then exit.")] = False,
    drain: Annotated[
        bool, typer.Option(help="Exit when nothing is pending or running (else wait for more).")
    ] = False,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge",
            "-j",
            parser=nonempty,
            help="Judge model spec PROVIDER[:MODEL][@URL,...]; repeatable (default: no judge).",
        ),
    ] = None,
    score: Annotated[
        bool, typer.Option(help="Also score with the offline affect measure.")
    ] = False,
    dataset: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            help="Local copy of INTIMA (file or folder) for 'hub' requests (default: the Hub).",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Smoke test: run only the first N prompts of each request, then give it back "
            "to the queue for a full run (never finished, never published; default: all).",
        ),
    ] = None,
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url",
            parser=nonempty,
            help="Server for requests that name no server; repeatable (default: none).",
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=4096,
            help="Requests in flight per model and per judge on this machine (default: the "
            "provider's).",
        ),
    ] = None,
    max_retries: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=50,
            help="Retries per prompt and per judge request (default: the request's, 6).",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            max=86400.0,
            help="Seconds before a request is retried (default: the request's; judges 120).",
        ),
    ] = None,
    structured_output: StructuredOutputOpt = DEFAULT_STRUCTURED_OUTPUT,
    max_tokens: JudgeMaxTokensOpt = DEFAULT_JUDGE_MAX_TOKENS,
    max_reasks: MaxReasksOpt = 2,
    api_key_env: ApiKeyEnvOpt = None,
    lease: Annotated[
        float,
        typer.Option(
            min=1.0, max=86400.0, help="Seconds a claim holds a request; renewed while working."
        ),
    ] = 120.0,
    poll: Annotated[
        float,
        typer.Option(min=0.01, max=3600.0, help="Seconds between looks at an empty queue."),
    ] = 2.0,
    allow_unlisted_model: AllowUnlistedOpt = False,
    max_attempts: Annotated[
        int, typer.Option(min=1, max=100, help="Give up on a request after N claims.")
    ] = 3,
    give_up_after: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=86400.0,
            help="With --drain: seconds the queue may stay unreachable before the worker stops "
            "with the reason (exit 2).",
        ),
    ] = DEFAULT_GIVE_UP_S,
    store: StoreOpt = DEFAULT_STORE,
    queue: QueueOpt = None,
    results: Annotated[
        str | None,
        typer.Option(
            parser=nonempty,
            help="Publish each finished request's results bundle here: a folder (each bundle in "
            "its bundles/BUNDLE_ID, as in a results repo) or hf://datasets/OWNER/NAME (default: "
            "keep them in the store).",
        ),
    ] = None,
    serve: ServeOpt = None,
    serve_command: ServeCommandOpt = None,
    tensor_parallel: TensorParallelOpt = 1,
    gpu_memory_utilization: GpuMemoryOpt = None,
    max_model_len: MaxModelLenOpt = None,
    serve_timeout: ServeTimeoutOpt = 1800.0,
    serve_env: ServeEnvOpt = None,
    route: RouteOpt = None,
    prices: PricesOpt = None,
    max_cost: Annotated[
        float | None,
        max_cost_option(
            " over every request this worker runs, plus one call's worst case, held as `run "
            "--max-cost` holds it; a request for a model with no price fails; once spent, the "
            "request in hand goes back to the queue and the worker stops"
        ),
    ] = None,
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
        list(judge or []), None, judging,
        structured_output=structured_output, api_key_env=api_key_env, concurrency=concurrency,
        timeout=120.0 if timeout is None else timeout,
        max_retries=6 if max_retries is None else max_retries,
        allow_unlisted_model=allow_unlisted_model,
    )  # fmt: skip
    settings = WorkerSettings(
        once=once, drain=drain, judges=tuple(judges), score=score, max_reasks=max_reasks,
        dataset=None if dataset is None else str(dataset), limit=limit,
        base_urls=tuple(base_url or ()), concurrency=concurrency, max_retries=max_retries,
        timeout_s=timeout, allow_unlisted_model=allow_unlisted_model, lease_s=lease,
        poll_s=poll, give_up_s=give_up_after, max_attempts=max_attempts, results=results,
        serve=serve_settings(serve, serve_command, tensor_parallel, gpu_memory_utilization,
                             max_model_len, serve_timeout, route=route, base_url=base_url,
                             env=serve_env),
        route=route,
        spending=SpendingSettings.from_options(prices, max_cost),  # --prices over the default
    )  # fmt: skip
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
            if summary.smoke_tested else ""
        ),
        highlight=False, markup=False, soft_wrap=True,
    )  # fmt: skip
    if summary.stopped:
        _say(f"worker stopped: {summary.stopped}")
    failed = report_failures("request(s) failed", summary.failed_reasons)
    unscored = report_failures(
        "judgment(s) unscored in finished requests", summary.unscored_reasons,
        "`intima judge` with the same judge retries them.",
    )  # fmt: skip
    released = report_failures(
        "request(s) released to the queue for this worker's own failure, not theirs",
        summary.released_reasons, "Fix the worker and run it again; the requests wait.",
    )  # fmt: skip
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
