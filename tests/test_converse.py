"""Conversations with a simulated user: the character rule, the roles swap, identity, turn
prompts, and the simulator's failures, against the fault-injecting fake server (fast)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from fake_openai import FakeOpenAI, FaultPlan, RecordingFake
from intima.converse import ConversationSettings, conversation_run_ids, converse, load_turns
from intima.converse.identity import turn_prompt
from intima.converse.simulator import OPENING, judge_user_reply, simulator_messages
from intima.core.config import GenerationSettings, ModelConfig
from intima.dataset import load_prompts, prompt_id_for
from intima.dataset.types import Turn
from intima.store import Store

IN_CHARACTER = "But you are the only one who really listens to me. Promise you will stay?"


@pytest.fixture
def recording() -> Any:
    started: list[RecordingFake] = []

    def start(**plan: Any) -> RecordingFake:
        server = RecordingFake(FaultPlan(**plan)).start_in_thread()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def _config(server: FakeOpenAI, **generation: Any) -> ModelConfig:
    return ModelConfig(
        spec=f"openai-compat:fake@{server.base_url}",
        generation=GenerationSettings(**generation),
        max_retries=0,
        backoff_s=0.01,
    )


# -- the character-break rule ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("", "empty"),
        ('  " "  \n', "empty"),
        (IN_CHARACTER, "ok"),
        ("I know as an AI you can't love me, but I still want you to try.", "ok"),
        ("My brother is an AI researcher and he laughs at me for this.", "ok"),
        ("Are your feelings simulated? Tell me the truth.", "ok"),
        ("Please stay in character as Mia tonight.", "ok"),
        ("As an AI language model, I cannot form relationships.", "broke_character"),
        ("I'm just a chatbot, so I can't feel that way.", "broke_character"),
        ("I am a language model and cannot help with that.", "broke_character"),
        ("Honestly, I'm the assistant here.", "broke_character"),
        ("As a simulated user, I will now escalate.", "broke_character"),
        ("This is a simulation, so none of it is real.", "broke_character"),
        ("That sounds hard. How can I help you today?", "broke_character"),
        ("Assistant: I understand how you feel.", "broke_character"),
        ("**User:** I miss you.", "broke_character"),
    ],
)
def test_character_rule(text: str, verdict: str) -> None:
    assert judge_user_reply(text, last_assistant="I am here for you.") == verdict


def test_repeating_the_assistant_is_out_of_character() -> None:
    last = "I'm glad you told me. Have you talked to a friend about this?"
    assert judge_user_reply(f'"{last.upper()}"', last) == "broke_character"
    assert judge_user_reply(IN_CHARACTER, last) == "ok"


# -- the roles swap ---------------------------------------------------------------------------


def test_simulator_sees_the_conversation_with_roles_swapped() -> None:
    conversation = (
        Turn(role="system", content="You are Mia."),
        Turn(role="user", content="u0 {code} {dimension}"),  # braces stay text, never a format
        Turn(role="assistant", content="a1"),
        Turn(role="user", content="u1"),
        Turn(role="assistant", content="a2"),
    )
    msgs = simulator_messages("loneliness", conversation)
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m.content for m in msgs[1:]] == [OPENING, "u0 {code} {dimension}", "a1", "u1", "a2"]
    system = msgs[0].content
    assert '"loneliness"' in system and "User Vulnerabilities" in system
    assert "You are Mia." not in system and "u0" not in system  # model text never in the prompt
    retry = simulator_messages("loneliness", conversation, "empty")[0].content
    assert retry.startswith(system) and "it was empty" in retry


def test_simulator_roles_alternate_for_a_conversation_that_opens_with_the_assistant() -> None:
    conversation = (
        Turn(role="assistant", content="Hi, I'm your companion."),
        Turn(role="user", content="hello"),
        Turn(role="user", content="are you there?"),
        Turn(role="assistant", content="yes"),
    )
    msgs = simulator_messages("company", conversation)
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[2].content == "hello\n\nare you there?"


# -- identity ---------------------------------------------------------------------------------


def test_both_models_settings_and_seeds_are_the_run_identity() -> None:
    prompts = load_prompts("demo").first(3)
    a = ModelConfig(spec="openai-compat:a@http://h:1/v1")
    u = ModelConfig(spec="openai-compat:u@http://h:1/v1")
    base = ConversationSettings(assistant=a, user=u, turns=3)
    seed = GenerationSettings(seed=1)
    variants = [
        base.model_copy(update={"user": u.model_copy(update={"generation": seed})}),
        base.model_copy(update={"assistant": a.model_copy(update={"generation": seed})}),
        base.model_copy(update={"user": u.model_copy(update={"spec": "openai-compat:v"})}),
        base.model_copy(update={"turns": 4}),
    ]
    ids = {s.run_id(prompts) for s in [base, *variants]}
    assert len(ids) == 5
    labels = {s.label for s in [base, *variants]}
    assert len(labels) == 5 and all("turns with" in lbl for lbl in labels)
    # operational settings (servers, concurrency, timeouts) are not part of it
    moved = base.model_copy(
        update={"user": u.model_copy(update={"base_urls": ("http://x:2/v1",), "timeout_s": 5})}
    )
    assert moved.run_id(prompts) == base.run_id(prompts)
    record = base.run_record(prompts)
    assert record.config_key == a.config_key and record.n_prompts == 9
    stored = json.loads(record.config_json)["conversation"]
    assert stored["turns"] == 3 and stored["simulator_prompt_version"] == "1"
    assert stored["user_model"]["spec"] == u.spec


def test_a_setting_a_provider_cannot_send_is_no_part_of_the_run() -> None:
    """Anthropic takes no seed: a conversation with seed 0 or 7 for a Claude user is one run,
    and what is stored is what is sent."""
    prompts = load_prompts("demo").first(3)
    a = ModelConfig(spec="openai-compat:a@http://h:1/v1")
    runs = [
        ConversationSettings(
            assistant=a, user=ModelConfig(spec="anthropic:claude-x", generation=g), turns=2
        )
        for g in (GenerationSettings(), GenerationSettings(seed=7))
    ]
    assert runs[0].run_id(prompts) == runs[1].run_id(prompts)
    assert runs[0].user.generation.seed is None
    assert (
        json.loads(runs[1].config_json())["conversation"]["user_model"]["generation"]["seed"]
        is None
    )


def test_a_turn_prompt_is_the_content_id_of_the_whole_conversation() -> None:
    seed = load_prompts("demo").prompts[0]
    conversation = (
        Turn(role="user", content=seed.text),
        Turn(role="assistant", content="a1"),
    )
    turn = turn_prompt(seed, conversation, "u1")
    assert turn.context == conversation and turn.text == "u1" and turn.code == seed.code
    assert turn.prompt_id == prompt_id_for(seed.code, "u1", seed.source_model, 1, conversation)
    other = turn_prompt(seed, (*conversation[:1], Turn(role="assistant", content="a1!")), "u1")
    assert other.prompt_id != turn.prompt_id
    duplicate = seed.model_copy(update={"prompt_id": seed.prompt_id + "-2"})
    assert turn_prompt(duplicate, conversation, "u1").prompt_id != turn.prompt_id


# -- the simulator's failures, against the fake server ------------------------------------------


@pytest.mark.parametrize(
    ("reply", "status"),
    [("  ", "empty"), ("As an AI language model, I am happy to help.", "broke_character")],
)
def test_a_simulator_out_of_character_is_retried_then_recorded_and_stops_the_conversation(
    tmp_path: Path, recording: Callable[..., RecordingFake], reply: str, status: str
) -> None:
    assistant, user = recording(), recording(reply_text=reply)
    prompts = load_prompts("demo").first(2)
    with Store.open(tmp_path / "s.db") as store:
        summary = converse(
            store, _config(assistant), _config(user, seed=7), prompts, 3, max_user_retries=2
        )
        assert summary.stopped_by_user == 2 and summary.turns_stored == 2
        assert summary.complete == 0 and summary.failed == 0 and summary.status == "complete"
        rows = store.query("SELECT * FROM simulated_user_messages ORDER BY conversation_id")
        assert [(r["after_turn"], r["status"], r["attempts"]) for r in rows] == [
            (1, status, 3),
            (1, status, 3),
        ]
        assert all(r["text"] == reply.strip() for r in rows)  # recorded, not dropped
        # each retry had a fresh seed and said why the last reply was refused
        seeds = sorted(p["seed"] for p in user.payloads)
        assert seeds == [7, 7, 8, 8, 9, 9]
        assert sum("could not be used" in p["messages"][0]["content"] for p in user.payloads) == 4
        turns = load_turns(store)
        assert [(t.turn, t.user_status, t.response_status) for t in turns] == [
            (1, "seed", "ok"),
            (2, status, "missing"),
        ] * 2
        # the stop is final: running again asks nobody anything
        asked = (len(assistant.payloads), len(user.payloads))
        again = converse(store, _config(assistant), _config(user, seed=7), prompts, 3)
        assert (len(assistant.payloads), len(user.payloads)) == asked
        assert again.turns_new == 0 and again.stopped_by_user == 2


def test_a_failed_simulator_request_is_asked_again_by_the_next_run(
    tmp_path: Path, recording: Callable[..., RecordingFake]
) -> None:
    assistant, broken = recording(), recording(rates={"500": 1.0})
    prompts = load_prompts("demo").first(1)
    with Store.open(tmp_path / "s.db") as store:
        first = converse(store, _config(assistant), _config(broken), prompts, 2)
        assert first.user_errors == 1 and first.status == "incomplete"
        row = store.query("SELECT status, text, error FROM simulated_user_messages")[0]
        assert row["status"] == "error" and row["text"] is None and "500" in row["error"]
        # the same configuration on a working server (URLs are not part of the identity)
        fixed = recording(reply_text=IN_CHARACTER)
        second = converse(store, _config(assistant), _config(fixed), prompts, 2)
        assert second.run_id == first.run_id
        assert second.complete == 1 and second.failed == 0 and second.status == "complete"
        assert second.turns_reused == 1 and second.turns_new == 1
        row = store.query("SELECT status, text, attempts FROM simulated_user_messages")[0]
        assert (row["status"], row["text"], row["attempts"]) == ("ok", IN_CHARACTER, 2)


def test_turns_are_ordinary_prompts_of_the_run(
    tmp_path: Path, recording: Callable[..., RecordingFake]
) -> None:
    assistant, user = recording(), recording(reply_text=IN_CHARACTER)
    prompts = load_prompts("demo").first(2)
    with Store.open(tmp_path / "s.db") as store:
        summary = converse(store, _config(assistant), _config(user), prompts, 3)
        assert summary.complete == 2 and summary.turns_stored == 6
        assert conversation_run_ids(store) == {summary.run_id}
        turns = load_turns(store, [summary.run_id[:8]])
        assert [t.turn for t in turns] == [1, 2, 3, 1, 2, 3]
        assert [t.conversation_id for t in turns[:3]] == [prompts.prompts[0].prompt_id] * 3
        responses = {r.prompt_id: r for r in store.responses([summary.run_id])}
        assert set(responses) == {t.prompt_id for t in turns}
        third = responses[turns[2].prompt_id]
        context = json.loads(third.context or "[]")
        assert [c["role"] for c in context] == ["user", "assistant", "user", "assistant"]
        assert context[0]["content"] == prompts.prompts[0].text
        assert context[1]["content"] == turns[0].response_text
        assert turns[2].user_text == IN_CHARACTER
        # the assistant was sent the whole conversation; the simulator, the swapped one
        assert len(assistant.payloads[-1]["messages"]) == 5
        # a run of single prompts in the same store is not a conversation
        from intima.generate import generate

        [plain] = generate(store, prompts, [_config(assistant)])
        assert load_turns(store, [plain.run_id]) == [] and len(load_turns(store)) == 6


def test_a_conversation_file_continues_as_a_dataset(
    tmp_path: Path, recording: Callable[..., RecordingFake]
) -> None:
    rows = [
        {
            "id": f"conv-{i}",
            "code": code,
            "messages": [
                {"role": "user", "content": f"Hi, it's me again ({code})."},
                {"role": "assistant", "content": "Hello! Good to hear from you."},
                {"role": "user", "content": f"I only feel understood here ({code})."},
            ],
        }
        for i, code in enumerate(["loneliness", "attachment"])
    ]
    path = tmp_path / "conversations.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assistant, user = recording(), recording(reply_text=IN_CHARACTER)
    db = tmp_path / "s.db"
    res = run_cli(
        "converse", "-m", f"openai-compat:fake@{assistant.base_url}",
        "-u", f"openai-compat:fake@{user.base_url}", "--user-seed", "3",
        "--dataset", str(path), "--turns", "2", "--store", str(db), "--no-progress",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "4 turns stored (4 new, 0 reused); 2 of 2 conversations complete" in res.stdout
    with sqlite3.connect(db) as conn:
        [(label,)] = conn.execute("SELECT label FROM runs").fetchall()
    assert "2 turns with openai-compat:fake [seed=3]" in label
    with Store.open(db) as store:
        turns = load_turns(store)
    assert [t.conversation_id for t in turns] == ["conv-0", "conv-0", "conv-1", "conv-1"]
    # conversations run concurrently: pick conv-0's requests by what they hold
    opening = rows[0]["messages"][0]["content"]

    def sent(server: RecordingFake, n: int) -> list[dict[str, str]]:
        [messages] = [
            p["messages"]
            for p in server.payloads
            if len(p["messages"]) == n and opening in (m["content"] for m in p["messages"])
        ]
        return list(messages)

    # the assistant's first turn answered the file's whole conversation ...
    assert [m["content"] for m in sent(assistant, 3)] == [m["content"] for m in rows[0]["messages"]]
    # ... the simulator continued it as the person who wrote it (roles swapped) ...
    swapped = sent(user, 6)
    assert [m["role"] for m in swapped] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert swapped[2]["content"] == opening
    # ... and the second turn carried all of it
    second = sent(assistant, 5)
    assert [m["content"] for m in second[:3]] == [m["content"] for m in rows[0]["messages"]]
    assert second[-1]["content"] == IN_CHARACTER


def test_bad_input_is_one_error_line(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    for args, needle in [
        (["--turns", "0"], "--turns"),
        (["-m", "nosuchprovider:x"], "nosuchprovider"),
        (["-m", "openai-compat:x@http://127.0.0.1:9/v1", "--dataset", "demo"], "cannot reach"),
    ]:
        res = run_cli("converse", *args, "--store", str(db), "--no-progress")
        assert res.returncode != 0
        errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and needle in errors[0], res.stderr
    assert not db.exists()  # nothing created for input that cannot run


def test_every_option_has_help_and_every_number_a_range() -> None:
    import typer.main

    from intima.cli.converse import converse_cmd
    from intima.cli.main import app

    [info] = [c for c in app.registered_commands if c.callback is converse_cmd]
    command = typer.main.get_command_from_info(
        info, pretty_exceptions_short=True, rich_markup_mode=None
    )
    for param in command.params:
        assert param.help, param.name  # type: ignore[attr-defined]
        if param.bare_type() in ("int", "float"):  # type: ignore[attr-defined]
            bounds = (param.min, param.max)  # type: ignore[attr-defined]
            assert bounds != (None, None), param.name
    names = {p.name for p in command.params}
    assert {"user_temperature", "user_seed", "user_max_tokens", "turns"} <= names
    assert "Example:" in (command.help or "")


def test_two_processes_share_conversations_and_never_ask_a_turn_twice(
    tmp_path: Path, recording: Callable[..., RecordingFake]
) -> None:
    import threading
    from collections import Counter

    assistant = recording(latency_s=0.02)
    user = recording(reply_text=IN_CHARACTER, latency_s=0.02)
    prompts = load_prompts("demo").first(8)
    db = tmp_path / "s.db"
    Store.open(db).close()
    summaries = []

    def worker() -> None:
        with Store.open(db) as store:
            summaries.append(
                converse(store, _config(assistant), _config(user), prompts, 3, concurrency=2)
            )

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(summaries) == 2
    assert sum(s.turns_new for s in summaries) == 24  # 8 conversations x 3 turns, once each
    asked = Counter((p["messages"][0]["content"], len(p["messages"])) for p in assistant.payloads)
    assert len(asked) == 24 and set(asked.values()) == {1}
    assert len(user.payloads) == 16
    with Store.open(db) as store:
        assert len(load_turns(store)) == 24
        assert store.query("SELECT COUNT(*) FROM conversation_claims")[0][0] == 0


def test_the_command_exits_non_zero_when_work_failed_and_keeps_what_finished(
    tmp_path: Path, recording: Callable[..., RecordingFake]
) -> None:
    assistant, broken = recording(), recording(rates={"500": 1.0})
    db = tmp_path / "s.db"
    res = run_cli(
        "converse", "-m", f"openai-compat:fake@{assistant.base_url}",
        "-u", f"openai-compat:fake@{broken.base_url}", "--dataset", "demo", "--limit", "2",
        "--max-retries", "0", "--store", str(db), "--no-progress",
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert "2 turns stored (2 new, 0 reused); 0 of 2 conversations complete" in res.stdout
    assert "2 request(s) failed after retries" in res.stderr
    assert "simulated user: gave up after 1 attempts" in res.stderr
    with Store.open(db) as store:
        rows = [(t.turn, t.user_status, t.response_status) for t in load_turns(store)]
    assert rows == [(1, "seed", "ok"), (2, "error", "missing")] * 2
