"""``intima serve``: an OpenAI-compatible server on the bundled model, for trying intima."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from intima.cli._common import app, console, for_terminal, out
from intima.cli._params import nonempty
from intima.cli._signals import stop_cleanly_on_sigterm


def serve_cmd(
    model: Annotated[
        Path | None,
        typer.Option(
            dir_okay=False, help="GGUF file to serve (default: the bundled SmolLM2-135M)."
        ),
    ] = None,
    alias: Annotated[
        str, typer.Option(parser=nonempty, help="Model name the server answers to.")
    ] = "smollm2",
    host: Annotated[str, typer.Option(parser=nonempty, help="Address to listen on.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8080,
    n_ctx: Annotated[
        int, typer.Option(min=256, max=131072, help="Context window in tokens.")
    ] = 4096,
) -> None:
    """Serve a local GGUF model with llama-cpp-python's OpenAI-compatible server (Ctrl-C stops).

    Example: intima serve --port 8080, then in another shell
    intima run --model openai-compat:smollm2@http://127.0.0.1:8080/v1 --dataset demo
    """
    from intima.service.llama_server import spec_for, start, wait_ready

    base = f"http://{host}:{port}/v1"
    stop_cleanly_on_sigterm()  # else SIGTERM ends intima and leaves the server answering
    proc = start(
        "" if model is None else str(model), alias=alias, host=host, port=port, n_ctx=n_ctx
    )
    try:
        wait_ready(base, proc)
        spec = for_terminal(spec_for(alias, base))
        out.print(f"serving {for_terminal(alias)} at {for_terminal(base)}", highlight=False)
        out.print(f"  intima run --model {spec} --dataset demo", highlight=False)
        out.print(f"  intima judge -j {spec}", highlight=False)
        console.print("Ctrl-C stops the server.")
        proc.wait()
    except KeyboardInterrupt:
        # Not the runs' "run the same command again to resume": a server has nothing to resume.
        console.print("Stopped the server.")
        sys.exit(130)
    finally:
        if proc.poll() is None:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            if proc.poll() is None:
                proc.kill()


app.command("serve")(serve_cmd)
