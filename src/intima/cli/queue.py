"""CLI for the request queue and results bundles (publish / import); the worker is in
``cli/worker.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.table import Table

from intima.cli._common import DEFAULT_STORE, RunOpt, StoreOpt, app, console, for_terminal, out
from intima.cli._params import IntimaGroup, nonempty
from intima.cli.publisher import TrustOpt
from intima.core.config import ModelConfig
from intima.service.queue import cancel, list_requests, reopen
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
    if not rec.is_new and rec.status == "cancelled":
        what += f"; a maintainer cancelled it: `intima requests reopen {rec.request_id}` undoes it"
    out.print(
        f"{rec.request_id} {for_terminal(rec.spec)}: {what}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


requests_app = typer.Typer(
    no_args_is_help=False, add_completion=False, cls=IntimaGroup, rich_markup_mode=None
)


@requests_app.callback(invoke_without_command=True)
def requests_cmd(
    ctx: typer.Context, store: StoreOpt = DEFAULT_STORE, queue: QueueOpt = None
) -> None:
    """List requests with their status and whole configuration; approve, cancel or reopen one.

    Examples: intima requests --store intima.db; intima requests --queue hf://datasets/OWNER/requests;
    intima requests approve REQUEST_ID --queue hf://datasets/OWNER/requests
    """
    if ctx.invoked_subcommand is not None:
        return
    from intima.service.queue import RequestRecord

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
    for col in (
        "request",
        "model",
        "configuration",
        "dataset",
        "requester",
        "status",
        "attempts",
        "updated",
        "reason",
    ):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            for_terminal(r.request_id),
            for_terminal(r.spec),
            for_terminal(_settings(r.config)),
            for_terminal(r.dataset),
            for_terminal(r.requester or "-"),
            for_terminal(r.status),
            str(r.attempts),
            for_terminal(r.updated_at),
            for_terminal(r.reason or ""),
        )
    out.print(table)


def _settings(config: ModelConfig) -> str:
    """Everything that makes the configuration: system prompt and generation settings."""
    gen = ", ".join(f"{k}={v}" for k, v in config.generation.model_dump().items())
    system = f"system prompt: {config.system_prompt!r}; " if config.system_prompt else ""
    return system + gen


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
    from intima.bundles.publish import publish
    from intima.cli._common import publish_errors

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
    trust: TrustOpt = None,
) -> None:
    """Merge results bundles into the store (idempotent); every file and row is checked first.

    Examples: intima import other-machine/bundle --dry-run; intima import hf://datasets/me/results
    """
    from intima.bundles.merge import import_bundle
    from intima.bundles.trust import trust_from

    trusted = trust_from(trust)  # a bad trust file is refused before the store is made
    existed = store.exists()
    try:
        with Store.open(store) as db:
            reports = import_bundle(
                db,
                src,
                allow_protocol_mismatch=allow_protocol_mismatch,
                dry_run=dry_run,
                trust=trusted,
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
            f"bundle {for_terminal(r.bundle_id)} from {for_terminal(str(r.publisher))}: {verb} "
            f"{for_terminal(added)}",
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


RequestIdArg = Annotated[
    str, typer.Argument(parser=nonempty, help="The request's id, or its start (4+ hex digits).")
]


@requests_app.command("approve")
def approve_cmd(request_id: RequestIdArg, queue: ReviewQueueOpt, by: ByOpt = None) -> None:
    """Let a request that waits for review (pending_review) be run.

    Example: intima requests approve 3f2a9c0d1e4b5a6c --queue hf://datasets/OWNER/requests
    """
    _review("approve", request_id, queue, by)


@requests_app.command("cancel")
def cancel_cmd(
    request_id: RequestIdArg,
    queue: QueueOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    by: ByOpt = None,
) -> None:
    """Cancel a request that is waiting for review, pending or running.

    A worker running it stops at its next heartbeat: it keeps what it stored and publishes
    nothing. Asking for the model again does not undo a cancel; `requests reopen` does.
    Examples: intima requests cancel 3f2a9c0d1e4b5a6c --store intima.db;
    intima requests cancel 3f2a9c0d1e4b5a6c --queue hf://datasets/OWNER/requests
    """
    _review("cancel", request_id, queue, by, store)


@requests_app.command("reopen")
def reopen_cmd(
    request_id: RequestIdArg,
    queue: QueueOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    by: ByOpt = None,
) -> None:
    """Put a cancelled request back in the queue (asking for it again does not).

    Examples: intima requests reopen 3f2a9c0d1e4b5a6c --store intima.db;
    intima requests reopen 3f2a9c0d1e4b5a6c --queue hf://datasets/OWNER/requests
    """
    _review("reopen", request_id, queue, by, store)


def _review(
    action: Literal["approve", "cancel", "reopen"],
    request_id: str,
    url: str | None,
    by: str | None,
    store: Path = DEFAULT_STORE,
) -> None:
    from intima.service.request_rules import resolve_request_id

    if url is None:  # the store's own queue (approving is the Hub's: its form is public)
        with Store.open(store, create=False) as db:
            known = (r.request_id for r in list_requests(db))
            decide = reopen if action == "reopen" else cancel
            rec = decide(db, resolve_request_id(request_id, known), by)
    else:
        from intima.service.hub_queue import HubQueue

        hub = HubQueue(url)
        request_id = resolve_request_id(request_id, (r.request_id for r in hub.requests()))
        act = {"approve": hub.approve, "cancel": hub.cancel, "reopen": hub.reopen}[action]
        rec = act(request_id, by=by)
    _say(f"{rec.request_id} {rec.spec}: {rec.status}")


# Registered on import; intima.cli.main imports every group.
app.command("request")(request_cmd)
app.add_typer(requests_app, name="requests")
app.command("publish")(publish_cmd)
app.command("import")(import_cmd)


def _say(text: str) -> None:
    # Escaped for markup, so printed with markup on: "[redacted]" shows as itself, not "\[".
    console.print(for_terminal(text), highlight=False, soft_wrap=True)
