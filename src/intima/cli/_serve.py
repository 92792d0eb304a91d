"""``intima worker --serve`` / ``--route``: the options that start a model server per request
(or send requests to Inference Providers), declared once and turned into settings here
(:class:`ServeOptions`) so the worker command stays a thin list of options."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from intima.cli._options import OptionGroup
from intima.cli._params import nonempty
from intima.core.errors import ConfigError
from intima.service.model_server import SECRET_NAME, Route, ServerKind, ServeSettings, unhonoured

ServeOpt = Annotated[
    ServerKind | None,
    typer.Option(
        help="Start this server for each claimed Hub model request (vllm, llamacpp: llama.cpp's "
        "llama-server, sglang), run it, stop it (default: none; requests go to --base-url).",
    ),
]
ServeCommandOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="Program (and leading arguments) that starts the server, e.g. '/opt/vllm/bin/vllm "
        "serve' (default: 'vllm serve', 'llama-server', 'python -m sglang.launch_server').",
    ),
]
TensorParallelOpt = Annotated[
    int, typer.Option(min=1, max=64, help="GPUs per served model (tensor parallel size).")
]
GpuMemoryOpt = Annotated[
    float | None,
    typer.Option(min=0.01, max=1.0, help="Share of each GPU's memory the server may take."),
]
MaxModelLenOpt = Annotated[
    int | None,
    typer.Option(min=256, max=10_000_000, help="Context length in tokens (default: the model's)."),
]
ServeTimeoutOpt = Annotated[
    float,
    typer.Option(min=1.0, max=86400.0, help="Seconds a started server has to load its model."),
]
ServeEnvOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--serve-env",
        parser=nonempty,
        help="Also lend the server this environment variable of the worker's; repeatable "
        "(default: only PATH, HOME, the locale, the GPUs', the Hub cache's and the servers' "
        "own settings; never a key or token).",
    ),
]
RouteOpt = Annotated[
    Route | None,
    typer.Option(
        help="Send Hub model requests to Hugging Face Inference Providers (hf: the router, key "
        "HF_TOKEN) instead of a server (default: none).",
    ),
]


class ServeOptions(OptionGroup):
    """The worker's server options (with ``--base-url``, which a server replaces)."""

    serve: ServerKind | None
    serve_command: str | None
    tensor_parallel: int
    gpu_memory_utilization: float | None
    max_model_len: int | None
    serve_timeout: float
    serve_env: list[str] | None
    route: Route | None
    base_url: list[str] | None

    def settings(self) -> ServeSettings | None:
        """The worker's server settings, or None; refuses options that contradict each other."""
        serve, route, base_url = self.serve, self.route, self.base_url
        if serve is not None and (route is not None or base_url):
            raise ConfigError(
                "--serve starts a server per request: leave out --route and --base-url"
            )
        if route is not None and base_url:
            raise ConfigError("--route sends requests to the router: leave out --base-url")
        if serve is None:
            given = (
                ("--serve-command", self.serve_command is not None),
                ("--serve-env", self.serve_env),
            )
            for name, is_given in given:
                if is_given:
                    raise ConfigError(f"{name} needs --serve (vllm, llamacpp or sglang)")
            return None
        if problem := unhonoured(serve, self.tensor_parallel, self.gpu_memory_utilization):
            raise ConfigError(problem)
        lent = tuple(self.serve_env or ())
        if secret := [name for name in lent if SECRET_NAME.search(name)]:
            raise ConfigError(
                f"--serve-env {secret[0]}: a served model is never lent a key or token (a public "
                "model needs none)"
            )
        return ServeSettings(
            kind=serve,
            executable=_program(self.serve_command),
            tensor_parallel=self.tensor_parallel,
            gpu_memory_utilization=self.gpu_memory_utilization,
            max_model_len=self.max_model_len,
            ready_timeout_s=self.serve_timeout,
            pass_env=lent,
        )


def _program(command: str | None) -> tuple[str, ...] | None:
    """``--serve-command`` split as a shell would, without a shell."""
    if command is None:
        return None
    try:
        words = tuple(shlex.split(command))
    except ValueError as exc:  # an unclosed quote
        raise ConfigError(
            f"--serve-command {command!r} cannot be split into words ({exc}); close its quotes"
        ) from exc
    if not words or not words[0].strip():
        raise ConfigError("--serve-command names no program")
    return words
