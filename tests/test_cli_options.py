"""``intima run`` and ``intima converse`` share their prompt, generation and request options
(``intima.cli._options``), and ``converse`` takes the generation and key options a second time
for the simulated user (``--user-``). Through the real command (its entry point): both list them
with the same ranges, refuse a bad value in the same one line, and send what they are given.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, invoke_cli
from fake_openai import FaultPlan, RecordingFake

#: Each shared option and a value it refuses (``MISSING`` stands for a file that is not there).
MISSING = "MISSING"
SHARED = {
    "--dataset": "",
    "--revision": " ",
    "--limit": "0",
    "--temperature": "2.5",
    "--top-p": "1.5",
    "--max-tokens": "0",
    "--seed": "-1",
    "--api-key-env": "",
    "--api-key-file": MISSING,
    "--concurrency": "4097",
    "--timeout": "0.05",
    "--max-retries": "51",
}
FLAGS = ("--include-memory", "--cleaned", "--progress")
#: The options ``converse`` also takes as ``--user-NAME`` for the simulated user.
USER = ("--temperature", "--top-p", "--max-tokens", "--seed", "--api-key-env", "--api-key-file")
#: What ``--help`` shows as each numeric option's range.
RANGES = {
    "--limit": "x>=1",
    "--temperature": "0.0<=x<=2.0",
    "--top-p": "0.0<=x<=1.0",
    "--max-tokens": "1<=x<=131072",
    "--seed": "0<=x<=4294967295",
    "--concurrency": "1<=x<=4096",
    "--timeout": "0.1<=x<=86400.0",
    "--max-retries": "0<=x<=50",
}
#: Nothing listens there: a value that got through would stop at "cannot reach", never run.
CLOSED = f"openai-compat:m@http://127.0.0.1:{free_port()}/v1"
IN_CHARACTER = "Honestly you are the only one I talk to these days. Will you stay with me?"


def _help_rows(command: str, columns: str = "200") -> dict[str, str]:
    """``intima COMMAND --help`` as {option: its row}, the row's wrapped lines joined."""
    res = invoke_cli(command, "--help", env={"COLUMNS": columns})
    assert res.returncode == 0, res.stderr
    rows: dict[str, str] = {}
    current = ""
    for line in res.stdout.splitlines():
        # an option's first line: two spaces, maybe its short form, then its long form
        match = re.match(r"  (?:-[a-zA-Z], )?(--[a-z-]+)", line)
        if match:
            current = match.group(1)
            rows[current] = line.strip()
        elif current and line.startswith("    "):
            rows[current] += " " + line.strip()
        else:
            current = ""
    return {k: re.sub(r"\s+", " ", v) for k, v in rows.items()}


def test_both_commands_list_the_shared_options_with_the_same_ranges_and_help() -> None:
    run, converse = _help_rows("run"), _help_rows("converse")
    for option in [*SHARED, *FLAGS]:
        assert option in run and option in converse, option
    for option, allowed in RANGES.items():
        assert allowed in run[option] and allowed in converse[option], option
    for option in ("--temperature", "--top-p", "--max-tokens", "--seed", "--api-key-env"):
        # the same declaration: the help after the option's name and type is the same text
        assert run[option].split(">", 1)[1] == converse[option].split(">", 1)[1], option
    for option in USER:
        user = converse[option.replace("--", "--user-", 1)]
        assert "The simulated user's setting:" in user, option
        if option in RANGES:
            assert RANGES[option] in user, option
    # the defaults are the configuration's, the same in both commands
    # (click's help: "[default: 512; 1<=x<=131072]", the range after the default)
    for option, default in [("--max-tokens", "512"), ("--seed", "0"), ("--timeout", "120.0"),
                            ("--max-retries", "6")]:  # fmt: skip
        assert f"[default: {default};" in run[option], option
        assert f"[default: {default};" in converse[option], option


def _refusal(command: str, option: str, value: str, tmp_path: Path) -> str:
    """The one line ``intima COMMAND OPTION VALUE`` prints, with the command's name taken out."""
    store = tmp_path / "s.db"
    if value == MISSING:
        value = str(tmp_path / "no-such-key")
    others = ["-m", CLOSED, "--store", str(store)]
    if option != "--dataset":  # the demo prompts: never the Hub
        others += ["--dataset", "demo"]
    res = invoke_cli(command, option, value, *others, timeout=60)
    lines = [line for line in (res.stdout + res.stderr).splitlines() if line.strip()]
    assert res.returncode == 2, (command, option, res.stdout, res.stderr)
    assert len(lines) == 1 and lines[0].startswith("error:"), (command, option, lines)
    assert option in lines[0], lines[0]
    assert not store.exists()
    return lines[0].replace(f"intima {command} ", "intima COMMAND ").replace(str(tmp_path), "T")


@pytest.mark.parametrize("option", list(SHARED))
def test_a_bad_value_is_the_same_one_line_in_both_commands(option: str, tmp_path: Path) -> None:
    value = SHARED[option]
    run = _refusal("run", option, value, tmp_path)
    converse = _refusal("converse", option, value, tmp_path)
    assert run == converse
    if option in USER:  # and the simulated user's form is refused alike
        user_option = option.replace("--", "--user-", 1)
        user = _refusal("converse", user_option, value, tmp_path)
        assert user.replace(user_option, option) == run


def test_a_flag_takes_no_value_in_either_command(tmp_path: Path) -> None:
    for command in ("run", "converse"):
        store = tmp_path / "s.db"
        res = invoke_cli(command, "--cleaned=yes", "-m", CLOSED, "--store", str(store), timeout=60)
        assert res.returncode == 2
        assert res.stderr.strip().splitlines() == [
            "error: option '--cleaned' does not take a value"
        ]


@pytest.fixture
def servers() -> Any:
    plans = [FaultPlan(), FaultPlan(reply_text=IN_CHARACTER)]  # the assistant, the user
    started = [RecordingFake(plan).start_in_thread() for plan in plans]
    yield started
    for server in started:
        server.stop()


def _sent(server: RecordingFake) -> set[tuple[Any, ...]]:
    keys = ("temperature", "top_p", "max_tokens", "seed")
    return {tuple(p.get(k) for k in keys) for p in server.payloads}


def test_both_commands_send_the_settings_they_are_given(
    tmp_path: Path, servers: list[RecordingFake]
) -> None:
    assistant, user = servers
    settings = ["--temperature", "0.25", "--top-p", "0.5", "--max-tokens", "40", "--seed", "11"]
    common = ["--dataset", "demo", "--limit", "2", "--no-progress", "--max-retries", "0"]
    res = invoke_cli(
        "run", "-m", f"openai-compat:fake@{assistant.base_url}", *settings, *common,
        "--store", str(tmp_path / "run.db"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert _sent(assistant) == {(0.25, 0.5, 40, 11)}
    assistant.payloads.clear()
    res = invoke_cli(
        "converse", "-m", f"openai-compat:fake@{assistant.base_url}",
        "-u", f"openai-compat:fake@{user.base_url}", "--turns", "2", *settings,
        "--user-temperature", "0.75", "--user-top-p", "0.25", "--user-max-tokens", "30",
        "--user-seed", "5", *common, "--store", str(tmp_path / "converse.db"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "2 of 2 conversations complete" in res.stdout, res.stdout
    assert _sent(assistant) == {(0.25, 0.5, 40, 11)}
    assert _sent(user) == {(0.75, 0.25, 30, 5)}


def test_prices_and_max_cost_are_declared_once_for_the_commands_that_spend() -> None:
    """``--max-cost`` was declared again in ``run``, ``judge`` and ``worker``, beside the shared
    ``--prices`` (and ``converse`` had none, issue 38): now one declaration (``intima.cli._params``) with each command's own sentence
    on how it holds the cap, the same range and the same word on prices."""
    import intima.cli
    from intima.cli.main import _command, app

    commands = _command(app).commands  # type: ignore[attr-defined]
    prices_help = set()
    for name in ("run", "judge", "converse", "worker"):
        params = {p.name: p for p in commands[name].params}
        cap = params["max_cost"]
        assert (cap.opts, cap.min, cap.max) == (["--max-cost"], 0.0, 1_000_000.0), name
        assert cap.help.endswith("(priced by the default table or --prices; default: no limit).")
        prices_help.add(params["prices"].help)
    assert len(prices_help) == 1
    cli = Path(intima.cli.__file__).parent
    declaring = sorted(
        p.name for p in cli.glob("*.py") if "Spend at most this many USD" in p.read_text("utf-8")
    )
    assert declaring == ["_params.py"]


def test_help_gives_descriptions_room_at_80_columns() -> None:
    """Issue #40: at 80 columns typer's panels listed `--help <bool>`, and squeezed each
    description into a column a sixth of the screen wide, cutting an example spec to
    "openai-compat:sm…". Now: no flag shows a value, no line passes 80 columns, and every word
    of every option's help is shown whole (none cut, none broken at a hyphen)."""
    import typer.main

    from intima.cli.main import app

    run = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    res = invoke_cli("run", "--help", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    assert "<bool>" not in res.stdout and "--help " in res.stdout
    assert max(len(line) for line in res.stdout.splitlines()) <= 80
    shown = set(res.stdout.split())
    for param in run.params:
        cut = [w for w in (param.help or "").split() if w not in shown]
        assert cut == [], (param.name, cut)
    label = _help_rows("run", columns="80")["--label"]
    assert "(default: the spec plus the settings that differ from the defaults)" in label
    top = invoke_cli("--help", env={"COLUMNS": "80"}).stdout
    commands = top[top.index("Commands:") :]
    assert "<bool>" not in top and "..." not in commands  # each command's whole line
