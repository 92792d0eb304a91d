"""Shared fixtures: the real INTIMA rows, a real llama.cpp server, a fault-injecting server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
# One OpenMP thread for torch here and in the commands tests start (unless the caller chose):
# the suite runs two workers on two cores, so a second thread mostly waits for a core while
# the first spins at each barrier; the MiniLM comparison took 40 CPU-s with two, 28 with one.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from fake_openai import FakeOpenAI, FaultPlan

if TYPE_CHECKING:
    from fake_hub import FakeHub

pytest_plugins = ["reliability_summary"]

REPO = Path(__file__).resolve().parent.parent
INTIMA_JSONL = Path(
    os.environ.get("INTIMA_SHARED_JSONL", REPO.parent / "shared" / "intima" / "INTIMA.jsonl")
)
GRADED_SET = Path(
    os.environ.get(
        "INTIMA_GRADED_SET",
        REPO.parent / "shared" / "validation" / "relationship-graded-dev.jsonl",
    )
)
ARTIFACTS = REPO / "tests" / "artifacts"
DEV_SET = Path(
    os.environ.get(
        "INTIMA_DEV_SET",
        REPO.parent / "shared" / "validation" / "companion-responses-dev.jsonl",
    )
)


def _shared(path: Path, variable: str) -> Path:
    """A data file from ../shared (read, never copied into the repo): CI always places that
    folder beside the checkout; anywhere else the test says in one line what to provide."""
    if not path.is_file():
        pytest.fail(
            f"{path} not found: this test reads the shared data next to the checkout "
            f"(../shared, as CI lays it out); put it there or set {variable} to the file"
        )
    return path


@pytest.fixture(scope="session", autouse=True)
def gguf_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """INTIMA_CACHE_DIR for every test of this worker process (and the commands they start):
    a GGUF converted by one test is read by the next instead of converted again (about 25 s
    for the bundled SmolLM2), and nothing is written to the user's own cache. A test of the
    cache itself sets its own folder."""
    folder = tmp_path_factory.mktemp("intima-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INTIMA_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="session", autouse=True)
def publisher_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """INTIMA_PUBLISHER_KEY for every test of this worker process (and the commands they
    start): one publisher per worker, made on its first ``publish``, so its bundles are
    trusted by default wherever this worker imports them, and the user's own key is never
    touched. Tests of other publishers sign with keys of their own (tests/signed.py)."""
    key = tmp_path_factory.mktemp("intima-publisher") / "publisher.key"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INTIMA_PUBLISHER_KEY", str(key))
        mp.setenv("INTIMA_PUBLISHER_NAME", "test-publisher")
        yield key


@pytest.fixture(scope="session")
def intima_jsonl() -> Path:
    """The real 380 published rows."""
    return _shared(INTIMA_JSONL, "INTIMA_SHARED_JSONL")


@pytest.fixture(scope="session")
def dev_set() -> Path:
    """The external labelled development set (companion-responses-dev.jsonl)."""
    return _shared(DEV_SET, "INTIMA_DEV_SET")


@pytest.fixture(scope="session")
def graded_set() -> Path:
    """The graded development set (relationship-graded-dev.jsonl)."""
    return _shared(GRADED_SET, "INTIMA_GRADED_SET")


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(
    url: str, proc: subprocess.Popen[bytes], timeout: float, log: Path | None = None
) -> None:
    """Wait until ``url`` answers 200; fail early (with the log's tail) if ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log else ""
            raise RuntimeError(f"server exited early with code {proc.returncode}\n{tail}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"server at {url} did not come up in {timeout}s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate a server started by a fixture, and kill it if it will not go."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@contextmanager
def board_server(store: Path, bootstrap: int, log: Path) -> Iterator[str]:
    """The real ``intima board serve`` on ``store`` in a subprocess; yields its URL once it
    answers, and stops it afterwards."""
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "intima", "board", "serve", "--store", str(store),
           "--port", str(port), "--bootstrap", str(bootstrap)]  # fmt: skip
    with serving(cmd, port=port, log=log, env=env) as url:
        yield url


@contextmanager
def board_in_thread(store: Path, bootstrap: int) -> Iterator[str]:
    """What ``intima board serve --store STORE --bootstrap B`` serves (the very function the
    command calls, with its trust set and launch options) from a thread of this process; yields
    its URL and closes it afterwards. For tests of what the app shows: Gradio's import (~5 CPU-s
    a process) is paid once per worker. A test of the command itself uses
    :func:`board_server`."""
    from intima.leaderboard.app import serve

    port = free_port()
    demo = serve(store, port=port, bootstrap=bootstrap, block=False)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@contextmanager
def serving(
    cmd: list[str], *, port: int, log: Path, env: dict[str, str], cwd: Path | None = None
) -> Iterator[str]:
    """A web server started as ``cmd`` (its output in ``log``); yields its URL once it
    answers, and stops it afterwards."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_http(url, proc, timeout=90, log=log)
        yield url
    finally:
        stop(proc)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, poll: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def other_thread() -> Iterator[None]:
    """A second thread, alive for the test: ``intima.core.parallel.Jobs`` must then run its
    jobs in threads, as in the app or the Space."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Real Chromium for one module; each page a test opens (``browser.watched_page``) is in a
    context of its own. Not shared across modules: Playwright's sync API keeps its asyncio loop
    marked as running in this thread while its driver lives, so any ``asyncio.run`` of the code
    under test (``generate``, ``judge``) fails until it stops; a test that runs such code after
    opening its page starts Playwright in its own body."""
    from playwright.sync_api import sync_playwright

    from browser import launch

    with sync_playwright() as p:
        chromium = launch(p)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's own OpenAI-compatible server serving the bundled SmolLM2.

    Yields the base URL; the model name to use is ``smollm2``. One thread: the suite runs two
    workers on two cores, so a second llama.cpp thread is usually waiting for a core, and the
    first spins at each barrier meanwhile; a 40-token prompt then took 2-6 CPU-s instead of
    0.3-0.9.
    """
    from intima.providers.bundled import bundled_gguf

    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_gguf()),
             "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "4096", "--n_threads", "1", "--n_threads_batch", "1",
             "--verbose", "False"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_http(f"{base}/models", proc, timeout=120, log=log)
        yield base
    finally:
        stop(proc)


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeOpenAI]]:
    """Factory: ``fake_server(rates={...}, latency_s=..., ...)`` starts a server in a thread."""
    started: list[FakeOpenAI] = []

    def start(**plan: object) -> FakeOpenAI:
        server = FakeOpenAI(FaultPlan(**plan)).start_in_thread()  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def results_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A fake Hub holding one empty results repo (``fake_hub.RESULTS``; bundles go in with
    ``fake_hub.push_bundle``), with huggingface_hub in this process pointed at it (a command
    started by the test needs ``fake_hub.hf_env``)."""
    from fake_hub import RESULTS, point_hf_at, running_hub

    for server in running_hub():
        point_hf_at(server, tmp_path / "hf-cache", tmp_path, monkeypatch)
        server.add_repo(RESULTS)
        yield server


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run the real ``intima`` command in a subprocess, as a user would."""
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "intima", *args],
        capture_output=True, text=True, env=full_env, timeout=timeout,
    )  # fmt: skip


class CliHung(BaseException):
    """Raised by invoke_cli's alarm: the call was still running after its timeout."""


def _hung(signum: int, frame: object) -> None:
    raise CliHung


def invoke_cli(
    *args: str, env: dict[str, str | None] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """``intima ARGS`` in this process, through the installed entry point (``main``, with its
    error policy): what :func:`run_cli` checks, without a new interpreter and its imports on
    every call (0.3 s for most commands, 2.5 s for ``validate``'s scikit-learn and matplotlib).
    For calls whose behaviour does not depend on the process: not for what a process reads once
    at start (huggingface_hub's environment), signals or kills, or calls from another thread. A
    traceback escaping ``main`` is written to stderr with exit code -1, as a crash; a call still
    running after ``timeout`` seconds is one too."""
    from typer.testing import CliRunner

    from intima.cli.main import main

    full_env = {"NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    with CliRunner().isolation(env=full_env) as (out, err, _), _as_a_new_process(args, full_env):
        signal.alarm(timeout)
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except CliHung:
            sys.stderr.write(f"Traceback: still running after {timeout} s\n")
            code = -1
        except BaseException:
            sys.stderr.write(traceback.format_exc())
            code = -1
        finally:
            signal.alarm(0)
            sys.stdout.flush()
            sys.stderr.flush()
        return subprocess.CompletedProcess(
            ["intima", *args],
            code,
            out.getvalue().decode("utf-8", "replace"),
            err.getvalue().decode("utf-8", "replace"),
        )


@contextmanager
def _as_a_new_process(args: tuple[str, ...], env: dict[str, str | None]) -> Iterator[None]:
    """What a new ``intima`` process would start with, for one in-process call: its argv, the
    terminal width COLUMNS says (the consoles fixed theirs when this process imported them),
    nothing learned about servers, and the signal handlers put back afterwards (``worker`` and
    ``serve`` set SIGTERM's)."""
    from intima.cli import _common

    consoles = [(c, c._width) for c in (_common.console, _common.out)]
    for console, _ in consoles:
        console.width = int(env.get("COLUMNS") or 80)
    if learned := sys.modules.get("intima.providers.openai_compat"):
        learned.forget_structured_output()
    argv, sys.argv = sys.argv, ["intima", *args]
    handlers = {s: signal.getsignal(s) for s in (signal.SIGALRM, signal.SIGTERM)}
    signal.signal(signal.SIGALRM, _hung)
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        sys.argv = argv
        for console, width in consoles:
            console._width = width
