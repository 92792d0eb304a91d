"""A model server started for one request: vLLM, llama.cpp's server or SGLang, as a subprocess on
this machine, serving the requested Hub model under its own name (``intima worker --serve``).

The worker starts it when it claims a request for a Hub model (``openai-compat:OWNER/NAME`` with
no server), waits until ``/v1/models`` answers, runs the request against it and stops it. A
model that fails to load fails the request with the server's own last words (its log's tail).
The command is an argument list (never a shell); the model id has been checked to be a Hub id.
"""

from __future__ import annotations

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

from pydantic import BaseModel, ConfigDict, Field

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


class ModelLoadFailed(ProviderError):
    """The server exited or never answered; the message carries its log's tail."""


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
    #: Where server logs go (one file per start); a temporary folder when unset.
    log_dir: Path | None = None


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

    def __enter__(self) -> ServedModel:
        folder = self.settings.log_dir or Path(tempfile.mkdtemp(prefix="intima-serve-"))
        folder.mkdir(parents=True, exist_ok=True)
        self._log = folder / f"{self.settings.kind}-{self.port}.log"
        command = server_command(self.settings, self.model, self.port)
        with self._log.open("wb") as sink:
            try:
                self._proc = subprocess.Popen(  # noqa: S603 - an argument list, no shell
                    command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
            except OSError as exc:
                raise ModelLoadFailed(
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

    def _wait_ready(self) -> None:
        assert self._proc is not None
        from intima.service.llama_server import poll_ready  # httpx: only when serving

        state = poll_ready(self.base_url, self._proc, self.settings.ready_timeout_s, every=0.5,
                           clock=self._clock, sleep=self._sleep)  # fmt: skip
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
        """The end of the server's log, on one line: what it said before it stopped."""
        if self._log is None or not self._log.exists():
            return "no log"
        text = self._log.read_bytes()[-8192:].decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        tail = " | ".join(lines[-3:]) or "the server printed nothing"
        return tail[-REASON_CHARS:]

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


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
