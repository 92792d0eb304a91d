"""llama-cpp-python's own OpenAI-compatible server on a local GGUF (the bundled SmolLM2 by
default): the quickest real endpoint for trying intima, and the one its tests use."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import httpx

from intima.core.errors import ConfigError, ProviderError
from intima.providers.llamacpp import resolve_model_path

DEFAULT_ALIAS = "smollm2"


def start(
    model: str = "",
    *,
    alias: str = DEFAULT_ALIAS,
    host: str = "127.0.0.1",
    port: int = 8080,
    n_ctx: int = 4096,
    log: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start the server in a child process (``python -m llama_cpp.server``); it serves
    ``model`` (a GGUF path; empty for the bundled SmolLM2) under the name ``alias``."""
    try:
        import llama_cpp.server  # noqa: F401  (fail here, in one line, if the extra is missing)
    except ImportError as exc:
        raise ConfigError(
            "serving needs llama-cpp-python's server: pip install 'intima[local]'"
        ) from exc
    path = resolve_model_path(model)
    sink = log.open("wb") if log is not None else subprocess.DEVNULL
    # An argument list (no shell) of this Python, a checked file path and typed options.
    return subprocess.Popen(  # noqa: S603
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(path),
            "--model_alias",
            alias,
            "--host",
            host,
            "--port",
            str(port),
            "--n_ctx",
            str(n_ctx),
            "--verbose",
            "False",
        ],
        stdout=sink,
        stderr=subprocess.STDOUT,
    )


Readiness = Literal["ready", "exited", "timeout"]


def poll_ready(
    base_url: str,
    proc: subprocess.Popen[bytes],
    timeout: float,
    *,
    every: float = 0.3,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    probe: Callable[[], bool] | None = None,
) -> Readiness:
    """Ask ``base_url``/models until it answers 200 (or ``probe()`` says True: ``ready``), the
    server process ends (``exited``) or ``timeout`` seconds pass (``timeout``): one loop for
    every server intima starts, each caller saying in its own words what went wrong."""
    deadline = clock() + timeout
    while clock() < deadline:
        if proc.poll() is not None:
            return "exited"
        try:
            if probe is not None:
                if probe():
                    return "ready"
            elif httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                return "ready"
        except httpx.HTTPError:
            pass
        sleep(every)
    return "timeout"


def wait_ready(base_url: str, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    """Return once ``base_url``/models answers; raise if the server exits or never answers."""
    state = poll_ready(base_url, proc, timeout)
    if state == "exited":
        raise ProviderError(
            f"the model server exited with code {proc.returncode} before answering "
            "(is the port free? is the GGUF file readable?)"
        )
    if state == "timeout":
        raise ProviderError(f"the model server at {base_url} did not answer within {timeout:g} s")


def spec_for(alias: str, base_url: str) -> str:
    return f"openai-compat:{alias}@{base_url}"
