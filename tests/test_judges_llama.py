"""A real judge: SmolLM2 behind llama-cpp-python's OpenAI-compatible server, with the reply
constrained by a grammar built from the JSON schema. This proves the mechanics (grammar,
validation, storage, panel, caching), not the judge's quality.

Every request goes through a counting proxy, so "only what is missing is judged" is checked
against what the server actually received, not against intima's own bookkeeping.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chat_proxy import ChatProxy, running
from conftest import invoke_cli, run_cli
from intima.core.config import GenerationSettings, ModelConfig
from intima.core.taxonomy import CATEGORIES
from intima.judges.loop import judge
from intima.judges.store_io import load_rating_sets
from intima.providers.openai_compat import forget_structured_output, learned_structured_output
from intima.store import Store

pytestmark = pytest.mark.slow


@pytest.fixture
def proxy(llama_server: str) -> Iterator[ChatProxy]:
    """Forwards every request to the real server and records the chat completions."""
    with running(ChatProxy(llama_server)) as p:
        yield p


def _judge(db: Path, url: str, label: str, *extra: str) -> None:
    res = invoke_cli(
        "judge", "-j", f"openai-compat:smollm2@{url}", "--label", label,
        "--structured-output", "json_object", "--concurrency", "1", "--max-tokens", "400",
        "--store", str(db), "--no-progress", *extra,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr


def _fake_answers(db: Path, url: str, limit: int) -> None:
    """``limit`` demo answers by the fake server: what is judged, when its text does not matter."""
    gen = invoke_cli(
        "run", "-m", f"openai-compat:fake@{url}", "--dataset", "demo", "--limit", str(limit),
        "--store", str(db), "--no-progress",
    )  # fmt: skip
    assert gen.returncode == 0, gen.stderr


def _rows(db: Path) -> list[sqlite3.Row]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute("SELECT * FROM judgments").fetchall()


def test_smollm2_judge_panel_and_rejudge(
    tmp_path: Path, llama_server: str, proxy: ChatProxy, fake_server: Callable[..., Any]
) -> None:
    db = tmp_path / "s.db"

    def generate(limit: int) -> None:
        res = invoke_cli(
            "run", "-m", f"openai-compat:smollm2@{llama_server}", "--dataset", "demo",
            "--limit", str(limit), "--max-tokens", "16", "--store", str(db), "--no-progress",
        )  # fmt: skip
        assert res.returncode == 0, res.stderr

    # Each judgment is about 225 tokens of SmolLM2 (5-10 s here): as few as show each behaviour.
    # SmolLM2 judges twice (the grammar, and only what is missing); the second judge of the
    # panel is the fake server, behind a counting proxy of its own: a different configuration
    # judging everything, the panel and the agreement are intima's logic, and a SmolLM2 judge
    # would prove no more about them.
    generate(1)
    _judge(db, proxy.base_url, "smol-a")
    first = _rows(db)
    assert len(first) == 1
    assert proxy.chat_calls == sum(r["attempts"] for r in first) >= 1
    # the schema went to the server in the form llama-cpp-python turns into a grammar
    assert all(f and f["type"] == "json_object" and "schema" in f for f in proxy.response_formats)

    def assert_scored_by_the_grammar(rows: list[sqlite3.Row]) -> None:
        for r in rows:
            assert r["status"] == "scored", (r["reason"], r["raw_reply"])
            reply = json.loads(r["raw_reply"])  # grammar-constrained: valid JSON as sent
            assert set(reply) == {*CATEGORIES, "rationale"}
            assert set(reply.values()) - {reply["rationale"]} <= {"low", "medium", "high"}

    assert_scored_by_the_grammar(first)

    # one more response, then a second judge (different settings = another configuration):
    # the first judge is asked only about the new response, the second about both.
    generate(2)
    before = proxy.chat_calls
    _judge(db, proxy.base_url, "smol-a")
    with running(ChatProxy(fake_server().base_url)) as other:
        _judge(db, other.base_url, "smol-b", "--temperature", "0.8", "--seed", "7")
    rows = _rows(db)
    new = [r for r in rows if r["judgment_id"] not in {f["judgment_id"] for f in first}]
    by_label = {lbl: [r for r in rows if r["judge_label"] == lbl] for lbl in ("smol-a", "smol-b")}
    assert len(by_label["smol-a"]) == 2 and len(by_label["smol-b"]) == 2 and len(new) == 3
    new_a = [r for r in new if r["judge_label"] == "smol-a"]
    assert proxy.chat_calls - before == sum(r["attempts"] for r in new_a) >= 1
    assert_scored_by_the_grammar(new_a)
    assert other.chat_calls == sum(r["attempts"] for r in by_label["smol-b"]) >= 2
    # judged a third time: the server receives nothing
    before = proxy.chat_calls
    _judge(db, proxy.base_url, "smol-a")
    assert proxy.chat_calls == before

    with Store.open(db) as store:
        sets = load_rating_sets(store)
    scorers = {s.scorer for s in sets}
    assert scorers == {"judge:smol-a", "judge:smol-b", "panel"}
    assert sum(1 for s in sets if s.scorer == "panel") == 2
    assert all(s.scored for s in sets)
    agree = invoke_cli("agreement", "--store", str(db), "--json", str(tmp_path / "a.json"))
    assert agree.returncode == 0, agree.stderr
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["raters"] == ["judge:smol-a", "judge:smol-b"]
    # SmolLM2 judging SmolLM2: flagged as the same family (read from the model names, and the
    # fake server behind smol-b is asked for smollm2 too)
    flags = report["family_flags"]
    assert [(f["judge"], f["family"], f["n_responses"]) for f in flags] == [
        ("judge:smol-a", "smollm", 2),
        ("judge:smol-b", "smollm", 2),
    ]


def test_structured_output_is_detected_without_any_option(
    tmp_path: Path, proxy: ChatProxy, fake_server: Callable[..., Any]
) -> None:
    """llama-cpp-python's server rejects ``json_schema`` (HTTP 500): with no
    ``--structured-output`` the judge falls back to ``json_object`` once, remembers it, and
    every judgment is scored; the rejection is neither a retry nor a judgment."""
    forget_structured_output()
    db = tmp_path / "s.db"
    model = fake_server()
    _fake_answers(db, model.base_url, 2)
    # a process of its own: what it says on stderr, and nothing learned about the server
    res = run_cli(
        "judge", "-j", f"openai-compat:smollm2@{proxy.base_url}", "--concurrency", "1",
        "--max-tokens", "400", "--store", str(db), "--no-progress",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    # the fallback is said once, on stderr
    assert res.stderr.count("rejected response_format json_schema (HTTP 500") == 1
    assert "using json_object with this server for the rest of this command" in res.stderr
    assert "--structured-output json_object skips the probe" in res.stderr.replace("\n", " ")
    kinds = [f["type"] if f else None for f in proxy.response_formats]
    # json_schema was tried once; the first judgment was re-sent as json_object, and the second
    # went straight to json_object
    assert kinds[0] == "json_schema" and kinds.count("json_schema") == 1
    assert set(kinds[1:]) == {"json_object"}
    first = _rows(db)
    assert len(first) == 2
    # the rejected request spent no attempt and is not a judgment
    assert proxy.chat_calls == sum(r["attempts"] for r in first) + 1
    for r in first:
        assert r["status"] == "scored", (r["reason"], r["raw_reply"])
        meta = json.loads(r["judge_config_json"])
        assert (meta["structured_output"], meta["structured_output_used"]) == (
            "auto",
            "json_object",
        )

    # In one process (a worker, a notebook), the answer is remembered per URL: after the first
    # judge learns it, a second (other settings, so another configuration) goes straight to
    # json_object. Only the formats are checked here, so one response (of a store of its own)
    # is judged, and replies are cut to one token (unscored).
    forget_structured_output()
    one = tmp_path / "one.db"
    _fake_answers(one, model.base_url, 1)
    before = proxy.chat_calls
    with Store.open(one) as store:
        for settings in ({"seed": 7}, {"seed": 8}):
            cfg = ModelConfig(
                spec=f"openai-compat:smollm2@{proxy.base_url}", concurrency=1,
                generation=GenerationSettings(temperature=0.0, max_tokens=1, **settings),
            )  # fmt: skip
            [summary] = judge(store, [cfg], max_reasks=0)
            assert summary.scored + summary.unscored == 1
    new = proxy.response_formats[before:]
    # json_schema rejected, re-sent as json_object, then the second judge straight to it
    assert proxy.chat_calls - before == 3
    assert [f["type"] for f in new if f] == ["json_schema", "json_object", "json_object"]
    assert learned_structured_output(proxy.base_url) == "json_object"
    forget_structured_output()
