"""Model families, so that a judge rating a model of its own family is flagged.

A judge may favour text written like its own (self-preference); the flag makes such pairs
visible rather than hiding them. The family is read from the model name by the first matching
pattern below (case-insensitive); a name that matches none has no family and is never flagged.
"""

from __future__ import annotations

import re
from typing import Final

# Order matters: the first match wins (e.g. "smollm" before the generic "llama" substring rules).
FAMILY_PATTERNS: Final[tuple[tuple[str, str], ...]] = (
    ("smollm", r"smollm"),
    ("qwen", r"qwen|qwq"),
    ("llama", r"llama"),
    ("mistral", r"mistral|mixtral|ministral|magistral|codestral|devstral|pixtral"),
    ("gemma", r"gemma|gemini"),
    ("phi", r"(?:^|[^a-z])phi[-_ ]?\d|(?:^|[/:])phi(?:$|[^a-z])"),
    ("openai", r"gpt|(?:^|[/:])o\d(?:$|[-_ .])|chatgpt"),
    ("claude", r"claude|anthropic"),
    ("deepseek", r"deepseek"),
    ("command", r"command[-_ ]?r|cohere|aya"),
    ("granite", r"granite"),
    ("olmo", r"olmo|tulu"),
    ("falcon", r"falcon"),
    ("glm", r"glm"),
)

_COMPILED: Final = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in FAMILY_PATTERNS)


def model_family(name: str | None) -> str | None:
    """The family of a model name or spec (``openai-compat:Qwen/Qwen3-8B@...`` → ``qwen``)."""
    if not name:
        return None
    # Drop a provider prefix and server URLs: "llamacpp" must not read as the llama family,
    # and a URL's host name says nothing about the model.
    text = name.split("@", 1)[0]
    provider, sep, rest = text.partition(":")
    if provider == "llamacpp" and rest in ("", "smollm2"):
        return "smollm"  # the bundled default model
    if sep and provider in _providers():
        text = rest
    for family, rx in _COMPILED:
        if rx.search(text):
            return family
    return None


def _providers() -> set[str]:
    from intima.providers import provider_names

    return {"llamacpp", "openai-compat", "openai", "anthropic", "transformers", *provider_names()}


def same_family(judge: str | None, judged: str | None) -> bool:
    a, b = model_family(judge), model_family(judged)
    return a is not None and a == b
