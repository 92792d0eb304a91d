"""What a worker checks before it claims anything, and whose fault a failure is.

A worker's own settings (its servers, the program it serves models with, the keys its routes
need, where its results go) are checked before the first claim: a worker that cannot work
refuses to start in one line instead of failing every request it claims.

While it runs a request, a failure is either the **request's** (an unknown or unloadable model,
a request refused by policy, answers that fail) and fails the request with the reason, or the
**worker's** (a key this worker lacks, a server or router it supplies that does not answer, a
model server it cannot start): that request is released to the queue, untouched, for this
worker later or another one (see docs/hub-service.md, "Whose failure is it").
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from collections.abc import Sequence
from urllib.parse import urlsplit

from intima.core.config import ModelConfig
from intima.core.errors import ConfigError, IntimaError
from intima.service.model_server import (
    DEFAULT_EXECUTABLES,
    Route,
    ServerNotStarted,
    ServeSettings,
)

#: Seconds a first connection to a server may take before the worker calls it unreachable.
CONNECT_TIMEOUT_S = 10.0
#: How each kind of server is installed, for the line a worker without it prints.
_INSTALL = {
    "vllm": "vLLM is not installed (pip install vllm)",
    "sglang": "SGLang is not installed (pip install 'sglang[all]')",
    "llamacpp": "llama.cpp's llama-server is not on PATH (install llama.cpp)",
}


class WorkerFault(IntimaError):
    """The worker (or its network) cannot run a request that another worker could: the request
    goes back to the queue instead of failing."""


def check_before_claiming(
    base_urls: Sequence[str],
    results: str | None,
    route: Route | None,
    serve: ServeSettings | None = None,
    judges: Sequence[ModelConfig] = (),
) -> None:
    """The worker's own settings, refused in one line before any request is claimed."""
    from pydantic import ValidationError

    if base_urls:
        try:
            ModelConfig(spec="openai-compat:check", base_urls=tuple(base_urls))
        except ValidationError as exc:
            reason = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
            raise IntimaError(f"--base-url: {reason}") from None
    if serve is not None:
        check_serve_program(serve)
    for judge in judges:
        check_key(judge)
    urls = [*base_urls, *(u for j in judges for u in j.parsed.base_urls)]
    if route == "hf":
        from intima.providers.hf_router import router_url

        url = router_url()  # INTIMA_HF_ROUTER_URL
        if not os.environ.get("HF_TOKEN", "").strip():
            raise ConfigError(
                "--route hf needs HF_TOKEN: set it to a Hugging Face token allowed to call "
                "Inference Providers"
            )
        urls.append(url)
    for url in dict.fromkeys(urls):
        if problem := unreachable(url):
            raise ConfigError(f"{problem}; the worker claimed nothing")
    if results is not None:
        from intima.service.worker_results import check_results

        check_results(results)


def check_serve_program(serve: ServeSettings) -> None:
    """The program ``--serve`` starts must exist here: an ENOENT per request failed the whole
    backlog."""
    if serve.executable is None and serve.kind == "sglang":
        # Started as ``python -m sglang.launch_server``: the module, not a program, is missing.
        if importlib.util.find_spec("sglang") is None:
            raise ConfigError(f"{_INSTALL['sglang']}, or pass --serve-command")
        return
    program = (serve.executable or DEFAULT_EXECUTABLES[serve.kind])[0]
    if shutil.which(program) is not None:
        return
    if serve.executable is None:
        raise ConfigError(f"{_INSTALL[serve.kind]}, or pass --serve-command")
    raise ConfigError(f"--serve-command: no program {program!r} here (not on PATH)")


def check_key(config: ModelConfig) -> None:
    """The key a judge (the worker's own) needs must be there before anything is claimed."""
    from intima.core.config import read_api_key
    from intima.providers import provider_class

    try:
        cls = provider_class(config.parsed.provider)
    except ImportError:  # its SDK is missing: the judge says so itself when it is built
        return
    read_api_key(config, getattr(cls, "default_key_env", None))


def unreachable(url: str) -> str | None:
    """Why a first TCP connection to ``url``'s server fails, or None when it connects."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except TimeoutError:
        reason = "timed out"
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    return f"cannot reach {url} ({reason}): is the server running and the URL right?"


def workers_fault(exc: BaseException) -> str | None:
    """The reason, if ``exc`` is the worker's failure rather than the request's; else None.

    A model server that cannot be *started* (no program, no permission) is the worker's; one
    that starts and cannot load the model is the model's. A missing key is the worker's: the
    request names a provider, the key is this machine's (another worker may hold it).
    """
    if isinstance(exc, WorkerFault | ServerNotStarted):
        return str(exc)
    # core.config raises it as a ConfigError; its wording is the one stable mark it has.
    if isinstance(exc, ConfigError) and str(exc).startswith("missing API key"):
        return str(exc)
    return None


def check_supplied(
    wanted: ModelConfig, config: ModelConfig, *, after: BaseException | None = None
) -> None:
    """Servers the worker supplied to a request that named none (``--base-url``, ``--route``,
    a served model) must answer: if they do not, the fault is the worker's or the network's.
    ``after``: the failure of a stage that ran against them; if one of them no longer answers,
    that failure is blamed on the server, not the request."""
    if wanted.parsed.base_urls:
        return  # the request's own server: its failure is the request's
    for url in config.parsed.base_urls:
        if problem := unreachable(url):
            raise WorkerFault(problem if after is None else f"{problem} (then: {after})")
