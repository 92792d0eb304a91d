"""``intima worker --serve`` / ``--route``: the options that start a model server per request
(or send requests to Inference Providers), declared once and turned into settings here so the
worker command stays a thin list of options."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from intima.cli._params import nonempty
from intima.core.errors import ConfigError
from intima.service.model_server import Route, ServerKind, ServeSettings

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
RouteOpt = Annotated[
    Route | None,
    typer.Option(
        help="Send Hub model requests to Hugging Face Inference Providers (hf: the router, key "
        "HF_TOKEN) instead of a server (default: none).",
    ),
]


def serve_settings(
    serve: ServerKind | None,
    command: str | None,
    tensor_parallel: int,
    gpu_memory: float | None,
    max_model_len: int | None,
    timeout: float,
    *,
    route: Route | None,
    base_url: list[str] | None,
) -> ServeSettings | None:
    """The worker's server settings, or None; refuses options that contradict each other."""
    if serve is not None and (route is not None or base_url):
        raise ConfigError("--serve starts a server per request: leave out --route and --base-url")
    if route is not None and base_url:
        raise ConfigError("--route sends requests to the router: leave out --base-url")
    if serve is None:
        if command is not None:
            raise ConfigError("--serve-command needs --serve (vllm, llamacpp or sglang)")
        return None
    executable = tuple(shlex.split(command)) if command else None
    return ServeSettings(
        kind=serve, executable=executable, tensor_parallel=tensor_parallel,
        gpu_memory_utilization=gpu_memory, max_model_len=max_model_len, ready_timeout_s=timeout,
    )  # fmt: skip
