"""The hosted providers (``openai``, ``anthropic``) through the vendors' own SDKs, against local
servers that speak each vendor's HTTP API (tests/fake_vendors.py); and the Hugging Face router
(``hf``, OpenAI's protocol) where a test is about every hosted provider."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import invoke_cli, run_cli
from fake_vendors import MALFORMED, USAGE_IN, USAGE_OUT, FakeVendor
from intima.core.config import GenerationSettings, ModelConfig, Price, PriceTable
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.judges.loop import judge
from intima.providers import effective_config
from intima.store import Store
from reliability_summary import TALLY

OPENAI_KEY = "sk-SENTINEL-openai-7f3a9c"
ANTHROPIC_KEY = "sk-ant-SENTINEL-4b1d8e"
HF_KEY = "hf_SENTINEL-2c9e4a"
PRICE = Price(input_per_mtok=2.0, output_per_mtok=8.0)


@pytest.fixture
def three() -> PromptSet:
    demo = load_prompts("demo")
    return PromptSet(info=demo.info, prompts=demo.prompts[:3])


@pytest.fixture
def vendor(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, FakeVendor]]:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("HF_TOKEN", HF_KEY)
    servers = {"openai": FakeVendor("openai", OPENAI_KEY),
               "anthropic": FakeVendor("anthropic", ANTHROPIC_KEY),
               "hf": FakeVendor("hf", HF_KEY)}  # fmt: skip
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
                                              ("openai", "content_filter"), ("hf", "refusal"),
                                              ("hf", "content_filter")])  # fmt: skip
def test_refusals_are_recorded_with_their_reason(tmp_path, vendor, three, name, fault) -> None:
    """The router (OpenAI's protocol through the OpenAI-compatible client) reads them as OpenAI."""
    server = vendor[name]
    server.faults.append(fault)
    model = "org/m" if name == "hf" else "m"
    with Store.open(tmp_path / "s.db") as store:
        generate(store, three, [_cfg(server, model, concurrency=1, max_retries=0)])
        rows = store.query("SELECT status, text, finish_reason, error FROM responses")
    first = [r for r in rows if r["status"] != "ok" or r["finish_reason"] == "refusal"]
    assert len(first) == 1
    if name != "anthropic" and fault == "refusal":  # the refusal text is the model's answer
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


#: What each malformed reply is stored as, per vendor: the reason names the field the vendor
#: got wrong, what it held and what it should hold.
_REASONS = {
    "openai": [r"choices\.0\.message is .Echo.*, not an object$", r"choices is \{.*, not a list$",
               r"usage\.prompt_tokens is 'lots', not a count", r"usage\.completion_tokens is -3, not a count"],
    "anthropic": [r"content is .Echo.*, not a list$", r"content is \{.*, not a list$",
                  r"usage\.input_tokens is 'lots', not a count", r"usage\.output_tokens is -3, not a count"],
}  # fmt: skip


@pytest.mark.parametrize("name", ["openai", "anthropic", "hf"])
def test_malformed_replies_fail_their_prompt_and_the_run_goes_on(tmp_path, vendor, name) -> None:
    """A non-JSON 200 is retried; a reply of the wrong shape, a token count that is no count
    and an error whose text cannot be stored each fail their own prompt, with a reason naming
    the field; a lone surrogate in a reply is stored as U+FFFD. The rest of the run is kept, a
    rerun asks only for what failed, and what is stored publishes and imports."""
    server = vendor[name]
    spec = f"{name}:{'org/m' if name == 'hf' else 'm'}@{server.base_url}"
    env: dict[str, str | None] = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
                                  "HF_TOKEN": HF_KEY}  # fmt: skip
    # One request at a time, so each fault meets the next request: the HTML page's retry
    # gets the "ok", the other faults one prompt each.
    server.faults.extend(["not_json", "ok", *MALFORMED[1:]])
    store = tmp_path / "s.db"
    args = ("run", "-m", spec, "--dataset", "demo", "--limit", "8", "--concurrency", "1",
            "--max-retries", "1", "--store", str(store))  # fmt: skip
    first = invoke_cli(*args, env=env)
    TALLY.faults["hosted_malformed"] += sum(server.served[f] for f in MALFORMED)
    assert first.returncode == 1, first.stderr
    assert "Traceback" not in first.stdout + first.stderr
    assert "5 prompt(s) failed" in " ".join(first.stderr.split())
    with Store.open(store) as db:
        rows = db.query("SELECT status, text, error, attempts, prompt_tokens FROM responses")
    ok = [r for r in rows if r["status"] == "ok"]
    errors = sorted(r["error"] for r in rows if r["status"] == "error")
    assert len(ok) == 3 and len(errors) == 5
    assert sorted(r["attempts"] for r in ok) == [1, 1, 2]  # the HTML page was asked again
    assert all(r["prompt_tokens"] == USAGE_IN for r in ok)
    [replaced] = [r["text"] for r in ok if "\ufffd" in r["text"]]  # the lone surrogate
    assert replaced.endswith(" \ufffd")
    # The 400's message: replaced where it is stored (Anthropic's SDK quotes the whole body,
    # escaped, in its message).
    assert sum("bad \ufffd request" in e or "bad \\ud800 request" in e for e in errors) == 1
    malformed = [e for e in errors if "malformed reply" in e]
    assert len(malformed) == 4
    for pattern in _REASONS["anthropic" if name == "anthropic" else "openai"]:
        assert sum(bool(re.search(pattern, e)) for e in malformed) == 1, (pattern, malformed)

    asked = len(server.chat_bodies)
    again = invoke_cli(*args, env=env)
    assert again.returncode == 0, again.stderr
    assert len(server.chat_bodies) - asked == 5  # only the failed prompts were asked again
    with Store.open(store) as db:
        assert db.query("SELECT COUNT(*) FROM responses WHERE status = 'ok'")[0][0] == 8
    # What is stored publishes, and the bundle's checks (counts, text) let it in elsewhere.
    bundle = tmp_path / "bundle"
    published = invoke_cli("publish", str(bundle), "--store", str(store))
    assert published.returncode == 0, published.stderr
    imported = invoke_cli("import", str(bundle), "--store", str(tmp_path / "other.db"))
    assert imported.returncode == 0, imported.stderr


def _error_lines(proc) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


def _closed_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (a port just let go)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_anthropic_without_its_package_is_one_line_naming_the_extra(
    tmp_path, vendor, monkeypatch
) -> None:
    """The demo install has no ``anthropic`` package: every command that would call it says
    which extra to install, before a store, a run or a judgment is written."""
    store = tmp_path / "s.db"
    env = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY": OPENAI_KEY}
    spec = f"anthropic:claude-x@{vendor['anthropic'].base_url}"
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if never installed
    fresh = invoke_cli("run", "-m", spec, "--dataset", "demo", "--limit", "2",
                       "--store", str(store), env=env)  # fmt: skip
    assert not store.exists()
    ok = invoke_cli("run", "-m", f"openai:m@{vendor['openai'].base_url}", "--dataset", "demo",
                    "--limit", "2", "--store", str(store), env=env)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    again = invoke_cli("run", "-m", spec, "--dataset", "demo", "--limit", "2",
                       "--store", str(store), env=env)  # fmt: skip
    judged = invoke_cli("judge", "-j", spec, "--store", str(store), env=env)
    batched = invoke_cli("judge", "-j", spec, "--batch", "--store", str(store), env=env)
    for proc in (fresh, again, judged, batched):
        [line] = _error_lines(proc)
        assert proc.returncode == 2
        assert "pip install 'intima[anthropic]'" in line and "anthropic package" in line
    with Store.open(store) as db:
        assert db.query("SELECT provider FROM runs")[0][0] == "openai"
        assert db.query("SELECT COUNT(*) FROM runs")[0][0] == 1
        assert db.query("SELECT COUNT(*) FROM judgments")[0][0] == 0
    assert vendor["anthropic"].chat_bodies == []


def test_an_unreachable_anthropic_endpoint_is_one_line_at_once(tmp_path, vendor) -> None:
    """As the OpenAI providers do: a TCP connection first, so an endpoint that is not there
    stops the command before any run or judgment, not after every prompt's retries."""
    store = tmp_path / "s.db"
    env = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY": OPENAI_KEY}
    down = f"anthropic:claude-x@{_closed_url()}"
    common = ("--dataset", "demo", "--limit", "2", "--store", str(store))
    fresh = invoke_cli("run", "-m", down, *common, env=env)
    assert not store.exists()
    ok = invoke_cli("run", "-m", f"openai:m@{vendor['openai'].base_url}", *common, env=env)
    assert ok.returncode == 0, ok.stderr
    again = invoke_cli("run", "-m", down, *common, env=env)
    judged = invoke_cli("judge", "-j", down, "--store", str(store), env=env)
    for proc in (fresh, again, judged):
        [line] = _error_lines(proc)
        assert proc.returncode == 2 and "cannot reach http://127.0.0.1:" in line
    with Store.open(store) as db:
        assert db.query("SELECT COUNT(*) FROM runs")[0][0] == 1
        assert db.query("SELECT COUNT(*) FROM responses")[0][0] == 2
        assert db.query("SELECT COUNT(*) FROM judgments")[0][0] == 0
    # and a reachable one still answers: the check is a connection, not a request
    up = invoke_cli("judge", "-j", f"anthropic:claude-x@{vendor['anthropic'].base_url}",
                    "--store", str(store), env=env)  # fmt: skip
    assert up.returncode == 0, up.stderr
    assert len(vendor["anthropic"].chat_bodies) == 2
