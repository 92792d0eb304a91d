"""Hugging Face Inference Providers (``hf:OWNER/NAME[:provider]``) against a local stand-in for
the router, which speaks OpenAI's chat completions (tests/fake_vendors.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conftest import run_cli
from fake_vendors import FakeVendor
from intima.core.config import ModelConfig
from intima.core.errors import ConfigError
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.judges.loop import judge
from intima.providers import get_model
from intima.providers.hf_router import ROUTER_ENV, ROUTER_URL
from intima.store import Store

TOKEN = "hf_SENTINELtoken9c2e"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture
def router(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVendor]:
    server = FakeVendor("hf", TOKEN)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv(ROUTER_ENV, server.base_url)
    yield server
    server.stop()


def test_generates_and_judges_through_the_router_with_the_provider_suffix(tmp_path, router) -> None:
    demo = load_prompts("demo")
    three = PromptSet(info=demo.info, prompts=demo.prompts[:3])
    with Store.open(tmp_path / "s.db") as store:
        [run] = generate(store, three, [ModelConfig(spec=f"hf:{MODEL}:novita")])
        [s] = judge(store, [ModelConfig(spec=f"hf:{MODEL}")])
        [row] = store.query("SELECT provider, model_name FROM runs")
    assert (run.generated, s.scored) == (3, 3)
    assert (row["provider"], row["model_name"]) == ("hf", f"{MODEL}:novita")
    models = [b["model"] for b in router.chat_bodies]
    assert models == [f"{MODEL}:novita"] * 3 + [MODEL] * 3
    assert router.chat_bodies[-1]["response_format"]["type"] == "json_schema"
    assert {h["authorization"] for h in router.headers_seen} == {f"Bearer {TOKEN}"}


def test_the_router_is_the_default_and_the_spec_is_checked(monkeypatch) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.delenv(ROUTER_ENV, raising=False)
    assert get_model(ModelConfig(spec=f"hf:{MODEL}:together")).urls == (ROUTER_URL,)  # type: ignore[attr-defined]
    for bad in ("hf:Llama-3.1-8B", "hf:", "hf:a/b/c"):
        with pytest.raises(ConfigError, match="OWNER/NAME"):
            get_model(ModelConfig(spec=bad))
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(ConfigError, match="HF_TOKEN"):
        get_model(ModelConfig(spec=f"hf:{MODEL}"))


def test_cli_run_with_hf_and_the_token_stays_secret(tmp_path, router) -> None:
    store = tmp_path / "s.db"
    env = {"HF_TOKEN": TOKEN, ROUTER_ENV: router.base_url}
    proc = run_cli("run", "-m", f"hf:{MODEL}:novita", "--dataset", "demo", "--limit", "2",
                   "--store", str(store), env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "hf:meta-llama/Llama-3.1-8B-Instruct:novita" in proc.stdout
    assert TOKEN not in proc.stdout + proc.stderr and b"SENTINEL" not in store.read_bytes()
    missing = run_cli("run", "-m", f"hf:{MODEL}", "--dataset", "demo", "--store", str(store),
                      env={"HF_TOKEN": ""})  # fmt: skip
    assert missing.returncode != 0 and "HF_TOKEN" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.parametrize(
    "url",
    ["http://user:SENTINELpw@{host}/v1", "http://SENTINELtoken@{host}/v1",
     "http://{host}/v1?api_key=SENTINEL"],
)  # fmt: skip
def test_a_router_url_with_credentials_is_refused_and_never_printed_or_stored(
    tmp_path, router, url
) -> None:
    """Issue #30: INTIMA_HF_ROUTER_URL=http://user:pw@... was printed and stored with the run
    (runs.config_json); it is refused in one line naming the variable, without repeating it."""
    store = tmp_path / "s.db"
    env = {"HF_TOKEN": TOKEN, ROUTER_ENV: url.format(host=f"127.0.0.1:{router.port}")}
    proc = run_cli("run", "-m", f"hf:{MODEL}", "--dataset", "demo", "--limit", "1",
                   "--store", str(store), env=env)  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert ROUTER_ENV in proc.stderr and "Traceback" not in proc.stderr
    assert "SENTINEL" not in proc.stdout + proc.stderr
    assert not store.exists() or b"SENTINEL" not in store.read_bytes()
    assert router.chat_bodies == []
