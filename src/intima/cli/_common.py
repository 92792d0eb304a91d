"""What every command group shares: the app, the two consoles, the store and run options.

Group modules import this and register their commands on ``app`` when imported; ``main``
imports every group, so ``intima.cli.app`` is always complete and nothing registers twice.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from intima.core.escape import for_terminal
from intima.core.progress import OnProgress, ProgressEvent
from intima.store import DEFAULT_STORE

__all__ = [
    "DEFAULT_STORE",
    "RunOpt",
    "StoreOpt",
    "app",
    "console",
    "for_terminal",
    "out",
    "progress_display",
]

app = typer.Typer(
    help="Run the INTIMA companionship benchmark against any model and compare the results.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from intima.core.version import __version__

        out.print(f"intima {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Run the INTIMA companionship benchmark against any model and compare the results."""


def _piped_width(stream: object) -> int | None:
    """Logs and CI output are not terminals: rich would wrap tables at 80 columns there."""
    isatty = getattr(stream, "isatty", None)
    if os.environ.get("COLUMNS") or (isatty is not None and isatty()):
        return None
    return 160


console = Console(stderr=True, width=_piped_width(sys.stderr))
out = Console(width=_piped_width(sys.stdout))

# Options every command that reads the store shares, defined once.
StoreOpt = Annotated[
    Path,
    typer.Option("--store", envvar="INTIMA_STORE", help="SQLite results store."),
]
RunOpt = Annotated[
    list[str] | None,
    typer.Option("--run", help="Run id or label; repeatable (default: all runs)."),
]


@contextmanager
def progress_display(enabled: bool = True) -> Iterator[OnProgress]:
    """Render the library's progress events as rich bars (count, rate, elapsed, ETA), one bar
    per task, on stderr."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bars = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
    )
    tasks: dict[str, TaskID] = {}

    def show(event: ProgressEvent) -> None:
        if event.task not in tasks:
            tasks[event.task] = bars.add_task(for_terminal(event.task), total=event.total, rate="")
        rate = "–/s" if event.rate is None else f"{event.rate:.1f}/s"
        bars.update(tasks[event.task], completed=event.done, total=event.total, rate=rate)

    with bars:
        yield show
