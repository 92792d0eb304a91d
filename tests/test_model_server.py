"""Model servers started per request (``intima worker --serve``), with a stand-in executable
that speaks the OpenAI API for the model it is told to serve (tests/fake_model_server.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from intima.service.model_server import ModelLoadFailed, ServedModel, ServeSettings, server_command
from reliability_summary import TALLY

STAND_IN = (sys.executable, str(Path(__file__).parent / "fake_model_server.py"))
MODEL = "Qwen/Qwen3-0.6B"


def test_command_lines_carry_the_model_and_the_gpu_settings() -> None:
    vllm = ServeSettings(kind="vllm", tensor_parallel=2, gpu_memory_utilization=0.8)
    assert server_command(vllm, MODEL, 9000) == [
        "vllm", "serve", MODEL, "--host", "127.0.0.1", "--port", "9000",
        "--served-model-name", MODEL, "--tensor-parallel-size", "2",
        "--gpu-memory-utilization", "0.8",
    ]  # fmt: skip
    # every setting each server takes, under its own flag (a dropped one fails here)
    full = {"tensor_parallel": 4, "gpu_memory_utilization": 0.7, "max_model_len": 16384}
    vllm_full = server_command(ServeSettings(kind="vllm", **full), MODEL, 9003)
    assert vllm_full[vllm_full.index("--served-model-name") :] == [
        "--served-model-name", MODEL, "--tensor-parallel-size", "4",
        "--gpu-memory-utilization", "0.7", "--max-model-len", "16384",
    ]  # fmt: skip
    sglang_full = server_command(ServeSettings(kind="sglang", **full), MODEL, 9004)
    assert sglang_full[sglang_full.index("--model-path") :] == [
        "--model-path", MODEL, "--host", "127.0.0.1", "--port", "9004",
        "--served-model-name", MODEL, "--tp", "4", "--mem-fraction-static", "0.7",
        "--context-length", "16384",
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
    settings = ServeSettings(kind=kind, executable=STAND_IN, log_dir=tmp_path, ready_timeout_s=60,
                             pass_env=("FAKE_SERVER_LOG",))  # fmt: skip
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


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a parent that is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or during the read
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _gone(*pids: int) -> bool:
    """Wait until every pid has ended (a kill is asynchronous); False if one never does."""
    for _ in range(600):
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_a_served_model_gets_only_the_environment_it_needs(tmp_path, monkeypatch) -> None:
    """Issue #30: the server got the worker's whole environment, HF_TOKEN included, with which
    it could fetch a private model a request named. Only the allowed names reach it."""
    secrets = {"HF_TOKEN": "hf_worker_secret_01234567", "OPENAI_API_KEY": "sk-secret-0123456",
               "ANTHROPIC_API_KEY": "sk-ant-secret-01", "INTIMA_HUB_TOKEN": "hf_intima_0123",
               "VLLM_API_KEY": "vllm-secret-0123", "AWS_SECRET_ACCESS_KEY": "aws-secret-0123"}  # fmt: skip
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("FAKE_SERVER_LOG", str(tmp_path / "starts.jsonl"))
    settings = ServeSettings(kind="vllm", executable=STAND_IN, log_dir=tmp_path,
                             pass_env=("FAKE_SERVER_LOG",))  # fmt: skip
    with ServedModel(settings, MODEL):
        [start] = [json.loads(x) for x in (tmp_path / "starts.jsonl").read_text().splitlines()]
        raw = Path(f"/proc/{start['pid']}/environ").read_bytes()
    env = dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)
    assert not set(secrets) & set(env), sorted(env)
    assert not any(v in raw.decode() for v in secrets.values())
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1" and env["HF_HUB_OFFLINE"] == "1"
    assert env["PATH"] == os.environ["PATH"]
    with pytest.raises(ValueError, match="HF_TOKEN looks like a secret"):
        ServeSettings(kind="vllm", pass_env=("HF_TOKEN",))


def test_a_served_model_is_lent_the_hub_cache_never_the_folder_with_the_token(
    tmp_path, monkeypatch
) -> None:
    """Issue 38: HF_TOKEN was withheld but HF_HOME lent, so huggingface_hub in the server found
    the token `hf auth login` had stored there (or in ~/.cache/huggingface when HF_HOME is
    unset and HOME is lent). The server gets the worker's cache, and finds no token."""
    home, hf_home = tmp_path / "home", tmp_path / "hf-home"
    for folder in (hf_home, home / ".cache" / "huggingface"):
        folder.mkdir(parents=True)
        (folder / "token").write_text("hf_stored_by_hf_auth_login_0123\n")
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE",
                 "HF_XET_CACHE", "XDG_CACHE_HOME"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FAKE_SERVER_LOG", str(tmp_path / "starts.jsonl"))
    starts = []
    for worker_home in (str(hf_home), None):  # HF_HOME set, then the default under HOME
        if worker_home is None:
            monkeypatch.delenv("HF_HOME")
        else:
            monkeypatch.setenv("HF_HOME", worker_home)
        settings = ServeSettings(kind="vllm", executable=STAND_IN, log_dir=tmp_path,
                                 extra_args=("--fake-report-token",),
                                 pass_env=("FAKE_SERVER_LOG",))  # fmt: skip
        with ServedModel(settings, MODEL):
            start = json.loads((tmp_path / "starts.jsonl").read_text().splitlines()[-1])
            raw = Path(f"/proc/{start['pid']}/environ").read_bytes().decode()
        starts.append((start, dict(i.split("=", 1) for i in raw.split("\0") if "=" in i)))
    TALLY.secret_places_searched += len(starts)
    TALLY.secrets_found += sum(start["token"] is not None for start, _ in starts)
    for (start, env), cache in zip(starts, (hf_home, home / ".cache" / "huggingface"), strict=True):
        assert start["token"] is None  # what huggingface_hub.get_token() found in the server
        assert "HF_HOME" not in env
        assert env["HF_HUB_CACHE"] == str(cache / "hub")  # the worker's downloads are reused
    with pytest.raises(ValueError, match="HF_HOME holds the Hub token"):
        ServeSettings(kind="vllm", pass_env=("HF_HOME",))


def test_stopping_a_served_model_stops_every_process_it_started(tmp_path) -> None:
    """Issue #30: the server's children (vLLM's GPU workers) outlived the stop."""
    child_file = tmp_path / "child.pid"
    settings = ServeSettings(kind="vllm", executable=STAND_IN, log_dir=tmp_path,
                             extra_args=("--fake-child", str(child_file)))  # fmt: skip
    with ServedModel(settings, MODEL) as server:
        child = int(child_file.read_text())
        assert _alive(child)
        assert server._proc is not None
        guard = server._proc.pid
    assert _gone(child, guard)


def test_a_killed_worker_takes_its_served_model_with_it(tmp_path) -> None:
    """Issue #30: after ``kill -9`` of the worker, nothing of the server it started runs on."""
    child_file, starts = tmp_path / "child.pid", tmp_path / "starts.jsonl"
    script = (
        "import sys, time\n"
        "from intima.service.model_server import ServedModel, ServeSettings\n"
        f"s = ServeSettings(kind='vllm', executable=({sys.executable!r}, {str(STAND_IN[1])!r}),"
        f" log_dir={str(tmp_path)!r}, extra_args=('--fake-child', {str(child_file)!r}),"
        " pass_env=('FAKE_SERVER_LOG',))\n"
        f"with ServedModel(s, {MODEL!r}):\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(600)\n"
    )
    env = {**os.environ, "FAKE_SERVER_LOG": str(starts)}
    worker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
    try:
        assert worker.stdout is not None and worker.stdout.readline() == b"ready\n"
        server = json.loads(starts.read_text())["pid"]
        child = int(child_file.read_text())
        assert _alive(server) and _alive(child)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert _gone(server, child)
    finally:
        worker.kill()
        worker.wait()


def test_the_log_is_redacted_before_it_is_cut(tmp_path, monkeypatch) -> None:
    """Issue #30: a token across the 600-character cut kept its tail in the failure reason."""
    from intima.service.queue import redact

    token = "hf_" + "q7" * 100
    monkeypatch.setenv("HF_TOKEN", token)
    say = "loading with " + token + " " + "z" * 450  # the cut falls inside the token
    settings = ServeSettings(kind="vllm", executable=STAND_IN, log_dir=tmp_path,
                             extra_args=("--fake-say", say))  # fmt: skip
    with pytest.raises(ModelLoadFailed) as failed:
        with ServedModel(settings, "org/broken-model"):
            pass
    reason = redact(str(failed.value))
    assert "unsupported architecture" in reason and "z" * 100 in reason
    assert token[-40:] not in reason and token[-40:] not in str(failed.value)


def test_a_temporary_log_folder_is_removed_on_stop_after_the_reason_is_read(
    tmp_path, monkeypatch
) -> None:
    """Issue #30: the temporary log folder of every start was left behind."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    settings = ServeSettings(kind="vllm", executable=STAND_IN)
    with pytest.raises(ModelLoadFailed, match="unsupported architecture"):
        with ServedModel(settings, "org/broken-model"):
            pass
    assert not list(tmp_path.glob("intima-serve-*"))
    with ServedModel(settings, MODEL):
        assert list(tmp_path.glob("intima-serve-*/vllm-*.log"))
    assert not list(tmp_path.glob("intima-serve-*"))


def test_ready_means_health_says_ready_not_just_a_model_list(tmp_path) -> None:
    """Issue #30: llama-server lists its model while still loading; readiness was that list,
    so the first answers were 503s. Now ``/health`` must say 200 first."""
    settings = ServeSettings(kind="llamacpp", executable=STAND_IN, log_dir=tmp_path,
                             extra_args=("--fake-loading", "3"))  # fmt: skip
    with ServedModel(settings, MODEL) as server:
        body = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}
        answer = httpx.post(f"{server.base_url}/chat/completions", json=body)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    ("options", "named"),
    [({"tensor_parallel": 2}, "--tensor-parallel"),
     ({"gpu_memory_utilization": 0.8}, "--gpu-memory-utilization")],
)  # fmt: skip
def test_gpu_options_llama_server_cannot_honour_are_refused(options, named) -> None:
    with pytest.raises(ValueError, match=f"llama-server cannot honour {named}"):
        ServeSettings(kind="llamacpp", **options)
    ServeSettings(kind="vllm", **options)  # vLLM takes them
