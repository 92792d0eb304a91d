"""Every command, every option, every kind of invalid value: exit 2, one line naming the option
(or the value), no traceback, nothing created.

The command tree is walked when the tests are collected, and the invalid values are derived from
each option's declared type, range, choices and path rules, so an option or command added later
is swept too. Each call runs in-process through ``intima.cli.main.main`` (the entry point with
its error policy) with typer's CliRunner isolation, a store path that does not exist, the working
folder in a temporary folder, and model specs pointing at a closed port on 127.0.0.1. The click
tree walked here is the one ``main`` runs: ``main`` builds it once per process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, invoke_cli
from intima.cli.main import _command, app

ROOT = _command(app)
SPEC = f"openai-compat:m@http://127.0.0.1:{free_port()}/v1"  # nothing listens there
ENV = {"NO_COLOR": "1", "COLUMNS": "200", "INTIMA_STORE": None, "HF_HUB_OFFLINE": "1"}
PER_CALL_S = 20  # a refusal takes milliseconds; this only stops a call that started real work


def _tree(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _tree(sub, (*path, name))


COMMANDS = dict(_tree(ROOT))


def _opt(param: Any) -> str:
    return next((o for o in param.opts if o.startswith("--")), param.opts[0])


def _names(param: Any) -> list[str]:
    if param.param_type_name == "argument":
        return [param.name.upper(), param.name]
    return [*param.opts, *param.secondary_opts]


def _numeric(param: Any) -> str | None:
    bare = param.bare_type().removeprefix("list[").removesuffix("]")
    return bare if bare in ("int", "float") else None


def _info(param: Any) -> Any:
    return param.type_descriptor.parameter_info


def _valid(param: Any, tmp: Path) -> str:
    """A value the option takes, for the options a command requires."""
    desc = param.type_descriptor
    if desc.is_choice:
        return str(desc.choices[0])
    if _numeric(param):
        return str(param.min if param.min is not None else 1)
    if desc.is_path:
        info = _info(param)
        if not info.exists:
            return str(tmp / f"new-{param.name}")
        if not info.file_okay:
            (tmp / "a-folder").mkdir(exist_ok=True)
            return str(tmp / "a-folder")
        (tmp / "input.jsonl").touch()
        return str(tmp / "input.jsonl")
    return SPEC if "spec" in (param.help or "").lower() else "x"


def _invalid(param: Any, tmp: Path) -> Iterator[str]:
    """Values the option must refuse, from its declaration."""
    desc = param.type_descriptor
    number = _numeric(param)
    if desc.is_choice:
        yield "not-a-choice"
    elif number:
        yield from ("abc", "")
        if param.min is not None:
            yield str(param.min - 1)
        if param.max is not None:
            yield str(param.max + 1)
        yield from (("nan", "inf", "-inf") if number == "float" else ("1.5",))
    elif desc.is_path:
        info = _info(param)
        if info.exists:
            yield str(tmp / "missing.toml")
        if not info.dir_okay:
            (tmp / "a-folder").mkdir(exist_ok=True)
            yield str(tmp / "a-folder")
        if not info.file_okay:
            (tmp / "a-file").write_text("x")
            yield str(tmp / "a-file")
    elif param.default != "":  # an empty default documents what empty text means
        yield ""


def _base(cmd: Any, tmp: Path) -> dict[str, list[str]]:
    """The tokens of a call that gets past parsing and would do nothing heavy: required
    options, model specs on the closed port (never the in-process default model), the offline
    demo prompts (never the Hub), the store."""
    base: dict[str, list[str]] = {}
    for p in cmd.params:
        text = p.param_type_name == "option" and p.bare_type() in ("str", "list[str]")
        if p.param_type_name == "argument":
            base[p.name] = [_valid(p, tmp)] if p.required else []
        elif p.required or (text and "model spec" in (p.help or "").lower()):
            base[p.name] = [_opt(p), _valid(p, tmp)]
        elif text and p.name == "dataset":
            base[p.name] = [_opt(p), "demo"]
        elif p.name == "store":
            base[p.name] = ["--store", str(tmp / "s.db")]
    return base


def _cases(path: tuple[str, ...], cmd: Any, tmp: Path) -> Iterator[tuple[list[str], list[str]]]:
    """(argv, strings of which the error's last line must name one)."""
    base = _base(cmd, tmp)
    # every argument filled, so that a word after --help has no place but --help's value
    positional = [_valid(p, tmp) for p in cmd.params if p.param_type_name == "argument"]
    yield [*path, *positional, "--help", "extra"], ["--help", "extra"]
    for p in cmd.params:
        others = [t for name, tokens in base.items() if name != p.name for t in tokens]
        if p.param_type_name == "option" and p.is_flag:
            yield [*path, *others, f"{_opt(p)}=yes"], _names(p)
            continue
        for value in _invalid(p, tmp):
            tokens = [value] if p.param_type_name == "argument" else [_opt(p), value]
            yield [*path, *tokens, *others], _names(p) + ([value] if value.strip() else [])


def _files(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(("intima", *p)))
def test_every_invalid_value_is_one_line_naming_the_option_and_creates_nothing(
    path: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # default output folders (leaderboard/, validation/) land here
    cmd = COMMANDS[path]
    cases = list(_cases(path, cmd, tmp_path))
    assert len(cases) >= 1 + len(cmd.params)  # every option is exercised
    failures = []
    for args, names in cases:
        before = _files(tmp_path)
        res = invoke_cli(*args, env=ENV, timeout=PER_CALL_S)
        code, output = res.returncode, res.stdout + res.stderr
        lines = [line for line in output.splitlines() if line.strip()]
        last = lines[-1] if lines else ""
        problems = [
            f"exit {code}" if code != 2 else "",
            "traceback" if "Traceback" in output else "",
            "names neither the option nor the value" if not any(n in last for n in names) else "",
            "not one `error:` line" if not last.startswith("error:") else "",
            f"created {sorted(str(p) for p in _files(tmp_path) - before)}"
            if _files(tmp_path) - before
            else "",
        ]
        if any(problems):
            shown = " ".join(a.replace(str(tmp_path), "TMP") for a in args)
            why = ", ".join(p for p in problems if p)
            failures.append(f"intima {shown}\n    {why}\n    last line: {last[:300]}")
    assert not failures, f"{len(failures)} of {len(cases)} calls:\n" + "\n".join(failures)


def test_the_sweep_covers_every_kind_of_option() -> None:
    """The sweep is only as good as its derivation: each kind it knows must occur."""
    params = [p for cmd in COMMANDS.values() for p in cmd.params]
    kinds = {
        "flag": any(p.param_type_name == "option" and p.is_flag for p in params),
        "int with range": any(_numeric(p) == "int" and p.min is not None for p in params),
        "float with range": any(_numeric(p) == "float" and p.max is not None for p in params),
        "choice": any(p.type_descriptor.is_choice for p in params),
        "input file": any(p.type_descriptor.is_path and _info(p).exists for p in params),
        "output folder": any(p.type_descriptor.is_path and not _info(p).file_okay for p in params),
        "text": any(p.bare_type() == "str" for p in params),
        "argument": any(p.param_type_name == "argument" for p in params),
    }
    assert all(kinds.values()), kinds
    assert len(COMMANDS) >= 20


def test_every_command_and_option_documents_itself() -> None:
    """Point 7 of issue 15: a one-line purpose and an example per command; per option a help
    text, a declared range for numbers (which is also what refuses out-of-range values above),
    and the default shown."""
    problems = []
    for path, cmd in COMMANDS.items():
        where = " ".join(("intima", *path))
        text = (cmd.help or "").strip()
        purpose = text.split("\n\n")[0]
        if not purpose or "\n" in purpose:
            problems.append(f"{where}: the purpose is not one line: {purpose!r}")
        if "Example" not in text:
            problems.append(f"{where}: no example in its help")
        for p in cmd.params:
            name = f"{where} {_names(p)[0]}"
            help_text = (p.help or "").strip()
            if not help_text:
                problems.append(f"{name}: no help")
            if _numeric(p) and p.min is None and p.max is None and "range" not in help_text:
                problems.append(f"{name}: a number with no range")
            shown = p.param_type_name == "option" and bool(p.show_default)
            if p.default is not None and p.default is not False and not shown:
                if "default" not in help_text.lower():
                    problems.append(f"{name}: default {p.default!r} not shown")
    assert not problems, "\n".join(problems)
