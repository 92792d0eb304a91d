"""Model servers started per request (``intima worker --serve``), with a stand-in executable
that speaks the OpenAI API for the model it is told to serve (tests/fake_model_server.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

from intima.service.model_server import ModelLoadFailed, ServedModel, ServeSettings, server_command

STAND_IN = (sys.executable, str(Path(__file__).parent / "fake_model_server.py"))
MODEL = "Qwen/Qwen3-0.6B"


def test_command_lines_carry_the_model_and_the_gpu_settings() -> None:
    vllm = ServeSettings(kind="vllm", tensor_parallel=2, gpu_memory_utilization=0.8)
    assert server_command(vllm, MODEL, 9000) == [
        "vllm", "serve", MODEL, "--host", "127.0.0.1", "--port", "9000",
        "--served-model-name", MODEL, "--tensor-parallel-size", "2",
        "--gpu-memory-utilization", "0.8",
    ]  # fmt: skip
    llama = server_command(ServeSettings(kind="llamacpp", max_model_len=8192), MODEL, 9001)
    assert llama[:3] == ["llama-server", "-hf", MODEL] and llama[-2:] == ["--ctx-size", "8192"]
    sglang = server_command(ServeSettings(kind="sglang", extra_args=("--x", "1")), MODEL, 9002)
    assert sglang[1:4] == ["-m", "sglang.launch_server", "--model-path"] and sglang[-2:] == [
        "--x",
        "1",
    ]


@pytest.mark.parametrize("kind", ["vllm", "llamacpp", "sglang"])
def test_a_server_is_started_for_the_model_answers_and_is_stopped(
    tmp_path, kind, monkeypatch
) -> None:
    monkeypatch.setenv("FAKE_SERVER_LOG", str(tmp_path / "starts.jsonl"))
    settings = ServeSettings(kind=kind, executable=STAND_IN, log_dir=tmp_path, ready_timeout_s=60)
    with ServedModel(settings, MODEL) as server:
        listed = httpx.get(f"{server.base_url}/models").json()["data"]
        proc = server._proc
    assert [m["id"] for m in listed] == [MODEL]
    assert proc is not None and proc.poll() is not None  # stopped on the way out
    [start] = [json.loads(x) for x in (tmp_path / "starts.jsonl").read_text().splitlines()]
    assert MODEL in start["args"]


def test_a_model_that_fails_to_load_says_why(tmp_path) -> None:
    settings = ServeSettings(kind="vllm", executable=STAND_IN, log_dir=tmp_path)
    with pytest.raises(
        ModelLoadFailed, match="could not load org/broken-model .*unsupported architecture"
    ):
        with ServedModel(settings, "org/broken-model"):
            pass
    missing = ServeSettings(kind="vllm", executable=("/nonexistent/vllm",), log_dir=tmp_path)
    with pytest.raises(ModelLoadFailed, match="cannot start the vllm server"):
        with ServedModel(missing, MODEL):
            pass


def test_serving_gives_the_request_a_server_or_the_router_and_keeps_its_key(
    tmp_path, monkeypatch
) -> None:
    from intima.core.config import ModelConfig
    from intima.providers.hf_router import ROUTER_ENV
    from intima.service.model_server import serving

    hub = ModelConfig(spec=f"openai-compat:{MODEL}")
    settings = ServeSettings(kind="vllm", executable=STAND_IN, log_dir=tmp_path)
    with serving(hub, settings) as served:
        assert served.config_key == hub.config_key
        assert httpx.get(f"{served.base_urls[0]}/models").status_code == 200
    monkeypatch.setenv(ROUTER_ENV, "http://127.0.0.1:9/v1")
    with serving(hub, route="hf") as routed:
        assert (routed.base_urls, routed.api_key_env) == (("http://127.0.0.1:9/v1",), "HF_TOKEN")
        assert routed.config_key == hub.config_key
    api = ModelConfig(spec="openai:gpt-4o-mini")
    with serving(api, settings) as same:
        assert same is api  # not a Hub model: nothing started
