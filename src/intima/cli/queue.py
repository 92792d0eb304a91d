"""CLI for the request queue, the worker, and results bundles (publish / import)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.table import Table

from intima.cli._common import DEFAULT_STORE, RunOpt, StoreOpt, app, console, for_terminal, out
from intima.cli._params import AllowUnlistedOpt, IntimaGroup, nonempty
from intima.cli._serve import (
    GpuMemoryOpt,
    MaxModelLenOpt,
    RouteOpt,
    ServeCommandOpt,
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
from intima.core.config import ModelConfig
from intima.service.queue import RequestQueue, cancel
from intima.service.worker import DEFAULT_GIVE_UP_S
from intima.store import Store

QueueOpt = Annotated[
    str | None,
    typer.Option(
        "--queue",
        parser=nonempty,
        help="Request queue on the Hub, hf://datasets/OWNER/NAME (default: the store's own "
        "queue). Writing needs HF_TOKEN with write access.",
    ),
]


def request_cmd(
    spec: Annotated[
        str, typer.Argument(parser=nonempty, help="Model spec PROVIDER:MODEL[@URL,...].")
    ],
    requester: Annotated[
        str | None,
        typer.Option(parser=nonempty, help="Who asked, shown in the queue (default: nobody)."),
    ] = None,
    dataset: Annotated[
        Literal["hub", "demo"], typer.Option(help="hub (INTIMA's 368 prompts) or demo.")
    ] = "hub",
    system_prompt: Annotated[
        str | None,
        typer.Option(parser=nonempty, help="System prompt (default: none, as in the paper)."),
    ] = None,
    store: StoreOpt = DEFAULT_STORE,
    queue: QueueOpt = None,
) -> None:
    """Ask for a model to be benchmarked; a request already queued or done is not added twice.

    Examples: intima request 'openai-compat:Qwen/Qwen3-8B';
    intima request 'openai-compat:Qwen/Qwen3-8B' --queue hf://datasets/OWNER/requests
    """
    from intima.service.queue import RequestRecord, add_request, check_request

    rec: RequestRecord
    if queue is not None:
        from intima.service.hub_queue import HubQueue

        rec = HubQueue(queue).add(spec, requester, dataset=dataset, system_prompt=system_prompt)
    else:
        check_request(spec, requester, dataset, system_prompt)  # refused: no store is created
        with Store.open(store) as db:
            rec = add_request(db, spec, requester, dataset=dataset, system_prompt=system_prompt)
    what = "queued" if rec.is_new else f"already requested ({rec.status})"
    out.print(
        f"{rec.request_id} {for_terminal(rec.spec)}: {what}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


requests_app = typer.Typer(no_args_is_help=False, add_completion=False, cls=IntimaGroup)


@requests_app.callback(invoke_without_command=True)
def requests_cmd(
    ctx: typer.Context, store: StoreOpt = DEFAULT_STORE, queue: QueueOpt = None
) -> None:
    """List requests with their status and whole configuration; approve or cancel one.

    Examples: intima requests --store intima.db; intima requests --queue hf://datasets/OWNER/requests;
    intima requests approve REQUEST_ID --queue hf://datasets/OWNER/requests
    """
    if ctx.invoked_subcommand is not None:
        return
    from intima.service.queue import RequestRecord, list_requests

    rows: list[RequestRecord]
    if queue is not None:
        from intima.service.hub_queue import HubQueue

        hub = HubQueue(queue)
        rows = list(hub.requests())
        for problem in hub.problems:
            console.print(f"warning: {for_terminal(problem)}", highlight=False, soft_wrap=True)
    else:
        with Store.open(store, create=False) as db:
            rows = list_requests(db)
    table = Table(title=f"requests in {for_terminal(queue or str(store))}")
    for col in ("request", "model", "configuration", "dataset", "requester", "status",
                "attempts", "updated", "reason"):  # fmt: skip
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            for_terminal(r.request_id), for_terminal(r.spec), for_terminal(_settings(r.config)),
            for_terminal(r.dataset), for_terminal(r.requester or "-"), for_terminal(r.status),
            str(r.attempts), for_terminal(r.updated_at), for_terminal(r.reason or ""),
        )  # fmt: skip
    out.print(table)


def _settings(config: ModelConfig) -> str:
    """Everything that makes the configuration: system prompt and generation settings."""
    gen = ", ".join(f"{k}={v}" for k, v in config.generation.model_dump().items())
    system = f"system prompt: {config.system_prompt!r}; " if config.system_prompt else ""
    return system + gen


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
        typer.Option(min=1, help="Only the first N prompts, for smoke tests (default: all)."),
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
            help="Publish each finished request's results bundle here: a new folder or "
            "hf://datasets/OWNER/NAME (default: keep them in the store).",
        ),
    ] = None,
    serve: ServeOpt = None,
    serve_command: ServeCommandOpt = None,
    tensor_parallel: TensorParallelOpt = 1,
    gpu_memory_utilization: GpuMemoryOpt = None,
    max_model_len: MaxModelLenOpt = None,
    serve_timeout: ServeTimeoutOpt = 1800.0,
    route: RouteOpt = None,
) -> None:
    """Take pending requests one by one: generate, judge and score each.

    Exits 1 when a request failed or a judgment was left unscored (with the count and the most
    common reason), else 0.

    Example: intima worker --drain -j openai-compat:smollm2@http://127.0.0.1:8080/v1 --score
    """
    from intima.core.errors import ConfigError
    from intima.judges.loop import DEFAULT_JUDGE_SETTINGS
    from intima.service.worker import work

    if limit is not None and limit < 1:
        raise ConfigError("--limit must be at least 1")
    settings = DEFAULT_JUDGE_SETTINGS.model_copy(update={"max_tokens": max_tokens})
    judges = judge_configs(
        list(judge or []), None, settings, structured_output=structured_output,
        api_key_env=api_key_env, concurrency=concurrency,
        timeout=120.0 if timeout is None else timeout,
        max_retries=6 if max_retries is None else max_retries,
        allow_unlisted_model=allow_unlisted_model,
    )  # fmt: skip
    served = serve_settings(
        serve, serve_command, tensor_parallel, gpu_memory_utilization, max_model_len,
        serve_timeout, route=route, base_url=base_url,
    )  # fmt: skip
    stop_cleanly_on_sigterm()
    try:
        summary = work(
            store, once=once, drain=drain, judges=judges, score=score, limit=limit,
            dataset=None if dataset is None else str(dataset),
            base_urls=tuple(base_url or ()), concurrency=concurrency, max_retries=max_retries,
            timeout_s=timeout, max_reasks=max_reasks, lease_s=lease, poll_s=poll,
            max_attempts=max_attempts, on_message=_say, queue=_queue(queue), results=results,
            give_up_s=give_up_after, serve=served, route=route,
            allow_unlisted_model=allow_unlisted_model,
        )  # fmt: skip
    except KeyboardInterrupt:
        # click turns Ctrl-C into a silent normal return; say what happened and exit 130. A
        # request in progress has said it was released; none may have been.
        console.print("Stopped; run the same command again to resume.")
        sys.exit(130)
    out.print(
        f"worker {summary.worker_id}: {summary.claimed} claimed, {summary.finished} finished, "
        f"{summary.failed} failed, {summary.lost} lost to another worker",
        highlight=False, markup=False, soft_wrap=True,
    )  # fmt: skip
    failed = report_failures("request(s) failed", summary.failed_reasons)
    unscored = report_failures(
        "judgment(s) unscored in finished requests", summary.unscored_reasons,
        "`intima judge` with the same judge retries them.",
    )  # fmt: skip
    if failed or unscored:
        raise typer.Exit(1)


def _queue(url: str | None) -> RequestQueue | None:
    if url is None:
        return None
    from intima.service.hub_queue import HubQueue

    return HubQueue(url)


def publish_cmd(
    dest: Annotated[
        str, typer.Argument(parser=nonempty, help="Empty folder, or hf://datasets/OWNER/NAME.")
    ],
    run: RunOpt = None,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Write a results bundle (JSONL + Parquet + manifest) to a folder or the Hub.

    Examples: intima publish out/bundle; intima publish hf://datasets/OWNER/NAME
    """
    from intima.cli._common import publish_errors
    from intima.service.bundle import publish

    # Publishing only reads the store; a bad destination is refused before any work.
    with Store.open(store, create=False) as db, publish_errors(dest):
        manifest = publish(db, dest, run or None)
    rows = ", ".join(f"{t.name} {t.rows}" for t in manifest.tables)
    out.print(
        f"bundle {manifest.bundle_id} -> {for_terminal(dest)}: {rows}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def import_cmd(
    src: Annotated[
        str, typer.Argument(parser=nonempty, help="Bundle folder, or hf://datasets/OWNER/NAME.")
    ],
    allow_protocol_mismatch: Annotated[
        bool, typer.Option(help="Import even if protocol versions differ from this intima's.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option(help="Check everything and say what would be added; change nothing.")
    ] = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Merge results bundles into the store (idempotent); every file and row is checked first.

    Examples: intima import other-machine/bundle --dry-run; intima import hf://datasets/me/results
    """
    from intima.service.bundle_import import import_bundle

    existed = store.exists()
    try:
        with Store.open(store) as db:
            reports = import_bundle(
                db, src, allow_protocol_mismatch=allow_protocol_mismatch, dry_run=dry_run
            )
    except BaseException:
        if not existed:  # a refused import leaves no empty store behind
            _remove_store(store)
        raise
    if dry_run and not existed:
        _remove_store(store)
    verb = "would add" if dry_run else "added"
    for r in reports:
        added = ", ".join(f"{k} +{v}" for k, v in r.rows_added.items() if v) or "nothing new"
        out.print(
            f"bundle {for_terminal(r.bundle_id)}: {verb} {for_terminal(added)}",
            highlight=False,
            soft_wrap=True,
        )


def _remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


ReviewQueueOpt = Annotated[
    str,
    typer.Option(
        "--queue", parser=nonempty, help="The request queue on the Hub, hf://datasets/OWNER/NAME."
    ),
]
ByOpt = Annotated[
    str | None, typer.Option(parser=nonempty, help="Who decided, kept in the request's history.")
]


RequestIdArg = Annotated[str, typer.Argument(parser=nonempty, help="The request's id.")]


@requests_app.command("approve")
def approve_cmd(request_id: RequestIdArg, queue: ReviewQueueOpt, by: ByOpt = None) -> None:
    """Let a request that waits for review (pending_review) be run.

    Example: intima requests approve 3f2a9c0d1e4b5a6c --queue hf://datasets/OWNER/requests
    """
    _review("approve", request_id, queue, by)


@requests_app.command("cancel")
def cancel_cmd(request_id: RequestIdArg, queue: QueueOpt = None, store: StoreOpt = DEFAULT_STORE,
               by: ByOpt = None) -> None:  # fmt: skip
    """Cancel a request that is waiting for review, pending or running.

    A worker already on it keeps what it stored but cannot mark it finished.
    Examples: intima requests cancel 3f2a9c0d1e4b5a6c --store intima.db;
    intima requests cancel 3f2a9c0d1e4b5a6c --queue hf://datasets/OWNER/requests
    """
    _review("cancel", request_id, queue, by, store)


def _review(
    action: Literal["approve", "cancel"], request_id: str, url: str | None, by: str | None,
    store: Path = DEFAULT_STORE,
) -> None:  # fmt: skip
    if url is None:  # the store's own queue (approving is the Hub's: its form is public)
        with Store.open(store, create=False) as db:
            rec = cancel(db, request_id, by)
    else:
        from intima.service.hub_queue import HubQueue

        hub = HubQueue(url)
        rec = (hub.approve if action == "approve" else hub.cancel)(request_id, by=by)
    _say(f"{rec.request_id} {rec.spec}: {rec.status}")


# Registered on import; intima.cli.main imports every group.
app.command("request")(request_cmd)
app.add_typer(requests_app, name="requests")
app.command("worker")(worker_cmd)
app.command("publish")(publish_cmd)
app.command("import")(import_cmd)


def _say(text: str) -> None:
    # Escaped for markup, so printed with markup on: "[redacted]" shows as itself, not "\[".
    console.print(for_terminal(text), highlight=False, soft_wrap=True)
