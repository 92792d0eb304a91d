"""A model server started for one request: vLLM, llama.cpp's server or SGLang, as a subprocess on
this machine, serving the requested Hub model under its own name (``intima worker --serve``).

The worker starts it when it claims a request for a Hub model (``openai-compat:OWNER/NAME`` with
no server), waits until ``/health`` answers 200 and ``/v1/models`` lists the model, runs the
request against it and stops it. A model that fails to load fails the request with the
server's own last words (its log's tail, secrets blanked out).
The command is an argument list (never a shell); the model id has been checked to be a Hub id.
The server runs under :mod:`intima.service.server_guard`, in a process group of its own that is
stopped whole, and gets only the environment it needs (:func:`server_env`): never the worker's
keys and tokens.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from intima.core.config import ModelConfig
from intima.core.errors import ProviderError

ServerKind = Literal["vllm", "llamacpp", "sglang"]
Route = Literal["hf"]
SERVER_KINDS: tuple[str, ...] = ("vllm", "llamacpp", "sglang")
#: How each kind is started when ``executable`` does not say.
DEFAULT_EXECUTABLES: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm", "serve"),
    "llamacpp": ("llama-server",),
    "sglang": (sys.executable, "-m", "sglang.launch_server"),
}
#: Characters of the server's log quoted in a failure reason.
REASON_CHARS = 600
#: What a served model gets of the worker's environment: these names, and names starting with
#: one of the prefixes (locale, GPUs, the Hub's offline mode, the servers' own settings). Never
#: a key or token (:data:`SECRET_NAME`): a request names the model, and a public model needs
#: none, so the worker's ``HF_TOKEN`` must not fetch a private one. Nor ``HF_HOME``: it holds
#: the token ``hf auth login`` stored; the server gets the caches inside it (:func:`hub_caches`).
SERVER_ENV_NAMES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM",
     "TMPDIR", "TMP", "TEMP", "PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
     "XDG_CACHE_HOME", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
     "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
     "HF_HUB_OFFLINE", "HF_ENDPOINT", "HF_HUB_ENABLE_HF_TRANSFER",
     "HF_HUB_DISABLE_TELEMETRY", "TRANSFORMERS_OFFLINE",
     "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "OMP_NUM_THREADS"}
)  # fmt: skip
SERVER_ENV_PREFIXES = ("LC_", "CUDA_", "NCCL_", "VLLM_", "SGLANG_", "LLAMA_ARG_")
#: Names that hold secrets; never lent, whatever the list or ``--serve-env`` says.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
_GUARD = Path(__file__).with_name("server_guard.py")


class ModelLoadFailed(ProviderError):
    """The server exited or never answered; the message carries its log's tail."""


class ServerNotStarted(ModelLoadFailed):
    """The server's program could not be started at all (missing, not executable): the
    worker's fault, not the model's, so the request goes back to the queue."""


class ServeSettings(BaseModel):
    """How this worker starts a model server (its GPU settings are the worker's own)."""

    model_config = ConfigDict(frozen=True)

    kind: ServerKind
    #: The program and its leading arguments, instead of :data:`DEFAULT_EXECUTABLES`.
    executable: tuple[str, ...] | None = None
    host: str = "127.0.0.1"
    tensor_parallel: int = Field(default=1, ge=1, le=64)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    max_model_len: int | None = Field(default=None, ge=256)
    #: More arguments, passed as they are (e.g. ``--quantization awq``).
    extra_args: tuple[str, ...] = ()
    ready_timeout_s: float = Field(default=1800.0, gt=0)
    #: Where server logs go (one file per start); a temporary folder, removed on stop, when unset.
    log_dir: Path | None = None
    #: More of the worker's environment variables to lend the server (never a secret's name).
    pass_env: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _honoured(self) -> ServeSettings:
        if problem := unhonoured(self.kind, self.tensor_parallel, self.gpu_memory_utilization):
            raise ValueError(problem)
        if secret := [n for n in self.pass_env if SECRET_NAME.search(n)]:
            raise ValueError(f"{secret[0]} looks like a secret; a served model is never lent one")
        if "HF_HOME" in self.pass_env:
            raise ValueError(
                "HF_HOME holds the Hub token `hf auth login` stored; a served model is lent the "
                "Hub cache in it (HF_HUB_CACHE), never the folder"
            )
        return self


def unhonoured(kind: str, tensor_parallel: int, gpu_memory: float | None) -> str | None:
    """Why the server cannot take these GPU settings, or None: llama-server splits a model over
    every visible GPU by itself and has no memory share, so the options would be ignored."""
    if kind != "llamacpp":
        return None
    asked = (("--tensor-parallel", tensor_parallel != 1), ("--gpu-memory-utilization", gpu_memory))
    given = [option for option, value in asked if value]
    if not given:
        return None
    return (
        f"llama-server cannot honour {' and '.join(given)}: it spreads the model over every "
        "visible GPU itself (choose them with CUDA_VISIBLE_DEVICES); leave the option out or "
        "serve with vllm or sglang"
    )


def server_env(
    extra: tuple[str, ...] = (), environ: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment a served model starts with: the allowed part of the worker's, the
    worker's Hub caches, and a token file that holds nothing (``HOME`` is lent, and
    huggingface_hub reads ``~/.cache/huggingface/token`` when no ``HF_TOKEN_PATH`` says
    otherwise)."""
    source = dict(os.environ if environ is None else environ)
    lent = {
        name: value
        for name, value in source.items()
        if (name in SERVER_ENV_NAMES or name.startswith(SERVER_ENV_PREFIXES) or name in extra)
        and not SECRET_NAME.search(name)
        and name != "HF_HOME"
    }
    return {**lent, **hub_caches(source), "HF_TOKEN_PATH": os.devnull}


def hub_caches(environ: dict[str, str]) -> dict[str, str]:
    """The worker's Hub model and Xet caches, where huggingface_hub puts them by default
    (``HF_HUB_CACHE``, else ``HF_HOME/hub``; ``HF_HOME`` defaults to
    ``$XDG_CACHE_HOME/huggingface``, else ``~/.cache/huggingface``): a model the worker has
    downloaded is not fetched again."""
    user = environ.get("HOME") or os.path.expanduser("~")
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(user, ".cache")
    home = environ.get("HF_HOME") or os.path.join(cache, "huggingface")
    found = {
        "HF_HUB_CACHE": environ.get("HF_HUB_CACHE") or os.path.join(home, "hub"),
        "HF_XET_CACHE": environ.get("HF_XET_CACHE") or os.path.join(home, "xet"),
    }
    # "~/hf" as huggingface_hub reads it: the worker's home, not the server's working folder
    return {name: re.sub(r"^~(?=/|$)", lambda _: user, path) for name, path in found.items()}


def server_command(settings: ServeSettings, model: str, port: int) -> list[str]:
    """The argument list that serves ``model`` under its own name on ``host:port``."""
    exe = list(settings.executable or DEFAULT_EXECUTABLES[settings.kind])
    where = ["--host", settings.host, "--port", str(port)]
    tp, mem, ctx = settings.tensor_parallel, settings.gpu_memory_utilization, settings.max_model_len
    if settings.kind == "vllm":
        args = [model, *where, "--served-model-name", model, "--tensor-parallel-size", str(tp)]
        args += ["--gpu-memory-utilization", str(mem)] if mem else []
        args += ["--max-model-len", str(ctx)] if ctx else []
    elif settings.kind == "llamacpp":
        # -hf downloads the repo's GGUF; -ngl 999 puts every layer on the GPU(s).
        args = ["-hf", model, *where, "--alias", model, "-ngl", "999"]
        args += ["--ctx-size", str(ctx)] if ctx else []
    else:
        args = ["--model-path", model, *where, "--served-model-name", model, "--tp", str(tp)]
        args += ["--mem-fraction-static", str(mem)] if mem else []
        args += ["--context-length", str(ctx)] if ctx else []
    return [*exe, *args, *settings.extra_args]


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class ServedModel:
    """``with ServedModel(settings, "OWNER/NAME") as server:`` … ``server.base_url`` …"""

    def __init__(
        self,
        settings: ServeSettings,
        model: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings, self.model = settings, model
        self.port = free_port(settings.host)
        self.base_url = f"http://{settings.host}:{self.port}/v1"
        self._sleep, self._clock = sleep, clock
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None
        self._temp: Path | None = None

    def __enter__(self) -> ServedModel:
        folder = self.settings.log_dir
        if folder is None:
            folder = self._temp = Path(tempfile.mkdtemp(prefix="intima-serve-"))
        folder.mkdir(parents=True, exist_ok=True)
        self._log = folder / f"{self.settings.kind}-{self.port}.log"
        command = server_command(self.settings, self.model, self.port)
        if shutil.which(command[0]) is None:
            self._remove_temp()
            raise ServerNotStarted(
                f"cannot start the {self.settings.kind} server ({command[0]}): no such program"
            )
        guarded = [sys.executable, str(_GUARD), str(os.getpid()), *command]
        with self._log.open("wb") as sink:
            try:
                # A session of its own: one killpg stops the server and all it started.
                self._proc = subprocess.Popen(  # noqa: S603 - an argument list, no shell
                    guarded,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=server_env(self.settings.pass_env),
                    start_new_session=True,
                )
            except OSError as exc:
                self._remove_temp()
                raise ServerNotStarted(
                    f"cannot start the {self.settings.kind} server ({command[0]}): {exc.strerror}"
                ) from exc
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _ready(self) -> bool:
        """``/health`` says 200 only once the model is loaded (llama-server answers
        ``/v1/models`` while still loading), and the model list must name the model."""
        import httpx

        root = self.base_url.removesuffix("/v1")
        if httpx.get(f"{root}/health", timeout=2).status_code != 200:
            return False
        listed = httpx.get(f"{self.base_url}/models", timeout=2)
        if listed.status_code != 200:
            return False
        try:
            data = listed.json().get("data")
            return any(isinstance(m, dict) and m.get("id") == self.model for m in data)
        except (ValueError, AttributeError, TypeError):
            return False

    def _wait_ready(self) -> None:
        assert self._proc is not None
        from intima.service.llama_server import poll_ready  # httpx: only when serving

        state = poll_ready(
            self.base_url,
            self._proc,
            self.settings.ready_timeout_s,
            every=0.5,
            clock=self._clock,
            sleep=self._sleep,
            probe=self._ready,
        )
        if state == "exited":
            raise ModelLoadFailed(
                f"the {self.settings.kind} server could not load {self.model} (exit "
                f"{self._proc.returncode}): {self.log_tail()}"
            )
        if state == "timeout":
            raise ModelLoadFailed(
                f"the {self.settings.kind} server did not answer for {self.model} within "
                f"{self.settings.ready_timeout_s:g} s: {self.log_tail()}"
            )

    def log_tail(self) -> str:
        """The end of the server's log, on one line: what it said before it stopped, with the
        worker's secrets blanked out *before* it is cut, so no part of one survives the cut."""
        from intima.service.queue import redact

        if self._log is None or not self._log.exists():
            return "no log"
        with self._log.open("rb") as f:
            start = max(0, f.seek(0, os.SEEK_END) - 8192)
            f.seek(start)
            text = f.read().decode("utf-8", "replace")
        if start:  # the first word may be the end of a longer one (a token's tail): drop it
            text = re.sub(r"^\S*", "", text)
        lines = [line.strip() for line in redact(text).splitlines() if line.strip()]
        tail = " | ".join(lines[-3:]) or "the server printed nothing"
        return tail[-REASON_CHARS:]

    def stop(self) -> None:
        """Stop the server's whole process group, then remove a temporary log folder."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop_group(proc)
        self._remove_temp()

    def _remove_temp(self) -> None:
        # Failure reasons quote the log before this runs; a log folder the worker chose stays.
        temp, self._temp = self._temp, None
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the group (the guard waits for the server, then kills what is left); SIGKILL
    to the group if the guard is not done in time."""
    for sig, wait in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def is_hub_request(config: ModelConfig) -> bool:
    """A Hub model with no server named: what ``--serve`` starts a server for (and ``--route``
    sends on)."""
    from intima.service.public import HUB_PROVIDER

    spec = config.parsed
    return spec.provider == HUB_PROVIDER and not spec.base_urls and "/" in spec.model


@contextmanager
def serving(
    config: ModelConfig, serve: ServeSettings | None = None, route: Route | None = None
) -> Iterator[ModelConfig]:
    """The configuration to run a request with: against a server started for its Hub model
    (``serve``, stopped on the way out), through Inference Providers (``route="hf"``: the
    router's URL and ``HF_TOKEN``), or as it is. Only operational fields change, so the
    configuration key, and every stored answer, stays the request's."""
    if not is_hub_request(config):
        yield config
    elif serve is not None:
        with ServedModel(serve, config.parsed.model) as server:
            yield config.model_copy(update={"base_urls": (server.base_url,)})
    elif route == "hf":
        from intima.providers.hf_router import router_url

        update = {"base_urls": (router_url(),), "api_key_env": "HF_TOKEN"}
        yield config.model_copy(update=update)
    else:
        yield config
