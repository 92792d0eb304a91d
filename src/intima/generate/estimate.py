"""What a command would send and what it may cost, before it sends anything (``--dry-run``).

One way of estimating for every command that calls models (``run``, ``judge``, ``converse``,
``validate -j``): each builds the requests it would make for what is missing from the store,
as real chat messages, and :func:`estimate` counts them. Nothing is sent and nothing written.

Tokens are estimated without a tokenizer (none ships with intima, and each vendor's differs):
about :data:`CHARS_PER_TOKEN` characters a token, which is close for English text on the GPT
and Claude tokenizers, plus a few tokens per message for the chat template. The cost range is
the input's cost plus nothing (every reply empty) up to the input's cost plus every reply at
its ``max_tokens`` (and, for conversations, every earlier reply carried in the context at its
longest).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from intima.core.config import ModelConfig, Price, PriceTable
from intima.dataset import PromptSet
from intima.generate.runner import default_label, messages_for
from intima.providers import effective_config
from intima.providers.base import Message
from intima.store import Store

#: Characters per token of the estimate (English prose on the GPT and Claude tokenizers).
CHARS_PER_TOKEN = 4
#: Tokens the chat template adds per message (role markers) and per request (the reply's start).
TOKENS_PER_MESSAGE = 4
TOKENS_PER_REQUEST = 3


def approx_tokens(messages: Sequence[Message], extra_chars: int = 0) -> int:
    """The estimated prompt tokens of one request: its text at :data:`CHARS_PER_TOKEN`
    characters a token, the template's markers; ``extra_chars``: what else it carries (a
    structured-output schema)."""
    chars = sum(len(m.content) for m in messages) + extra_chars
    return (
        math.ceil(chars / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * len(messages) + TOKENS_PER_REQUEST
    )


@dataclass(frozen=True)
class Ask:
    """One request a command would send: its prompt tokens as known now, and the most tokens
    of replies not yet written (earlier turns of a conversation) it may carry at worst."""

    input_tokens: int
    unwritten_tokens: int = 0


class Estimate(BaseModel):
    """What one configuration would be sent: requests, tokens, and the cost range."""

    label: str
    model: str  # provider:model
    requests: int
    input_tokens: int
    #: the input with every reply carried in a later request's context at its longest
    input_tokens_worst: int
    #: every reply at max_tokens; None when the provider's default bounds the reply
    output_tokens_worst: int | None
    max_tokens: int | None
    price: Price | None = None
    #: which table priced it: a file, or the default table with its date
    priced_by: str | None = None
    #: what the figures leave out (retries, re-asks)
    note: str = ""

    @property
    def cost_low(self) -> float | None:
        """The input at the estimate, every reply empty."""
        return None if self.price is None else self.price.cost(self.input_tokens, 0)

    @property
    def cost_high(self) -> float | None:
        """Every reply at max_tokens; None if unpriced or if the reply has no bound here."""
        if self.price is None or self.output_tokens_worst is None:
            return None
        return self.price.cost(self.input_tokens_worst, self.output_tokens_worst)


def estimate(
    config: ModelConfig,
    asks: Iterable[Ask],
    prices: PriceTable,
    *,
    label: str | None = None,
    note: str = "",
) -> Estimate:
    """Count the requests ``asks`` of one configuration and price them."""
    asks = list(asks)
    spec = config.parsed
    max_tokens = effective_config(config).generation.max_tokens  # None: the provider's default
    input_tokens = sum(a.input_tokens for a in asks)
    return Estimate(
        label=label or default_label(config),
        model=f"{spec.provider}:{spec.model}",
        requests=len(asks),
        input_tokens=input_tokens,
        input_tokens_worst=input_tokens + sum(a.unwritten_tokens for a in asks),
        output_tokens_worst=None if max_tokens is None else max_tokens * len(asks),
        max_tokens=max_tokens,
        price=prices.for_model(spec),
        priced_by=prices.priced_by(spec),
        note=note,
    )


def answered(store: Store | None, config_key: str) -> set[str]:
    """Prompt ids with a stored successful response of the configuration (none without a
    store): a run resumes by asking for the others."""
    if store is None:
        return set()
    rows = store.query(
        "SELECT prompt_id FROM responses WHERE config_key = ? AND status = 'ok'", (config_key,)
    )
    return {r[0] for r in rows}


def estimate_run(
    store: Store | None,
    prompts: PromptSet,
    configs: Sequence[ModelConfig],
    prices: PriceTable,
) -> list[Estimate]:
    """What ``generate`` would send for each configuration: one request per prompt without a
    stored response (``store`` None: a store that does not exist yet, so every prompt)."""
    out = []
    for asked in configs:
        config = effective_config(asked)  # as the provider sends it: the key responses have
        done = answered(store, config.config_key)
        asks = [
            Ask(approx_tokens(messages_for(config, p)))
            for p in prompts.prompts
            if p.prompt_id not in done
        ]
        out.append(estimate(config, asks, prices, note="retries of failed requests"))
    return out
