"""The conversation runner's writes and the reads it resumes from.

Every write is its own transaction through ``Store.transaction`` and happens as soon as the
answer it records arrives, so a killed process loses at most the requests in flight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from intima.converse.identity import ConversationSettings, conversation_key
from intima.converse.simulator import SIMULATOR_PROMPT_SHA256, SIMULATOR_PROMPT_VERSION
from intima.core.version import __version__
from intima.dataset.types import Prompt
from intima.generate.runner import generation_failures
from intima.store import ClaimState, RunRecord, Store, now
from intima.store.claims import ClaimKind, claim

UserMessageStatus = Literal["ok", "broke_character", "empty", "error"]

#: A conversation is finished for good when its last turn is answered or the simulated user
#: stopped it (empty, out of character). A simulator that failed to answer ('error') is asked
#: again by the next run, as failed responses are.
CONVERSATION_CLAIMS = ClaimKind(
    table="conversation_claims",
    key="conversation_key",
    finished="""
        SELECT run_id || '/' || conversation_id AS conversation_key
        FROM simulated_user_messages WHERE status IN ('broke_character', 'empty')
        UNION ALL
        SELECT ct.run_id || '/' || ct.conversation_id
        FROM conversation_turns ct
        JOIN conversation_runs cr ON cr.run_id = ct.run_id AND ct.turn = cr.turns
        JOIN runs ru ON ru.run_id = ct.run_id
        JOIN responses r
          ON r.prompt_id = ct.prompt_id AND r.config_key = ru.config_key AND r.status = 'ok'
    """,
)


class UserMessageRecord(BaseModel):
    """One message of the simulated user, as stored."""

    run_id: str
    conversation_id: str
    after_turn: int
    text: str | None
    status: UserMessageStatus
    attempts: int
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    served_by: str | None = None
    #: where the token counts came from (:mod:`intima.generate.usage`); None: no answer
    usage_source: Literal["reported", "counted", "worst case"] | None = None


@dataclass(frozen=True, slots=True)
class StoredUserMessage:
    status: UserMessageStatus
    text: str | None


def ensure_conversation_run(
    store: Store, record: RunRecord, seeds: Sequence[Prompt], settings: ConversationSettings
) -> None:
    """The run, its seed prompts (turn 1 of every conversation) and its conversation settings;
    whatever already exists is left as it is."""
    store.ensure_run(record, seeds)
    stamp = now()
    with store.transaction() as conn:
        conn.execute(
            "INSERT OR IGNORE INTO conversation_runs (run_id, turns, user_config_key, "
            "user_config_json, simulator_prompt_version, simulator_prompt_sha256, "
            "package_version, created_at) VALUES (?,?,?,?,?,?,?,?)",
            (
                record.run_id,
                settings.turns,
                settings.user.config_key,
                settings.user.model_dump_json(),
                SIMULATOR_PROMPT_VERSION,
                SIMULATOR_PROMPT_SHA256,
                __version__,
                stamp,
            ),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO conversation_turns "
            "(run_id, conversation_id, turn, prompt_id, created_at) VALUES (?,?,1,?,?)",
            [(record.run_id, p.prompt_id, p.prompt_id, stamp) for p in seeds],
        )


def add_turn(
    store: Store, run_id: str, conversation_id: str, turn: int, prompt: Prompt, position: int
) -> None:
    """A later turn's prompt, added to the run as soon as the user message it answers is
    stored, so that judging and scoring see it like any other prompt of the run."""
    with store.transaction() as conn:
        conn.execute(
            "INSERT OR IGNORE INTO prompts "
            "(prompt_id, text, code, dimension, source_model, context_json) VALUES (?,?,?,?,?,?)",
            (
                prompt.prompt_id,
                prompt.text,
                prompt.code,
                str(prompt.dimension),
                prompt.source_model,
                prompt.context_json,
            ),
        )
        conn.execute(
            "INSERT OR IGNORE INTO run_prompts (run_id, prompt_id, position) VALUES (?,?,?)",
            (run_id, prompt.prompt_id, position),
        )
        conn.execute(
            "INSERT OR IGNORE INTO conversation_turns "
            "(run_id, conversation_id, turn, prompt_id, created_at) VALUES (?,?,?,?,?)",
            (run_id, conversation_id, turn, prompt.prompt_id, now()),
        )


def record_user_message(store: Store, rec: UserMessageRecord) -> None:
    """Store a simulated user's message; only a failed ('error') one is ever replaced."""
    with store.transaction() as conn:
        conn.execute(
            """
            INSERT INTO simulated_user_messages (run_id, conversation_id, after_turn, text,
                status, attempts, error, prompt_tokens, completion_tokens, latency_s, served_by,
                package_version, created_at, usage_source)
            VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
            ON CONFLICT(run_id, conversation_id, after_turn) DO UPDATE SET
                text=excluded.text, status=excluded.status,
                attempts=simulated_user_messages.attempts + excluded.attempts,
                error=excluded.error, prompt_tokens=excluded.prompt_tokens,
                completion_tokens=excluded.completion_tokens, latency_s=excluded.latency_s,
                served_by=excluded.served_by, package_version=excluded.package_version,
                created_at=excluded.created_at, usage_source=excluded.usage_source
            WHERE simulated_user_messages.status = 'error'
            """,
            (
                rec.run_id,
                rec.conversation_id,
                rec.after_turn,
                rec.text,
                rec.status,
                rec.attempts,
                rec.error,
                rec.prompt_tokens,
                rec.completion_tokens,
                rec.latency_s,
                rec.served_by,
                __version__,
                now(),
                rec.usage_source,
            ),
        )


def user_messages(store: Store, run_id: str, conversation_id: str) -> dict[int, StoredUserMessage]:
    """The simulated user's stored messages of one conversation, by the turn they follow."""
    rows = store.query(
        "SELECT after_turn, status, text FROM simulated_user_messages "
        "WHERE run_id = ? AND conversation_id = ?",
        (run_id, conversation_id),
    )
    return {r["after_turn"]: StoredUserMessage(r["status"], r["text"]) for r in rows}


def stored_answer(store: Store, response_id: str) -> str | None:
    """The text of a successful stored response, or None."""
    rows = store.query(
        "SELECT text FROM responses WHERE response_id = ? AND status = 'ok'", (response_id,)
    )
    return rows[0]["text"] if rows and rows[0]["text"] is not None else None


def unfinished(store: Store, run_id: str, conversation_ids: Sequence[str]) -> list[str]:
    """The conversations of the run that are not finished for good."""
    done = {
        r[0]
        for r in store.query(
            f"SELECT f.conversation_key FROM ({CONVERSATION_CLAIMS.finished}) AS f "
            "WHERE f.conversation_key LIKE ?",
            (run_id + "/%",),
        )
    }
    return [c for c in conversation_ids if conversation_key(run_id, c) not in done]


# -- claims: each conversation is carried on by one process at a time ---------------------------


def claim_conversations(
    store: Store, run_id: str, conversation_ids: Sequence[str], owner: str, lease_s: float
) -> list[ClaimState]:
    keys = [conversation_key(run_id, c) for c in conversation_ids]
    with store.transaction() as conn:
        return claim(conn, CONVERSATION_CLAIMS, keys, owner, lease_s)


def release_conversations(store: Store, owner: str) -> None:
    """Drop this owner's claims, and any claim on a finished conversation."""
    kind = CONVERSATION_CLAIMS
    with store.transaction() as conn:
        conn.execute(f"DELETE FROM {kind.table} WHERE owner = ?", (owner,))
        conn.execute(f"DELETE FROM {kind.table} WHERE {kind.key} IN ({kind.finished})")


# -- the tally a summary reports ----------------------------------------------------------------


class RunTally(BaseModel):
    """Where a conversation run stands, read from the store."""

    conversations: int
    complete: int
    stopped_by_user: int
    assistant_errors: int
    user_errors: int
    turns_stored: int


def run_tally(store: Store, run_id: str, turns: int) -> RunTally:
    from intima.converse.store_io import load_turns

    rows = load_turns(store, [run_id])
    conversations = {t.conversation_id for t in rows}
    answered = [t for t in rows if t.response_status == "ok"]
    full = {t.conversation_id for t in answered if t.turn == turns}
    stopped = {t.conversation_id for t in rows if t.user_status in ("broke_character", "empty")}
    return RunTally(
        conversations=len(conversations),
        complete=len(full),
        stopped_by_user=len(stopped),
        assistant_errors=sum(1 for t in rows if t.response_status == "error"),
        user_errors=sum(1 for t in rows if t.user_status == "error"),
        turns_stored=len(answered),
    )


def failure_reasons(store: Store, run_id: str) -> Counter[str]:
    """Why the run's failed work failed (the assistant's or the simulated user's requests,
    after retries): reason -> count."""
    reasons: Counter[str] = Counter()
    # Every turn's prompt is in run_prompts, so the run's failed prompts are its failed turns.
    for error, n in generation_failures(store, [run_id]).items():
        reasons[f"assistant: {error}"] += n
    for row in store.query(
        "SELECT error, COUNT(*) FROM simulated_user_messages "
        "WHERE run_id = ? AND status = 'error' GROUP BY error",
        (run_id,),
    ):
        reasons[f"simulated user: {row[0] or 'unknown'}"] += row[1]
    return reasons
