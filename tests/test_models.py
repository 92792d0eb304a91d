"""Real backends: llama-cpp-python's OpenAI-compatible server, and llama.cpp in-process."""

import pytest

from intima.core.config import GenerationSettings, ModelConfig
from intima.core.errors import ConfigError
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.providers import get_model, provider_names
from intima.store import Store


def _few(n: int) -> PromptSet:
    demo = load_prompts("demo")
    return PromptSet(info=demo.info, prompts=demo.prompts[:n])


def test_builtins_are_registered_as_entry_points_like_plugins() -> None:
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="intima.providers")}
    assert {"llamacpp", "openai-compat", "openai", "anthropic", "transformers", "hf"} <= names
    assert set(provider_names()) >= names


def test_unknown_provider_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown model provider 'nope'.*llamacpp"):
        get_model(ModelConfig(spec="nope:model"))


def test_run_against_the_real_llama_cpp_server(tmp_path, llama_server) -> None:
    cfg = ModelConfig(
        spec=f"openai-compat:smollm2@{llama_server}",
        generation=GenerationSettings(max_tokens=32, temperature=0.0, seed=1),
        concurrency=2,
    )
    prompts = _few(4)
    with Store.open(tmp_path / "s.db") as store:
        [s] = generate(store, prompts, [cfg])
        assert (s.generated, s.failed, s.status) == (4, 0, "complete")
        rows = store.run_rows(s.run_id)
    assert all(
        r["response"] and r["completion_tokens"] > 0 and r["prompt_tokens"] > 0 for r in rows
    )
    assert {r["finish_reason"] for r in rows} <= {"stop", "length"}


def test_a_base_url_without_v1_gets_a_hint(tmp_path, llama_server) -> None:
    """A real server serves under /v1; without it every request was 'HTTP 404' and no hint."""
    from conftest import run_cli

    root = llama_server.removesuffix("/v1")
    res = run_cli("run", "--model", f"openai-compat:smollm2@{root}", "--dataset", "demo",
                  "--limit", "1", "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert "(HTTP 404)" in last and last.endswith(f"did you mean {root}/v1?")


def test_embedded_llamacpp_default_model(tmp_path) -> None:
    cfg = ModelConfig(
        spec="llamacpp", generation=GenerationSettings(max_tokens=24, temperature=0.0)
    )
    with Store.open(tmp_path / "s.db") as store:
        [s] = generate(store, _few(2), [cfg])
        rows = store.run_rows(s.run_id)
    assert s.generated == 2
    assert all(r["response"].strip() for r in rows)
    assert rows[0]["provider"] == "llamacpp"


def test_llamacpp_with_a_missing_file_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no such GGUF file"):
        get_model(ModelConfig(spec="llamacpp:/nowhere/model.gguf"))
