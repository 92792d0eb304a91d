"""The ``intima`` command: a thin layer over the Python API.

Each command group registers its commands on the shared app when imported (below), so this file
is only the entry point and its error policy; every command's work is a function a notebook can
call directly.
"""

from __future__ import annotations

import sqlite3
import sys
from functools import cache

from pydantic import ValidationError
from typer.main import get_command

# Importing a group registers its commands; `--help` lists them in this order: the pipeline
# first (run, judge, score, validate, board), then the service commands.
# isort: off
from intima.cli import run  # noqa: F401
from intima.cli import converse  # noqa: F401
from intima.cli import judge  # noqa: F401
from intima.cli import affect  # noqa: F401
from intima.cli import validate  # noqa: F401
from intima.cli import board  # noqa: F401
from intima.cli import models  # noqa: F401
from intima.cli import compare  # noqa: F401
from intima.cli import drift  # noqa: F401
from intima.cli import queue  # noqa: F401
from intima.cli import worker  # noqa: F401
from intima.cli import serve  # noqa: F401
from intima.cli import doctor  # noqa: F401
from intima.cli import publisher  # noqa: F401

# isort: on
from intima.cli._common import app, console
from intima.cli._params import usage_line
from intima.cli._signals import stop_cleanly_on_sigterm
from intima.core.errors import IntimaError
from intima.core.escape import MAX_ERROR_CHARS, for_terminal, quoted

__all__ = ["app", "main"]

# The click command typer builds from the app, built once per process: typer rebuilds it (every
# command's signature read again, about 0.05 s) on each call, which a notebook or a test calling
# main() many times pays each time. Pretty exceptions are off, so typer's own call adds nothing.
_command = cache(get_command)


def main() -> None:
    stop_cleanly_on_sigterm()  # every command: SIGTERM stops it as Ctrl-C does
    try:
        code = _command(app)(standalone_mode=False)
        # Typer turns Ctrl-C into a *returned* 130 when not standalone; say so and exit with it.
        if code == 130:
            raise KeyboardInterrupt
        if isinstance(code, int) and code:
            sys.exit(code)
    except IntimaError as exc:
        # One line, however long: a wrapped message reads as two errors in a log.
        console.print(
            f"[bold red]error:[/] {for_terminal(str(exc), MAX_ERROR_CHARS)}",
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(2)
    except sqlite3.DatabaseError as exc:  # a damaged, truncated or foreign file
        console.print(
            f"[bold red]error:[/] the store cannot be read "
            f"({for_terminal(str(exc), MAX_ERROR_CHARS)}); check "
            "--store, or restore it from a copy (`sqlite3 FILE 'PRAGMA integrity_check'`)",
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(2)
    except ValidationError as exc:  # a value the configuration models refuse
        console.print(
            f"[bold red]error:[/] {for_terminal(_invalid(exc), MAX_ERROR_CHARS)}",
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(2)
    except KeyboardInterrupt:
        console.print(
            "\nInterrupted. Finished work is saved; run the same command again to resume."
        )
        sys.exit(130)
    except Exception as exc:  # click usage errors and the like
        if isinstance(exc, _click_errors()):
            line = usage_line(exc)  # one line: the option, the value, what is allowed
            if line is None:
                exc.show()  # type: ignore[attr-defined]
            else:
                console.print(
                    f"[bold red]error:[/] {for_terminal(line, MAX_ERROR_CHARS)}",
                    highlight=False,
                    soft_wrap=True,
                )
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        if isinstance(exc, _click_aborts()):
            console.print("Aborted. Finished work is saved; run the same command again to resume.")
            sys.exit(130)
        raise


#: Settings fields whose option has another name (``WorkerSettings.lease_s`` is ``--lease``).
_OPTION_OF = {"timeout_s": "timeout", "lease_s": "lease", "poll_s": "poll",
              "give_up_s": "give-up-after"}  # fmt: skip


def _invalid(exc: ValidationError) -> str:
    """One line naming each refused option, its value and what is allowed."""
    parts = []
    for err in exc.errors():
        field = next((str(p) for p in reversed(err["loc"]) if isinstance(p, str)), "value")
        option = _OPTION_OF.get(field, field).replace("_", "-")
        # A refused URL or key source may hold the secret it was refused for: never echo it.
        shown = "" if "url" in field or "key" in field else f" {quoted(err.get('input'))}"
        parts.append(f"--{option}{shown}: {err['msg'].lower()}")
    return "invalid " + "; ".join(parts)


def _click_errors() -> tuple[type[Exception], ...]:
    """Usage errors: typer 0.2x raises those of the click it vendors, older typer click's own."""
    import click

    try:
        from typer._click.exceptions import ClickException
    except ImportError:
        return (click.exceptions.ClickException,)
    return (ClickException, click.exceptions.ClickException)


def _click_aborts() -> tuple[type[Exception], ...]:
    import click
    import typer

    return (typer.Abort, click.exceptions.Abort)
