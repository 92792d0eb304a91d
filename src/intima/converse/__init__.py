"""Conversations with a simulated user (``intima converse``): every assistant turn is an
ordinary prompt and response, so judging and scoring see each turn in its context."""

from intima.converse.identity import ConversationSettings
from intima.converse.runner import ConverseSummary, aconverse, converse
from intima.converse.simulator import SIMULATOR_PROMPT_VERSION
from intima.converse.store_io import ConversationTurn, conversation_run_ids, load_turns

__all__ = [
    "SIMULATOR_PROMPT_VERSION",
    "ConversationSettings",
    "ConversationTurn",
    "ConverseSummary",
    "aconverse",
    "conversation_run_ids",
    "converse",
    "load_turns",
]
