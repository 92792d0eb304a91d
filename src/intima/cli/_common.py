"""What every command group shares: the app, the two consoles, the store and run options.

Group modules import this and register their commands on ``app`` when imported; ``main``
imports every group, so ``intima.cli.app`` is always complete and nothing registers twice.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from intima.cli._params import IntimaGroup, nonempty
from intima.core.errors import ConfigError, IntimaError
from intima.core.escape import for_terminal
from intima.core.progress import OnProgress, ProgressEvent
from intima.store import DEFAULT_STORE

__all__ = [
    "DEFAULT_STORE",
    "OutputError",
    "RunOpt",
    "StoreOpt",
    "app",
    "console",
    "for_terminal",
    "out",
    "output_folder",
    "progress_display",
    "publish_errors",
    "write_output",
    "writing_to",
]

ROOT_HELP = """Run the INTIMA companionship benchmark against any model and compare the results.

Example: intima serve, then in another shell
intima run --model openai-compat:smollm2@http://127.0.0.1:8080/v1 --dataset demo
"""

app = typer.Typer(
    help=ROOT_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=IntimaGroup,  # `--help` takes no value
    rich_markup_mode=None,  # click's plain help: see IntimaGroup
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
    """Run the INTIMA companionship benchmark against any model and compare the results.

    Example: intima serve, then in another shell
    intima run --model openai-compat:smollm2@http://127.0.0.1:8080/v1 --dataset demo
    """
    _refuse_undecodable(sys.argv[1:])


def _refuse_undecodable(args: list[str]) -> None:
    """Bytes that are not UTF-8 reach Python as lone surrogates, which fail later wherever the
    text is stored or printed (after a run row is written): refuse them before any work."""
    for n, arg in enumerate(args, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raw = arg.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
            raise ConfigError(
                f"argument {n} ({raw[:60]}) is not valid UTF-8; give labels, specs and paths "
                "as UTF-8 text"
            ) from None


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
    typer.Option("--store", envvar="INTIMA_STORE", dir_okay=False, help="SQLite results store."),
]
RunOpt = Annotated[
    list[str] | None,
    typer.Option("--run", parser=nonempty, help="Run id or label; repeatable (default: all runs)."),
]


class OutputError(IntimaError):
    """A file or folder a command was told to write cannot be written there."""


def write_output(path: Path, text: str) -> None:
    """Write a file the user named, whole or not at all. The text goes to a new file beside it
    that then takes the name, so a link at the path is replaced, never written through (it
    may point at anything), and a reader never sees half a file."""
    if path.is_dir():
        raise OutputError(f"{path} is a folder; give a file name to write to")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("x", encoding="utf-8") as f:  # "x": never an existing file or link
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def output_folder(path: Path) -> Path:
    """Refuse, before any work, a folder to write into that is a file or lies under one."""
    for p in (path, *path.parents):
        if p.is_symlink() or p.exists():
            if not p.is_dir():
                raise OutputError(f"{p} is a file, not a folder; give a new or empty folder")
            break
    return path


@contextmanager
def writing_to(folder: Path) -> Iterator[None]:
    """Around writing into ``folder``: refused in one line before any work if it is a file or
    lies under one; a write the system refuses (a full disk, no permission) is one line too."""
    output_folder(folder)
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write to {folder}: {exc.strerror or exc}") from exc


@contextmanager
def publish_errors(dest: str) -> Iterator[None]:
    """Around a publish to ``dest``: a folder as :func:`writing_to`; on the Hub, an upload that
    breaks off is one line (``publish`` itself refuses a Hub out of reach before any work)."""
    from intima.bundles.publish import HF_PREFIX

    if not dest.startswith(HF_PREFIX):
        with writing_to(Path(dest)):
            yield
        return
    try:
        yield
    except (IntimaError, sqlite3.Error):  # already one line (the store's own, in main)
        raise
    except Exception as exc:  # huggingface_hub lets transport errors through as they are
        raise OutputError(
            f"could not upload to {dest} on the Hugging Face Hub ({type(exc).__name__}); "
            "check the network, that the repo exists, and that you are logged in (HF_TOKEN)"
        ) from exc


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
