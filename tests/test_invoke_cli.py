"""``conftest.invoke_cli``, the in-process call most command tests use: it must report what a
new ``intima`` process would (exit code, output, a crash, a hang) and leave nothing behind."""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import pytest

from conftest import invoke_cli
from intima.cli import _common

MAIN = sys.modules["intima.cli.main"]


def _command_that(behaviour: Any) -> Any:
    return lambda app: lambda **kwargs: behaviour()


def test_exit_codes_and_output_are_the_commands() -> None:
    from intima import __version__

    ok = invoke_cli("--version")
    assert (ok.returncode, ok.stdout.strip(), ok.stderr) == (0, f"intima {__version__}", "")
    usage = invoke_cli("nonsense")
    assert usage.returncode == 2 and usage.stderr.startswith("error:") and usage.stdout == ""


def test_an_exception_escaping_main_is_a_crash_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def boom() -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(MAIN, "_command", _command_that(boom))
    res = invoke_cli("runs")
    assert res.returncode == -1
    assert "Traceback" in res.stderr and "RuntimeError: a bug" in res.stderr


def test_a_call_still_running_after_its_timeout_is_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(MAIN, "_command", _command_that(lambda: time.sleep(30)))
    started = time.monotonic()
    res = invoke_cli("runs", timeout=1)
    assert res.returncode == -1 and "still running after 1 s" in res.stderr
    assert time.monotonic() - started < 10


def test_each_call_starts_as_a_new_process_and_leaves_nothing_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    def look() -> None:
        seen["argv"] = list(sys.argv)
        seen["widths"] = (_common.console.width, _common.out.width)
        signal.signal(signal.SIGTERM, lambda *a: None)  # as `worker` and `serve` do

    argv, widths = list(sys.argv), (_common.console._width, _common.out._width)
    sigterm = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(MAIN, "_command", _command_that(look))
    assert invoke_cli("runs", "--store", "x.db", env={"COLUMNS": "57"}).returncode == 0
    assert seen == {"argv": ["intima", "runs", "--store", "x.db"], "widths": (57, 57)}
    assert sys.argv == argv
    assert (_common.console._width, _common.out._width) == widths
    assert signal.getsignal(signal.SIGTERM) is sigterm
