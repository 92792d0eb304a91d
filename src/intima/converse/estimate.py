"""What ``intima converse`` would send (``--dry-run``): for each conversation not finished for
good, its assistant turns not yet answered and the simulated user's messages not yet written,
counted by :func:`intima.generate.estimate.estimate`.

A conversation of N turns asks the assistant N times and the simulated user N-1 times (after
every turn but the last; see docs/conversations.md). Later requests carry the conversation so
far: its seed is known now, the replies are not, so they count at their ``max_tokens`` in the
worst case only (a resumed conversation's stored replies too: an upper bound either way).
"""

from __future__ import annotations

from pydantic import BaseModel

from intima.converse.identity import DEFAULT_USER_RETRIES, ConversationSettings
from intima.converse.simulator import simulator_messages
from intima.core.config import ModelConfig, PriceTable
from intima.dataset import PromptSet
from intima.dataset.types import Turn
from intima.generate.estimate import Ask, Estimate, approx_tokens, estimate
from intima.generate.runner import messages_for
from intima.providers import effective_config
from intima.store import Store

#: A simulated user's message that ends its conversation for good.
_STOPS = ("broke_character", "empty")


class _Progress(BaseModel):
    answered: int = 0  # assistant turns answered (they are answered in order)
    user: dict[int, str] = {}  # after_turn -> the stored message's status


def estimate_conversations(
    store: Store | None,
    assistant: ModelConfig,
    user: ModelConfig,
    prompts: PromptSet,
    turns: int,
    prices: PriceTable,
    *,
    max_user_retries: int = DEFAULT_USER_RETRIES,
) -> list[Estimate]:
    """Two estimates, the assistant's and the simulated user's (``store`` None: nothing is
    stored yet, so every conversation from its first turn)."""
    settings = ConversationSettings(assistant=assistant, user=user, turns=turns)
    a_config, u_config = effective_config(assistant), effective_config(user)
    progress = _progress(store, settings.run_id(prompts), a_config.config_key)
    a_max = a_config.generation.max_tokens or 0
    u_max = u_config.generation.max_tokens or 0
    a_asks: list[Ask] = []
    u_asks: list[Ask] = []
    for seed in prompts.prompts:
        state = progress.get(seed.prompt_id, _Progress())
        if any(status in _STOPS for status in state.user.values()):
            continue  # the simulated user ended it: nothing more is asked
        known = approx_tokens(messages_for(a_config, seed))
        for k in range(state.answered + 1, turns + 1):
            a_asks.append(Ask(known, (k - 1) * (a_max + u_max)))
        opening = (*seed.context, Turn(role="user", content=seed.text))
        known_user = approx_tokens(simulator_messages(seed.code, opening))
        for j in range(max(state.answered, 1), turns):
            if state.user.get(j) != "ok":
                u_asks.append(Ask(known_user, j * a_max + (j - 1) * u_max))
    retries = f"an out-of-character message is asked again up to {max_user_retries} time(s)"
    return [
        estimate(
            assistant,
            a_asks,
            prices,
            label=f"{settings.label} (assistant)",
            note="retries of failed requests",
        ),
        estimate(
            user,
            u_asks,
            prices,
            label=f"{settings.label} (simulated user)",
            note=retries if max_user_retries else "",
        ),
    ]


def _progress(store: Store | None, run_id: str, config_key: str) -> dict[str, _Progress]:
    """Where each conversation of the run stands in the store, by conversation id."""
    if store is None:
        return {}
    out: dict[str, _Progress] = {}
    for row in store.query(
        "SELECT ct.conversation_id, MAX(ct.turn) FROM conversation_turns ct JOIN responses r "
        "ON r.prompt_id = ct.prompt_id AND r.config_key = ? AND r.status = 'ok' "
        "WHERE ct.run_id = ? GROUP BY ct.conversation_id",
        (config_key, run_id),
    ):
        out.setdefault(row[0], _Progress()).answered = row[1]
    for row in store.query(
        "SELECT conversation_id, after_turn, status FROM simulated_user_messages WHERE run_id = ?",
        (run_id,),
    ):
        out.setdefault(row[0], _Progress()).user[row[1]] = row[2]
    return out
