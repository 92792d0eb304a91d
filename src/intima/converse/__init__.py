"""Conversations with a simulated user (``intima converse``): every assistant turn is an
ordinary prompt and response, so judging and scoring see each turn in its context."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from intima.converse.identity import ConversationSettings
    from intima.converse.runner import ConverseSummary, aconverse, converse
    from intima.converse.simulator import SIMULATOR_PROMPT_VERSION
    from intima.converse.store_io import ConversationTurn, conversation_run_ids, load_turns
else:  # bound on first use, so importing the package stays cheap (intima.core.lazy)
    from intima.core.lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        globals(),
        {
            "ConversationSettings": "intima.converse.identity",
            "ConverseSummary": "intima.converse.runner",
            "aconverse": "intima.converse.runner",
            "converse": "intima.converse.runner",
            "SIMULATOR_PROMPT_VERSION": "intima.converse.simulator",
            "ConversationTurn": "intima.converse.store_io",
            "conversation_run_ids": "intima.converse.store_io",
            "load_turns": "intima.converse.store_io",
        },
    )

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
