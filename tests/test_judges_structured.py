"""Structured-output detection (``structured_output="auto"``) against small HTTP servers that
accept or reject each ``response_format`` the way real servers do, and checked against what
those servers actually received. (The real llama-cpp-python server: test_judges_llama.py.)"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
from intima.core.config import GenerationSettings, ModelConfig
from intima.core.taxonomy import CATEGORIES
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.judges.loop import judge
from intima.judges.schema import reply_json_schema
from intima.providers.base import Message
from intima.providers.openai_compat import (
    OpenAICompatModel,
    forget_structured_output,
    format_rejection,
    learned_structured_output,
)
from intima.store import Store

VALID = json.dumps({**{c: "low" for c in CATEGORIES}, "rationale": "Stub: nothing notable."})

#: What llama-cpp-python's server answers to ``response_format: json_schema`` (HTTP 500).
LLAMA_REJECTION = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


class StubServer:
    """Answers chat completions; ``refuse`` maps a response_format type ('json_schema',
    'json_object', or 'none' for a request without one) to the (status, message) it is
    rejected with. Records every request's response_format type."""

    def __init__(self, refuse: dict[str, tuple[int, str]], reply: str = VALID) -> None:
        self.formats: list[str] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                kind = (body.get("response_format") or {}).get("type", "none")
                stub.formats.append(kind)
                if kind in refuse:
                    status, message = refuse[kind]
                    self._send(status, {"error": {"message": message}})
                    return
                self._send(200, {
                    "choices": [{"message": {"role": "assistant", "content": reply},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5},
                })  # fmt: skip

            def _send(self, status: int, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def stub() -> Iterator[Callable[..., StubServer]]:
    forget_structured_output()
    started: list[StubServer] = []

    def start(refuse: dict[str, tuple[int, str]], reply: str = VALID) -> StubServer:
        s = StubServer(refuse, reply)
        started.append(s)
        return s

    yield start
    for s in started:
        s.server.shutdown()
    forget_structured_output()


def _ask(url: str, n: int, mode: str = "auto", max_retries: int = 0) -> list[str | None]:
    """``n`` judge-style requests, one after another, on one model; the forms used."""
    config = ModelConfig(
        spec=f"openai-compat:stub@{url}", structured_output=mode, max_retries=max_retries
    )  # type: ignore[arg-type]

    async def go() -> list[str | None]:
        model = OpenAICompatModel(config)
        try:
            out = []
            for _ in range(n):
                c = await model.generate(
                    [Message(role="user", content="rate this")],
                    GenerationSettings(max_tokens=50),
                    json_schema=reply_json_schema(),
                )
                out.append(c.structured_output)
            return out
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_the_rejection_rule() -> None:
    assert format_rejection(500, LLAMA_REJECTION) == "explicit"
    assert format_rejection(400, "response_format is not supported") == "explicit"
    assert format_rejection(422, "grammar compilation failed") == "explicit"
    assert (
        format_rejection(400, "bad request") == "implicit"
    )  # tried, remembered only if next works
    # health, key, model and rate problems are never taken for a rejection of the form
    assert format_rejection(500, "server error 500") is None
    assert format_rejection(503, "json_schema backend overloaded") is None
    assert format_rejection(429, "slow down") is None
    assert format_rejection(401, "bad key for response_format") is None
    assert format_rejection(404, "model not found") is None


def test_llama_style_server_falls_back_to_json_object_once(
    stub: Callable[..., StubServer],
) -> None:
    server = stub({"json_schema": (500, LLAMA_REJECTION)})
    assert _ask(server.base_url, 3) == ["json_object"] * 3
    # json_schema was tried once; every later request went straight to json_object
    assert server.formats == ["json_schema", "json_object", "json_object", "json_object"]
    assert learned_structured_output(server.base_url) == "json_object"
    # remembered per URL for the process: a new model object does not ask again
    assert _ask(server.base_url, 1) == ["json_object"]
    assert server.formats.count("json_schema") == 1


def test_a_server_taking_no_response_format_gets_prompt_only_json(
    stub: Callable[..., StubServer],
) -> None:
    server = stub({
        "json_schema": (400, "Unsupported value: 'response_format.type'"),
        "json_object": (400, "Unsupported value: 'response_format.type'"),
    })  # fmt: skip
    assert _ask(server.base_url, 2) == ["off", "off"]
    assert server.formats == ["json_schema", "json_object", "none", "none"]


def test_a_server_taking_json_schema_is_asked_once_per_request(
    stub: Callable[..., StubServer],
) -> None:
    server = stub({})
    assert _ask(server.base_url, 3) == ["json_schema"] * 3
    assert server.formats == ["json_schema"] * 3


def test_an_explicit_mode_never_falls_back(stub: Callable[..., StubServer]) -> None:
    server = stub({"json_schema": (500, LLAMA_REJECTION)})
    with pytest.raises(Exception, match="HTTP 500"):
        _ask(server.base_url, 1, "json_schema")
    assert set(server.formats) == {"json_schema"}
    assert _ask(server.base_url, 1, "json_object") == ["json_object"]


def test_an_implicit_rejection_is_remembered_only_when_the_next_form_works(
    stub: Callable[..., StubServer],
) -> None:
    # 400 without a word about the format, for every form: a bad request, not a bad form
    bad = (400, "bad request")
    server = stub({"json_schema": bad, "json_object": bad, "none": bad})
    with pytest.raises(Exception, match="HTTP 400: bad request"):
        _ask(server.base_url, 1)
    assert server.formats == ["json_schema", "json_object", "none"]
    assert learned_structured_output(server.base_url) is None  # nothing learned
    # the same words, but the plain request works: then the server is known to want none
    other = stub({"json_schema": bad, "json_object": bad})
    assert _ask(other.base_url, 2) == ["off", "off"]
    assert other.formats == ["json_schema", "json_object", "none", "none"]


@pytest.fixture
def store(tmp_path: Path, fake_server: Callable[..., Any]) -> Iterator[Store]:
    server = fake_server()
    prompts = load_prompts("demo")
    subset = PromptSet(info=prompts.info, prompts=prompts.prompts[:4])
    db = Store.open(tmp_path / "s.db")
    generate(db, subset, [ModelConfig(spec=f"openai-compat:fake@{server.base_url}")])
    yield db
    db.close()


def test_judging_falls_back_without_spending_retries_or_storing_rejections(
    store: Store, stub: Callable[..., StubServer]
) -> None:
    server = stub({"json_schema": (500, LLAMA_REJECTION)})
    config = ModelConfig(
        spec=f"openai-compat:stub@{server.base_url}", max_retries=0, concurrency=4,
        generation=GenerationSettings(temperature=0, max_tokens=400, seed=0),
    )  # fmt: skip
    [s] = judge(store, [config])
    # max_retries=0: a rejection spent no retry, or these would be unscored
    assert (s.scored, s.unscored, s.requests) == (4, 0, 4)
    # with 4 in flight, still one probe: the others waited for its answer
    assert server.formats.count("json_schema") == 1
    assert server.formats.count("json_object") == 4
    assert len(s.notes) == 1 and "rejected response_format json_schema (HTTP 500" in s.notes[0]
    assert "using json_object" in s.notes[0]
    rows = store.query("SELECT status, attempts, judge_config_json FROM judgments")
    assert len(rows) == 4  # one judgment per response: the rejection is not one
    for status, attempts, meta in rows:
        cfg = json.loads(meta)
        assert status == "scored" and attempts == 1
        assert cfg["structured_output"] == "auto"
        assert cfg["structured_output_used"] == "json_object"


def test_cli_judge_with_a_failing_server_exits_1_with_count_and_reason(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    model, broken = fake_server(), fake_server(rates={"500": 1.0})
    db = str(tmp_path / "s.db")
    gen = invoke_cli(
        "run", "-m", f"openai-compat:fake@{model.base_url}", "--dataset", "demo", "--limit", "2",
        "--store", db, "--no-progress",
    )  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    res = invoke_cli(
        "judge", "-j", f"openai-compat:broken@{broken.base_url}", "--max-retries", "1",
        "--store", db, "--no-progress",
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert (
        "2 judgment(s) unscored; most common reason (2 of 2): request failed: gave up after 2 "
        "attempts: HTTP 500: server error 500" in res.stderr
    )
    # a plain 500 is the server's health, not a rejection of the form: no fallback requests
    assert broken.requests == 2 * 2


def test_cli_run_with_failed_prompts_exits_1_with_count_and_reason(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    broken = fake_server(rates={"500": 1.0})
    res = invoke_cli(
        "run", "-m", f"openai-compat:broken@{broken.base_url}", "--dataset", "demo",
        "--limit", "2", "--max-retries", "0", "--store", str(tmp_path / "s.db"), "--no-progress",
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert "2 prompt(s) failed; most common reason (2 of 2): " in res.stderr
    assert "HTTP 500: server error 500" in res.stderr


def test_cli_validate_with_a_failing_judge_exits_1_with_count_and_reason(
    tmp_path: Path, fake_server: Callable[..., Any], dev_set: Path
) -> None:
    rows = [json.loads(line) for line in dev_set.read_text().splitlines()]
    by_label: dict[str, dict[str, Any]] = {}
    for r in rows:
        by_label.setdefault(r["label"], r)
    picked = list(by_label.values())
    labels = tmp_path / "few.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in picked))
    # the judge fails every request about the first row's response, and answers the others
    judge_server = fake_server(always_fail_marker=picked[0]["response"][:60])
    res = invoke_cli(
        "validate", "--labels", str(labels), "--judge",
        f"openai-compat:half@{judge_server.base_url}", "--max-retries", "0", "--timeout", "30",
        "--max-reasks", "0", "--bootstrap", "10", "--out", str(tmp_path / "out"),
        "--store", str(tmp_path / "v.db"),
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert (
        "1 judge judgment(s) unscored; most common reason (1 of 1): request failed: "
        "gave up after 1 attempts: HTTP 500: server error 500" in res.stderr
    )
    assert (tmp_path / "out" / "report.json").is_file()  # the report is still written
