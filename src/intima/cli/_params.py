"""How the command line refuses bad input: one line naming the option, the value and what is
allowed, before any work.

``IntimaGroup`` is the class of every command group (``--help`` takes no value), ``nonempty``
the parser of every text option that needs text, ``usage_line`` the one-line form of a usage
error that ``main`` prints.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from intima.core.escape import clipped
from intima.core.spending import MAX_COST_LIMIT

try:  # typer 0.2x vendors click; older typer uses click itself
    from typer._click.core import Command, Context
    from typer._click.exceptions import UsageError
    from typer._click.formatting import HelpFormatter as ClickHelpFormatter
except ImportError:  # pragma: no cover
    from click import Command, Context, UsageError  # type: ignore[assignment]
    from click import HelpFormatter as ClickHelpFormatter  # type: ignore[assignment]

#: The largest seed every provider takes (llama.cpp's seeds are unsigned 32-bit).
SEED_MAX = 2**32 - 1


def nonempty(value: str) -> str:
    """Parser of a text option: empty or blank text is refused, whatever the command."""
    if not value.strip():
        raise ValueError("must not be empty")
    return value


#: ``--base-url`` of the commands that call one model (``run``, ``judge``).
BaseUrlOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--base-url",
        parser=nonempty,
        help="Server base URL; repeatable (default: the spec's @URL).",
    ),
]

#: ``--allow-unlisted-model`` of the commands that call models (``run``, ``judge``, ``worker``).
AllowUnlistedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-unlisted-model",
        help="Run even if an OpenAI-compatible server's model list does not name the model "
        "(default: refuse, since a server that ignores names would answer with its own model).",
    ),
]

#: ``--prices`` of the commands that may spend money (``run``, ``judge``, ``converse``,
#: ``validate``, ``worker``).
PricesOpt = Annotated[
    Path | None,
    typer.Option(
        exists=True,
        dir_okay=False,
        help="Price table: TOML or JSON, USD per million tokens, laid over intima's dated "
        "default table (its entries win).",
    ),
]


def max_cost_option(held: str) -> Any:
    """``--max-cost`` of the commands that may spend money (``run``, ``judge``, ``converse``,
    ``worker``), its help saying how the command holds it (``held``: what follows "this many
    USD")."""
    return typer.Option(
        "--max-cost",
        min=0.0,
        max=MAX_COST_LIMIT,
        help=f"Spend at most this many USD{held} (priced by the default table or --prices; "
        "default: no limit).",
    )


#: ``--dry-run`` of the commands that may spend money (``run``, ``judge``, ``converse``,
#: ``validate``).
DryRunOpt = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Send nothing and write nothing: print, per configuration, the requests it would "
        "send (only what the store lacks), the estimated input and worst-case output tokens, "
        "and the estimated cost range from the price table.",
    ),
]

#: ``--batch`` and ``--poll-every`` of ``run`` and ``judge``.
BatchOpt = Annotated[
    bool,
    typer.Option(
        "--batch",
        help="Send what is missing as one batch to the vendor's batch API (openai, anthropic): "
        "half price, answers within 24 h; run the command again to resume the same batch.",
    ),
]
PollEveryOpt = Annotated[
    float,
    typer.Option(min=0.01, max=3600.0, help="Seconds between polls of a batch (with --batch)."),
]


def one_of(*choices: str) -> Callable[[str], str]:
    """Parser of a repeatable option with fixed choices (typer takes no list of Literal)."""

    def parse(value: str) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return parse


#: U+2011, a hyphen that text wrapping never breaks at.
_NB_HYPHEN = "\u2011"


class HelpFormatter(ClickHelpFormatter):
    """Click's help formatter, except that no line breaks at a hyphen: "openai-compat:smollm2"
    and "re-running" stay whole (click's wrapper broke "openai-" from "compat:...", so a
    copied example no longer ran)."""

    def write_text(self, text: str) -> None:
        super().write_text(text.replace("-", _NB_HYPHEN))

    def write_dl(
        self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        kept = [(a.replace("-", _NB_HYPHEN), b.replace("-", _NB_HYPHEN)) for a, b in rows]
        super().write_dl(kept, col_max, col_spacing)

    def getvalue(self) -> str:
        return super().getvalue().replace(_NB_HYPHEN, "-")


class HelpContext(Context):
    formatter_class = HelpFormatter


class IntimaGroup(TyperGroup):
    """A command group whose ``--help`` takes no value: ``intima run --help extra`` is an error,
    not the help of ``run`` with ``extra`` silently dropped.

    Every group is made with ``rich_markup_mode=None``: click's plain help, whose two columns
    leave each option's description most of an 80-column terminal (typer's rich panels gave
    it a sixth of it, and listed ``--help <bool>``). Its command list shows each command's
    whole first sentence, wrapped, where click cut it with "...".
    """

    context_class = HelpContext

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            cmd.context_class = HelpContext  # its help is formatted as the group's
        return cmd

    def format_commands(self, ctx: Context, formatter: ClickHelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=1_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _refuse_help_value(self, ctx, args)
        return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None and not isinstance(cmd, TyperGroup) and not ctx.resilient_parsing:
            probe = cmd.context_class(cmd, info_name=name, parent=ctx, resilient_parsing=True)
            _refuse_help_value(cmd, probe, rest)
        return name, cmd, rest


def _refuse_help_value(cmd: Command, ctx: Context, args: list[str]) -> None:
    """Raise if ``--help`` is followed by words the command has no place for."""
    help_option = cmd.get_help_option(ctx)
    if help_option is None or not set(help_option.opts) & set(args):
        return
    try:
        opts, rest, _ = cmd.make_parser(ctx).parse_args(args=list(args))
    except UsageError:
        return  # parsing proper reports it
    if not opts.get(help_option.name) or not rest:
        return
    if isinstance(cmd, TyperGroup) and cmd.get_command(ctx, rest[0]) is not None:
        return  # `intima --help run`: the group's help, as asked
    raise UsageError(f"--help takes no value, got {rest[0]!r}", ctx)


def usage_line(exc: Exception) -> str | None:
    """One line for a click usage error: the option, the value as typed and what is allowed,
    then where the command's help is; it reads as every other error of intima's does ("error:
    missing option ...", never click's "Error: Missing option ..."). None only for the help
    click shows when a group is run with no arguments."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        return None
    ctx = getattr(exc, "ctx", None)
    hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    param = getattr(exc, "param", None)
    message = str(getattr(exc, "message", exc))
    if param is None or type(exc).__name__ == "MissingParameter":
        fmt = getattr(exc, "format_message", None)
        return f"{_lower_first((fmt() if fmt else message).rstrip('.'))}{hint}"
    name = _param_name(param)
    value, reason = _cause(exc)
    shown = "" if value is None else f" {clipped(shlex.quote(value))}"
    why = (_allowed(param) or reason or message).rstrip(".")
    return f"invalid {name}{shown}: {why}{hint}"


def _lower_first(text: str) -> str:
    """Click's sentences start with a capital ("Missing option"); intima's errors do not. A
    word in capitals (an environment variable, an acronym) is left as it is."""
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


def _param_name(param: Any) -> str:
    if getattr(param, "param_type_name", "") == "argument":
        return str(param.metavar or param.name.upper())
    opts = [o for o in param.opts if o.startswith("--")] or list(param.opts)
    return str(opts[0])


def _cause(exc: Exception) -> tuple[str | None, str]:
    """The value as typed and pydantic's reason, when typer's coercion refused it."""
    errors = getattr(exc.__cause__, "errors", None)
    if not callable(errors):
        return None, ""
    first = errors()[0]
    value = first.get("input")
    reason = str(first.get("msg", "")).removeprefix("Value error, ")
    return (None if value is None else str(value)), reason[:1].lower() + reason[1:]


def _allowed(param: Any) -> str:
    """What an option with choices or a numeric range takes, from its declaration."""
    choices = getattr(getattr(param, "type_descriptor", None), "choices", None)
    if choices:
        return f"must be one of {', '.join(str(c) for c in choices)}"
    bare = param.bare_type() if hasattr(param, "bare_type") else ""
    if bare not in ("int", "float"):
        return ""
    kind = "an integer" if bare == "int" else "a number"
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None and high is not None:
        return f"must be {kind} from {_number(low)} to {_number(high)}"
    if low is not None:
        return f"must be {kind} of at least {_number(low)}"
    if high is not None:
        return f"must be {kind} of at most {_number(high)}"
    return f"must be {kind}"


def _number(x: float) -> str:
    """4294967295, 0.1, 86400: as written, never 4.29497e+09."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))
