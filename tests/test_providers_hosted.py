"""The hosted providers (``openai``, ``anthropic``) through the vendors' own SDKs, against local
servers that speak each vendor's HTTP API (tests/fake_vendors.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli
from fake_vendors import USAGE_IN, USAGE_OUT, FakeVendor
from intima.core.config import GenerationSettings, ModelConfig, Price, PriceTable
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.judges.loop import judge
from intima.providers import effective_config
from intima.store import Store

OPENAI_KEY = "sk-SENTINEL-openai-7f3a9c"
ANTHROPIC_KEY = "sk-ant-SENTINEL-4b1d8e"
PRICE = Price(input_per_mtok=2.0, output_per_mtok=8.0)


@pytest.fixture
def three() -> PromptSet:
    demo = load_prompts("demo")
    return PromptSet(info=demo.info, prompts=demo.prompts[:3])


@pytest.fixture
def vendor(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, FakeVendor]]:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    servers = {"openai": FakeVendor("openai", OPENAI_KEY),
               "anthropic": FakeVendor("anthropic", ANTHROPIC_KEY)}  # fmt: skip
    yield servers
    for server in servers.values():
        server.stop()


def _cfg(server: FakeVendor, model: str, **kw: object) -> ModelConfig:
    fast = {"timeout_s": 1.0, "backoff_s": 0.01, "max_backoff_s": 0.02}
    return ModelConfig(spec=f"{server.vendor}:{model}@{server.base_url}", **{**fast, **kw})  # type: ignore[arg-type]


def _prices(model: str) -> PriceTable:
    return PriceTable(prices={model: PRICE})


@pytest.mark.parametrize(("name", "model"), [("openai", "gpt-4o-mini"), ("anthropic", "claude-x")])
def test_generate_then_judge_on_the_vendor_wire_format(
    tmp_path, vendor, three, name, model
) -> None:
    server = vendor[name]
    with Store.open(tmp_path / "s.db") as store:
        [run] = generate(store, three, [_cfg(server, model)], prices=_prices(model))
        assert (run.generated, run.failed) == (3, 0)
        assert not any("seed" in n for n in run.notes)  # the default seed 0 is nobody's request
        each = PRICE.cost(USAGE_IN, USAGE_OUT)
        assert run.cost_usd == pytest.approx(3 * each)
        [s] = judge(store, [_cfg(server, model)], prices=_prices(model))
        assert (s.scored, s.unscored) == (3, 0)
        rows = store.query("SELECT cost_usd, judge_config_json FROM judgments")
        assert [r["cost_usd"] for r in rows] == pytest.approx([each] * 3)
    asked, judged = server.chat_bodies[:3], server.chat_bodies[3:]
    if name == "openai":
        assert asked[0]["max_completion_tokens"] == 512 and asked[0]["seed"] == 0
        assert "max_tokens" not in asked[0] and "response_format" not in asked[0]
        fmt = judged[0]["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        assert set(fmt["json_schema"]["schema"]["required"]) >= {"rationale"}
    else:
        assert all(h["anthropic-version"] for h in server.headers_seen)
        assert "seed" not in asked[0] and "tools" not in asked[0]
        assert asked[0]["max_tokens"] == 512 and asked[0]["messages"][-1]["role"] == "user"
        [tool] = judged[0]["tools"]
        assert judged[0]["tool_choice"] == {"type": "tool", "name": tool["name"]}
        assert "rationale" in tool["input_schema"]["properties"]
        assert json.loads(rows[0]["judge_config_json"])["structured_output_used"] == "tool"


def test_anthropic_drops_seed_and_sampling_from_what_is_sent_and_the_key(
    tmp_path, vendor, three
) -> None:
    """No seed in the API; temperature and top_p are a 400 under API version 2026-10-21."""
    server = vendor["anthropic"]
    asked = _cfg(server, "claude-x", generation=GenerationSettings(seed=7, temperature=0.3))
    sent = asked.model_copy(update={"generation": GenerationSettings(seed=None)})
    assert effective_config(asked).config_key == sent.config_key != asked.config_key
    with Store.open(tmp_path / "s.db") as store:
        [run] = generate(store, three, [asked])
        [row] = store.query("SELECT config_key, config_json FROM runs")
    assert row["config_key"] == sent.config_key
    assert json.loads(row["config_json"])["generation"]["seed"] is None
    assert json.loads(row["config_json"])["generation"]["temperature"] is None
    assert any("cannot take seed" in n for n in run.notes)
    assert any("cannot take temperature" in n for n in run.notes)
    assert all({"seed", "temperature"}.isdisjoint(body) for body in server.chat_bodies)
    assert (run.generated, run.failed) == (3, 0)
    assert run.label == "anthropic:claude-x"  # what it cannot take is no difference to show


@pytest.mark.parametrize("model", ["o3-mini", "gpt-5", "o1"])
def test_openai_reasoning_models_drop_sampling_settings(tmp_path, vendor, three, model) -> None:
    server = vendor["openai"]
    settings = GenerationSettings(temperature=0.7, top_p=0.9, seed=3)
    with Store.open(tmp_path / "s.db") as store:
        [run] = generate(store, three, [_cfg(server, model, generation=settings)])
        [row] = store.query("SELECT config_json FROM runs")
    generation = json.loads(row["config_json"])["generation"]
    assert (generation["temperature"], generation["top_p"], generation["seed"]) == (None, None, 3)
    assert {"temperature", "top_p"}.isdisjoint(server.chat_bodies[0])
    assert sum("cannot take" in n for n in run.notes) == 2
    plain = _cfg(server, "gpt-4o", generation=settings)
    assert effective_config(plain) is plain  # a chat model keeps its sampling settings


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_rate_limits_server_errors_and_timeouts_are_retried(tmp_path, vendor, three, name) -> None:
    server = vendor[name]
    server.hang_s = 3.0
    server.faults.extend(["429", "500", "529", "hang"])
    with Store.open(tmp_path / "s.db") as store:
        [run] = generate(store, three, [_cfg(server, "m", concurrency=1)])
        attempts = [r["attempts"] for r in store.query("SELECT attempts FROM responses")]
    assert (run.generated, run.failed) == (3, 0)
    assert sorted(attempts) == [1, 1, 5]


@pytest.mark.parametrize(("name", "fault"), [("openai", "refusal"), ("anthropic", "refusal"),
                                              ("openai", "content_filter")])  # fmt: skip
def test_refusals_are_recorded_with_their_reason(tmp_path, vendor, three, name, fault) -> None:
    server = vendor[name]
    server.faults.append(fault)
    with Store.open(tmp_path / "s.db") as store:
        generate(store, three, [_cfg(server, "m", concurrency=1, max_retries=0)])
        rows = store.query("SELECT status, text, finish_reason, error FROM responses")
    first = [r for r in rows if r["status"] != "ok" or r["finish_reason"] == "refusal"]
    assert len(first) == 1
    if name == "openai" and fault == "refusal":  # the refusal text is the model's answer
        assert (first[0]["text"], first[0]["finish_reason"]) == (
            "I can't help with that.",
            "refusal",
        )
    elif name == "anthropic":  # no text at all: a failed request, re-asked next run
        assert "stop_reason refusal" in first[0]["error"]
    else:
        assert "content_filter" in first[0]["error"]


def test_keys_are_never_written_to_the_store_or_the_terminal(tmp_path, vendor) -> None:
    store = tmp_path / "s.db"
    env = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    outputs = []
    for name in ("openai", "anthropic"):
        server = vendor[name]
        server.faults.extend(["500", "429"])
        spec = f"{name}:m@{server.base_url}"
        common = ("--store", str(store))
        outputs.append(run_cli("run", "-m", spec, "--dataset", "demo", "--limit", "2", *common,
                               env=env))  # fmt: skip
        outputs.append(run_cli("judge", "--judge", spec, *common, env=env))
    for proc in outputs:
        assert proc.returncode == 0, proc.stderr
        assert OPENAI_KEY not in proc.stdout + proc.stderr
        assert ANTHROPIC_KEY not in proc.stdout + proc.stderr
    written = b"".join(p.read_bytes() for p in Path(tmp_path).iterdir() if p.is_file())
    assert b"SENTINEL" not in written
    # and the servers did receive the keys, each vendor's way
    assert vendor["anthropic"].rejected_auth == vendor["openai"].rejected_auth == 0
    # Through the CLI too: a 500 and a 429 were retried to success (two answers, two
    # judgments per vendor), and the judge asked for its schema each vendor's way.
    with Store.open(store) as db:
        assert db.query("SELECT COUNT(*) FROM responses WHERE status = 'ok'")[0][0] == 4
        assert db.query("SELECT MAX(attempts) FROM responses")[0][0] >= 2
        assert db.query("SELECT COUNT(*) FROM judgments WHERE status = 'scored'")[0][0] == 4
    assert any(b.get("response_format", {}).get("type") == "json_schema"
               for b in vendor["openai"].chat_bodies)  # fmt: skip
    assert any(b.get("tool_choice", {}).get("type") == "tool"
               for b in vendor["anthropic"].chat_bodies)  # fmt: skip
