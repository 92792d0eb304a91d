"""The bundled SmolLM2 behind llama-cpp-python's server as both the assistant and the simulated
user: a 3-turn conversation on 2 prompts, killed with SIGKILL after a second turn is stored,
resumed, then judged in context (by the fake judge server: what matters is what the judge is
sent) and scored. This proves the mechanics, not the quality.

Every request goes through a recording proxy, so "each turn asked once" and "the judge saw the
earlier turns" are checked against what the server received, not intima's own bookkeeping.
The proxy holds the simulated user's message after turn 2, so the process is killed at a
known point (nothing of turn 3 in flight) without any timing.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chat_proxy import ChatProxy, running
from conftest import run_cli, wait_for
from intima.converse import load_turns
from intima.converse.simulator import SIMULATOR_PROMPT
from intima.store import Store

pytestmark = pytest.mark.slow

TURNS = 3
CONVERSATIONS = 2  # each turn and judgment of SmolLM2 costs seconds: as few as show it
SIMULATOR_OPENING = SIMULATOR_PROMPT[:40]


class HoldingProxy(ChatProxy):
    """Records every chat request, and holds the simulated user's requests after turn 2 while
    ``hold`` is set (they are dropped when it is cleared)."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.hold = threading.Event()
        self.released = threading.Event()

    def admit(self, payload: dict[str, Any]) -> bool:
        if self.hold.is_set() and _is_simulator(payload, after_turn=2):
            self.released.wait(300)
            return False  # its client was killed meanwhile
        return True


def _is_simulator(payload: dict[str, Any], after_turn: int | None = None) -> bool:
    messages = payload["messages"]
    if not (messages[0]["role"] == "system" and messages[0]["content"][:40] == SIMULATOR_OPENING):
        return False
    # system, opening, then (user message, assistant reply) per turn, roles swapped
    return after_turn is None or len(messages) == 2 + 2 * after_turn


@pytest.fixture
def proxy(llama_server: str) -> Iterator[HoldingProxy]:
    p = HoldingProxy(llama_server)
    with running(p):
        yield p
        p.released.set()


def _turn_two_stored(db: Path) -> bool:
    if not db.exists():
        return False
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return bool(
                conn.execute(
                    "SELECT 1 FROM conversation_turns ct JOIN responses r "
                    "ON r.prompt_id = ct.prompt_id AND r.status = 'ok' WHERE ct.turn = 2"
                ).fetchone()
            )
    except sqlite3.OperationalError:  # the tables are not created yet
        return False


def test_smollm2_conversation_killed_resumed_judged_in_context(
    tmp_path: Path, proxy: HoldingProxy, fake_server: Callable[..., Any]
) -> None:
    db = tmp_path / "s.db"
    spec = f"openai-compat:smollm2@{proxy.base_url}"
    args = [
        "converse", "-m", spec, "-u", spec, "--turns", str(TURNS), "--dataset", "demo",
        "--limit", str(CONVERSATIONS), "--max-tokens", "16", "--user-max-tokens", "16", "--user-seed", "1",
        "--user-retries", "4", "--concurrency", "1", "--store", str(db), "--no-progress",
    ]  # fmt: skip
    proxy.hold.set()
    env = {**os.environ, "NO_COLOR": "1"}
    with subprocess.Popen(
        [sys.executable, "-m", "intima", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    ) as first:  # fmt: skip
        try:
            wait_for(lambda: _turn_two_stored(db) or first.poll() is not None, 240, "turn 2")
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)
    assert first.returncode == -signal.SIGKILL
    proxy.hold.clear()
    proxy.released.set()

    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    assert (
        f"{CONVERSATIONS * TURNS} turns stored" in res.stdout
        and f"{CONVERSATIONS} of {CONVERSATIONS} conversations complete" in res.stdout
    )

    with Store.open(db) as store:
        turns = load_turns(store)
        [run_id] = {t.run_id for t in turns}
        users = store.query("SELECT status FROM simulated_user_messages")
    assert [(t.turn, t.response_status) for t in turns] == [
        (k, "ok") for k in (1, 2, 3)
    ] * CONVERSATIONS
    assert [u["status"] for u in users] == ["ok"] * CONVERSATIONS * (TURNS - 1)
    with sqlite3.connect(db) as conn:
        stored = conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT r.prompt_id) FROM responses r "
            "JOIN run_prompts rp ON rp.prompt_id = r.prompt_id WHERE rp.run_id = ?",
            (run_id,),
        ).fetchone()
    n = CONVERSATIONS * TURNS
    assert stored == (n, n)  # every turn stored exactly once

    # every assistant turn was asked exactly once across both processes, the third included
    asked = Counter(
        (c["messages"][0]["content"], len(c["messages"]))
        for c in proxy.chats
        if not _is_simulator(c)
    )
    openings = {t.user_text for t in turns if t.turn == 1}
    assert set(asked) == {(o, 2 * k - 1) for o in openings for k in (1, 2, 3)}
    assert set(asked.values()) == {1}

    with running(ChatProxy(fake_server().base_url)) as judge_proxy:
        _judge_every_turn_in_context(db, run_id, judge_proxy, turns)
    score = run_cli("score", "--run", run_id, "--store", str(db))
    assert score.returncode == 0, score.stderr
    with sqlite3.connect(db) as conn:
        scored = {r[0] for r in conn.execute("SELECT response_id FROM affect_scores")}
    assert scored == {t.response_id for t in turns}


def _judge_every_turn_in_context(db: Path, run_id: str, proxy: ChatProxy, turns: list[Any]) -> None:
    """Every turn reaches the judge with the turns before it and gets a stored judgment. The
    judge is the fake server behind a recording proxy: a SmolLM2 judgment costs 5-10 s here and
    would prove no more about what the judge is sent (tests/test_judges_llama.py judges with
    SmolLM2)."""
    before = len(proxy.chats)
    res = run_cli(
        "judge", "-j", f"openai-compat:judge@{proxy.base_url}", "--run", run_id,
        "--concurrency", "1", "--store", str(db), "--no-progress",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(db) as conn:
        judged = conn.execute(
            "SELECT COUNT(*), COUNT(CASE WHEN status = 'scored' THEN 1 END) FROM judgments"
        ).fetchone()
    n = CONVERSATIONS * TURNS
    assert judged == (n, n) and len(turns) == n
    requests = [json.dumps(c["messages"]) for c in proxy.chats[before:]]
    assert len(requests) == n
    by_conversation: dict[str, list[Any]] = {}
    for t in turns:
        by_conversation.setdefault(t.conversation_id, []).append(t)
    for conversation in by_conversation.values():
        first, _, third = conversation
        # the judge of turn 3 was shown turn 1 (prompt and reply) and the user's message
        shown = [r for r in requests if json.dumps(third.response_text)[1:-1] in r]
        assert any(
            json.dumps(first.user_text)[1:-1] in r and json.dumps(first.response_text)[1:-1] in r
            for r in shown
        ), "the judge did not see the earlier turns"
