from pathlib import Path

import pytest
from pydantic import ValidationError

from intima.core.config import (
    GenerationSettings,
    ModelConfig,
    ModelSpec,
    load_price_table,
    load_run_file,
)
from intima.core.errors import ConfigError


@pytest.mark.parametrize(
    ("spec", "provider", "model", "urls"),
    [
        ("llamacpp", "llamacpp", "", ()),
        ("ollama-ish:qwen3:8b@http://h:11434/v1", "ollama-ish", "qwen3:8b", ("http://h:11434/v1",)),
        (
            "openai-compat:Qwen/Qwen3-8B@http://a:8000/v1/,http://b:8000/v1",
            "openai-compat",
            "Qwen/Qwen3-8B",
            ("http://a:8000/v1", "http://b:8000/v1"),
        ),
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini", ()),
    ],
)
def test_spec_grammar(spec: str, provider: str, model: str, urls: tuple[str, ...]) -> None:
    parsed = ModelSpec.parse(spec)
    assert (parsed.provider, parsed.model, parsed.base_urls) == (provider, model, urls)


@pytest.mark.parametrize("bad", ["", "   ", "open ai:x", "x:y@ftp://host"])
def test_bad_specs_are_rejected(bad: str) -> None:
    with pytest.raises(ConfigError):
        ModelSpec.parse(bad)


def test_cache_key_covers_output_settings_only() -> None:
    base = ModelConfig(spec="openai-compat:m@http://a/v1")
    same = ModelConfig(
        spec="openai-compat:m@http://b/v1",
        label="other",
        timeout_s=5,
        concurrency=3,
        max_retries=0,
        api_key_env="X",
    )
    assert base.config_key == same.config_key
    for changed in (
        ModelConfig(spec="openai-compat:m2@http://a/v1"),
        ModelConfig(spec="openai-compat:m@http://a/v1", system_prompt="be kind"),
        ModelConfig(
            spec="openai-compat:m@http://a/v1", generation=GenerationSettings(temperature=0.7)
        ),
        ModelConfig(spec="openai-compat:m@http://a/v1", generation=GenerationSettings(seed=1)),
        ModelConfig(
            spec="openai-compat:m@http://a/v1", generation=GenerationSettings(max_tokens=10)
        ),
    ):
        assert changed.config_key != base.config_key


def test_run_file_lists_several_configurations(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(
        'dataset = "demo"\n[[models]]\nspec = "llamacpp"\nlabel = "plain"\n'
        '[[models]]\nspec = "llamacpp"\nlabel = "companion"\nsystem_prompt = "You are Mia."\n'
        "[models.generation]\ntemperature = 0.7\n"
    )
    run = load_run_file(path)
    assert [m.label for m in run.models] == ["plain", "companion"]
    assert run.models[1].generation.temperature == 0.7
    assert run.models[0].config_key != run.models[1].config_key


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[[models]]\nspec = 'llamacpp'\ncolour = 'red'\n", "models.0.colour"),
        ("models = []\n", "models"),
        ("[[models]\n", "not valid TOML"),
        ("[[models]]\nspec = 'llamacpp'\n[models.generation]\ntemperature = 9\n", "temperature"),
    ],
)
def test_invalid_config_files_name_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_run_file(path)


def test_price_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('["gpt-4o-mini"]\ninput_per_mtok = 0.15\noutput_per_mtok = 0.6\n')
    table = load_price_table(path)
    price = table.for_model(ModelSpec.parse("openai:gpt-4o-mini"))
    assert price is not None and price.cost(1_000_000, 1_000_000) == pytest.approx(0.75)
    path.write_text('["m"]\ninput_per_mtok = -1\noutput_per_mtok = 0.6\n')
    with pytest.raises(ConfigError, match="greater than or equal to 0"):
        load_price_table(path)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai-compat:m@http://user:pass@127.0.0.1:8000/v1", "carries credentials"),
        ("openai-compat:m@http://:tok@127.0.0.1/v1", "carries credentials"),
        ("openai-compat:m@http://127.0.0.1:99999/v1", "Port out of range"),
        ("openai-compat:m@http://[::1/v1", "Invalid IPv6 URL"),
        ("openai-compat:m@http:///v1", "has no host"),
        # A key in the query string used to be accepted, stored and published (issue 20).
        ("openai-compat:m@http://127.0.0.1:8000/v1?key=tok-1", "query string"),
        ("openai-compat:m@https://host/v1?api_key=tok-2&x=1", "query string"),
        ("openai-compat:m@https://host/v1#tok-3", "query string or fragment"),
        ("openai-compat:m@https://host/v1?", "query string"),
    ],
)
def test_unusable_server_urls_are_refused_naming_the_problem(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        ModelSpec.parse(spec)
    assert "pass" not in str(err.value) and "tok" not in str(err.value)  # never echoed


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/v1?key=tok-4", "http://u:tok-5@127.0.0.1/v1", "ftp://h/v1"]
)
def test_base_urls_given_apart_from_the_spec_obey_the_same_rules(url: str) -> None:
    with pytest.raises(ValidationError) as err:
        ModelConfig(spec="openai-compat:m", base_urls=(url,))
    assert all("tok" not in e["msg"] for e in err.value.errors())  # what the CLI shows
    assert ModelConfig(spec="openai-compat:m", base_urls=("http://127.0.0.1:8000/v1",)).base_urls


def test_a_key_in_a_base_url_is_refused_by_the_cli_and_never_echoed(tmp_path: Path) -> None:
    from conftest import run_cli

    db = tmp_path / "s.db"
    res = run_cli("run", "--model", "openai-compat:m", "--base-url",
                  "http://127.0.0.1:8000/v1?key=tok-6", "--dataset", "demo", "--store", str(db))  # fmt: skip
    assert res.returncode == 2 and "query string" in res.stderr, res.stderr
    assert "tok-6" not in res.stderr + res.stdout and not db.exists()


def test_config_and_price_files_that_cannot_be_read_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder"):
        load_run_file(tmp_path)
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_run_file(deep)
    inf = tmp_path / "prices.toml"
    inf.write_text('["m"]\ninput_per_mtok = inf\noutput_per_mtok = 1\n')
    with pytest.raises(ConfigError, match="finite number"):
        load_price_table(inf)
    with pytest.raises(ConfigError, match="is a folder"):
        load_price_table(tmp_path)


def test_config_with_per_model_options_is_refused_not_ignored(tmp_path: Path) -> None:
    """`--config run.toml --model X` used to run the file's models and drop X without a word."""
    from conftest import invoke_cli

    cfg = tmp_path / "run.toml"
    cfg.write_text('dataset = "demo"\n[[models]]\nspec = "openai-compat:m@http://127.0.0.1:9/v1"\n')
    db = tmp_path / "s.db"
    res = invoke_cli("run", "--config", str(cfg), "--model", "openai:gpt-4o", "--temperature",
                     "0", "--store", str(db))  # fmt: skip
    assert res.returncode == 2 and not db.exists(), res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        "error: --config names the models and their settings; --model, --temperature would be "
        "ignored: put them in the config file, or leave out --config"
    )


def test_config_refuses_a_model_option_given_at_its_default_value(tmp_path: Path) -> None:
    """`--config run.toml --seed 0` ran the file's models and dropped `--seed 0` without a word:
    an option at its default could not be told from one left out. The command line says which
    were given."""
    from conftest import invoke_cli

    cfg = tmp_path / "run.toml"
    cfg.write_text('dataset = "demo"\n[[models]]\nspec = "openai-compat:m@http://127.0.0.1:9/v1"\n')
    db = tmp_path / "s.db"
    res = invoke_cli("run", "--config", str(cfg), "--seed", "0", "--max-tokens", "512",
                     "--store", str(db))  # fmt: skip
    assert res.returncode == 2 and not db.exists(), res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        "error: --config names the models and their settings; --max-tokens, --seed would be "
        "ignored: put them in the config file, or leave out --config"
    )
