"""What a request may hold, checked where it is written (``intima request``, the forms) and
again where it is run (:mod:`intima.service.request_policy`): one line of model spec naming an
installed provider and a model that is no command-line option, text that a store and a file can
hold, lengths within limits, and a dataset that is no path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from intima.core.config import GenerationSettings, ModelConfig, ModelSpec
from intima.core.errors import ConfigError
from intima.core.escape import strip_controls

MAX_SPEC_CHARS = 500
MAX_REQUESTER_CHARS = 200
MAX_SYSTEM_PROMPT_CHARS = 20_000
#: Datasets a request may name. Requests can come from a public form, so they never name a
#: path on the worker's disk; the worker maps "hub" to a local copy if it has no Hub access.
REQUEST_DATASETS = ("hub", "demo")


class QueueError(ConfigError):
    """A request is invalid (bad spec, too long, unknown provider or dataset)."""


def check_request(
    spec: str,
    requester: str | None = None,
    dataset: str = "hub",
    system_prompt: str | None = None,
    generation: GenerationSettings | None = None,
    *,
    allow_urls: bool = True,
) -> tuple[ModelConfig, str | None]:
    """The configuration and requester to queue, or :class:`QueueError` saying why not (called
    before a store is opened, so a refused request creates nothing)."""
    config = _validated_config(spec, system_prompt, generation, allow_urls=allow_urls)
    requester = _validated_requester(requester)
    if dataset not in REQUEST_DATASETS:
        raise QueueError(
            f"dataset {dataset[:50]!r} cannot be requested; use one of {REQUEST_DATASETS}"
        )
    return config, requester


def _validated_config(
    spec: str, system_prompt: str | None, generation: GenerationSettings | None, *, allow_urls: bool
) -> ModelConfig:
    if not isinstance(spec, str) or not spec.strip():
        raise QueueError("empty model spec; expected PROVIDER:MODEL, e.g. openai:gpt-4o-mini")
    if len(spec) > MAX_SPEC_CHARS:
        raise QueueError(f"model spec is {len(spec):,} characters; the limit is {MAX_SPEC_CHARS}")
    if system_prompt is not None and len(system_prompt) > MAX_SYSTEM_PROMPT_CHARS:
        raise QueueError(
            f"system prompt is {len(system_prompt):,} characters; the limit is "
            f"{MAX_SYSTEM_PROMPT_CHARS}"
        )
    _check_text("model spec", spec)
    if system_prompt is not None:
        _check_text("system prompt", system_prompt)
    if any(ch in spec for ch in "\r\n\t\x00") or strip_controls(spec) != spec:
        raise QueueError("model spec must be one line without control characters")
    parsed = ModelSpec.parse(spec)  # raises ConfigError naming the problem
    if parsed.model.lstrip().startswith("-"):  # a server's argv would read it as an option
        raise QueueError(f"model {parsed.model[:60]!r} starts with '-'; a model id never does")
    from intima.providers import effective_config, provider_names

    known = provider_names()
    if parsed.provider not in known:
        raise QueueError(
            f"unknown model provider {parsed.provider[:50]!r}; known providers: {', '.join(known)}"
        )
    if not allow_urls:  # from the public: a Hub model or an allow-listed API model only
        from intima.service.public import PublicRequestError, check_public_spec, check_settings

        try:
            check_public_spec(parsed)
            check_settings(system_prompt, generation or GenerationSettings())
        except PublicRequestError as exc:
            raise QueueError(str(exc)) from exc
    # As the provider will send it: a setting it cannot honour (Anthropic's seed) is no part of
    # the request's identity, or two requests for the same answers would be two requests.
    return effective_config(
        ModelConfig(
            spec=str(parsed),
            system_prompt=system_prompt,
            generation=generation or GenerationSettings(),
        )
    )


def _validated_requester(requester: str | None) -> str | None:
    if requester is None:
        return None
    requester = requester.strip()
    if len(requester) > MAX_REQUESTER_CHARS:
        raise QueueError(
            f"requester name is {len(requester):,} characters; the limit is {MAX_REQUESTER_CHARS}"
        )
    _check_text("requester name", requester)
    if strip_controls(requester) != requester:  # C0, C1 and bidirectional controls
        raise QueueError("requester name must be one line without control characters")
    return requester or None


def _check_text(what: str, text: str) -> None:
    """Refuse a lone surrogate (an undecodable byte from argv, "\\ud800" in JSON): no store or
    file can hold it, so the write that follows would fail."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise QueueError(
            f"{what} holds text that is not valid Unicode (a lone surrogate or an undecodable byte)"
        ) from None


def resolve_request_id(given: str, known: Iterable[str]) -> str:
    """The one request whose id starts with ``given`` (a prefix, as ``intima explain`` takes
    one); ``given`` itself when it is a whole id, not hex, or matches none, so the queue's own
    error names it. Two or more matches are refused: acting on the wrong request is worse."""
    if len(given) >= 16 or not re.fullmatch(r"[0-9a-f]{4,15}", given):
        return given
    matches = sorted({i for i in known if i.startswith(given)})
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise QueueError(f"{given} is the start of {len(matches)} requests ({shown}); give more")
    return matches[0] if matches else given
