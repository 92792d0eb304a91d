"""A reply's token counts when the vendor does not give them.

Some servers and proxies answer without ``usage`` (or with half of it). Priced at 0 tokens such a
reply would cost nothing and ``--max-cost`` would never fill, so the missing counts are settled
here, once, for every reply (live or from a batch) before it is priced or stored:

* **reported**: the vendor's own counts, as given;
* **counted**: the model's tokenizer, when one is on this machine (a Hugging Face model whose
  ``tokenizer.json`` is in the local Hub cache: nothing is downloaded for it), over the prompt's
  messages and the reply's text, plus the chat template's markers at their most;
* **worst case**: otherwise, the most the request allowed: one token per UTF-8 byte of the prompt
  (a byte-level tokenizer never does worse) with the template's markers, and a reply of
  ``max_tokens``. The same bound :class:`intima.core.spending.Budget` holds before a request is
  sent, so a request priced this way spends exactly what was held for it.

A count from the visible text cannot see reasoning a model kept hidden; a server that hides it
reports usage in practice (vLLM, llama.cpp, the hosted vendors all do).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from intima.core.config import GenerationSettings
from intima.providers.base import Completion, Message, UsageSource

#: Tokens a chat template may add around each message (role markers, separators) and once per
#: request (the assistant's opening); generous, because the bound must not be beaten.
TEMPLATE_TOKENS_PER_MESSAGE = 16
TEMPLATE_TOKENS_PER_REQUEST = 16
#: The reply length held for a request that sets no max_tokens: the most a configuration allows.
MAX_REPLY_TOKENS = 131072
#: The weakest source wins when a judgment adds up several replies.
_STRENGTH: dict[UsageSource, int] = {"reported": 0, "counted": 1, "worst case": 2}


def schema_bytes(json_schema: dict[str, Any] | None) -> int:
    """What a structured-output schema adds to a prompt, in UTF-8 bytes."""
    return 0 if json_schema is None else len(json.dumps(json_schema).encode("utf-8"))


def worst_prompt_tokens(messages: Sequence[Message], extra_bytes: int = 0) -> int:
    """The most tokens a prompt can be: one per UTF-8 byte of its text (and of ``extra_bytes``,
    e.g. a schema), and the template's markers."""
    text_bytes = sum(len(m.content.encode("utf-8")) for m in messages) + extra_bytes
    return text_bytes + TEMPLATE_TOKENS_PER_MESSAGE * len(messages) + TEMPLATE_TOKENS_PER_REQUEST


def worst_reply_tokens(settings: GenerationSettings) -> int:
    return settings.max_tokens or MAX_REPLY_TOKENS


def settled(
    completion: Completion,
    model_name: str,
    messages: Sequence[Message],
    settings: GenerationSettings,
    json_schema: dict[str, Any] | None = None,
) -> Completion:
    """``completion`` with both token counts and where they came from: the vendor's where it
    gave them, else counted with ``model_name``'s local tokenizer, else the request's worst
    case. A count the vendor gave is never replaced, unless it is an impossible 0."""
    prompt, reply = completion.prompt_tokens, completion.completion_tokens
    # No prompt is 0 tokens, nor is a reply with text: such a count is no count (a proxy that
    # writes zeros would make every reply free, as one that writes no usage did).
    prompt = prompt or None
    reply = None if reply == 0 and completion.text else reply
    if prompt is not None and reply is not None:  # a provider that counts for itself may say so
        return completion.model_copy(update={"usage_source": completion.usage_source or "reported"})
    tokenizer = local_tokenizer(model_name)
    source: UsageSource
    if tokenizer is not None:
        source = "counted"
        extra = len(tokenizer.encode(json.dumps(json_schema)).ids) if json_schema else 0
        prompt_count = sum(len(tokenizer.encode(m.content).ids) for m in messages) + extra
        counted_prompt = prompt_count + TEMPLATE_TOKENS_PER_MESSAGE * len(messages)
        counted_prompt += TEMPLATE_TOKENS_PER_REQUEST
        counted_reply = len(tokenizer.encode(completion.text).ids) + 1  # and its end token
    else:
        source = "worst case"
        counted_prompt = worst_prompt_tokens(messages, schema_bytes(json_schema))
        counted_reply = worst_reply_tokens(settings)
    return completion.model_copy(
        update={
            "prompt_tokens": counted_prompt if prompt is None else prompt,
            "completion_tokens": counted_reply if reply is None else reply,
            "usage_source": source,
        }
    )


def weakest(sources: Sequence[UsageSource | None]) -> UsageSource | None:
    """The least certain of several replies' sources (None when there were none)."""
    least: UsageSource | None = None
    for source in sources:
        if source is not None and (least is None or _STRENGTH[source] > _STRENGTH[least]):
            least = source
    return least


@lru_cache(maxsize=32)
def local_tokenizer(model_name: str) -> Any | None:
    """``model_name``'s tokenizer (a ``tokenizers.Tokenizer``) when it names a Hugging Face
    model whose ``tokenizer.json`` is in this machine's Hub cache; None otherwise. Never
    downloads: a reply is never kept waiting on the network for its price."""
    if model_name.count("/") != 1:
        return None  # not a Hub id (gpt-4o-mini, a server's alias)
    try:
        from huggingface_hub import try_to_load_from_cache
        from tokenizers import Tokenizer
    except ImportError:  # tokenizers comes with the affect and transformers extras
        return None
    try:
        path = try_to_load_from_cache(model_name, "tokenizer.json")
        return Tokenizer.from_file(path) if isinstance(path, str) else None
    except Exception:  # a name the Hub refuses, a damaged file: no tokenizer, the worst case
        return None
