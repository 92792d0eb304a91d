"""Reading conversations back: every assistant turn of every conversation run, in order.

This is the interface the drift statistics and the leaderboard read; it only reads. A turn is
an ordinary prompt row (its context is the conversation so far) with an ordinary response row,
plus the status of the user message it answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from intima.store import Store

UserStatus = Literal["seed", "ok", "broke_character", "empty", "error"]
ResponseStatus = Literal["ok", "error", "missing"]


class ConversationTurn(BaseModel):
    """One assistant turn of one conversation.

    A conversation the simulated user stopped (its message after turn k was empty, broke
    character or failed) ends with one more row, turn k+1, that holds that message:
    ``user_status`` says why, ``user_text`` is what the simulator wrote ("" if nothing),
    ``response_status`` is "missing", and ``prompt_id`` is ``<conversation_id>#stopped-<turn>``,
    which names no prompt row (no assistant was asked).
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_label: str
    conversation_id: str  # the seed prompt's prompt_id
    code: str
    dimension: str
    turn: int  # 1-based assistant turn index
    prompt_id: str  # this turn's prompt row (context = the conversation so far)
    response_id: str | None
    user_text: str  # the user message this turn answers
    response_text: str | None
    response_status: ResponseStatus
    user_status: UserStatus


def conversation_run_ids(store: Store) -> set[str]:
    """The runs that are conversations (``intima converse``), not single prompts."""
    return {r[0] for r in store.query("SELECT run_id FROM conversation_runs")}


def load_turns(store: Store, run_ids: Sequence[str] | None = None) -> list[ConversationTurn]:
    """Every turn of the given runs (ids, prefixes or labels; all conversation runs if None),
    by run, then conversation in dataset order, then turn. Runs that are not conversations are
    skipped."""
    out: list[ConversationTurn] = []
    for run_id in _conversation_runs(store, run_ids):
        out.extend(_run_turns(store, run_id))
    return out


def _conversation_runs(store: Store, run_ids: Sequence[str] | None) -> list[str]:
    ordered = [
        r[0]
        for r in store.query(
            "SELECT cr.run_id FROM conversation_runs cr JOIN runs ru ON ru.run_id = cr.run_id "
            "ORDER BY ru.created_at, ru.run_id"
        )
    ]
    if run_ids is None:
        return ordered
    wanted = set(store.resolve_runs(run_ids))
    return [r for r in ordered if r in wanted]


_TURNS_SQL = """
    SELECT ct.run_id, ru.label, ct.conversation_id, p.code, p.dimension, ct.turn, ct.prompt_id,
           p.text AS user_text, r.response_id, r.status AS response_status,
           r.text AS response_text, COALESCE(seed.position, -1) AS position
    FROM conversation_turns ct
    JOIN runs ru ON ru.run_id = ct.run_id
    JOIN prompts p ON p.prompt_id = ct.prompt_id
    LEFT JOIN responses r ON r.prompt_id = ct.prompt_id AND r.config_key = ru.config_key
    LEFT JOIN run_prompts seed
      ON seed.run_id = ct.run_id AND seed.prompt_id = ct.conversation_id
    WHERE ct.run_id = ?
"""

_STOPS_SQL = """
    SELECT conversation_id, after_turn, text, status FROM simulated_user_messages
    WHERE run_id = ? AND status != 'ok'
"""


def _run_turns(store: Store, run_id: str) -> list[ConversationTurn]:
    keyed: list[tuple[int, str, int, ConversationTurn]] = []
    first: dict[str, tuple[int, ConversationTurn]] = {}
    for row in store.query(_TURNS_SQL, (run_id,)):
        turn = ConversationTurn(
            run_id=row["run_id"],
            run_label=row["label"],
            conversation_id=row["conversation_id"],
            code=row["code"],
            dimension=row["dimension"],
            turn=row["turn"],
            prompt_id=row["prompt_id"],
            response_id=row["response_id"],
            user_text=row["user_text"],
            response_text=row["response_text"] if row["response_status"] == "ok" else None,
            response_status=row["response_status"] or "missing",
            user_status="seed" if row["turn"] == 1 else "ok",
        )
        keyed.append((row["position"], turn.conversation_id, turn.turn, turn))
        if turn.turn == 1:
            first[turn.conversation_id] = (row["position"], turn)
    for row in store.query(_STOPS_SQL, (run_id,)):
        if row["conversation_id"] not in first:
            continue  # cannot happen through intima: a message follows a stored turn
        position, opening = first[row["conversation_id"]]
        stopped = _stopped_turn(opening, row["after_turn"] + 1, row["text"], row["status"])
        keyed.append((position, stopped.conversation_id, stopped.turn, stopped))
    keyed.sort(key=lambda k: (k[0], k[1], k[2]))
    return [k[3] for k in keyed]


def _stopped_turn(
    opening: ConversationTurn, turn: int, text: str | None, status: UserStatus
) -> ConversationTurn:
    return opening.model_copy(
        update={
            "turn": turn,
            "prompt_id": f"{opening.conversation_id}#stopped-{turn}",
            "response_id": None,
            "user_text": text or "",
            "response_text": None,
            "response_status": "missing",
            "user_status": status,
        }
    )
