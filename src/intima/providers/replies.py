"""A chat server's 200 reply, checked at the boundary before anything is built from it.

OpenAI (through its SDK), every OpenAI-compatible server, the Hugging Face router and Anthropic
(through its SDK) all come here with the body's bytes, so they treat a broken reply alike:

* **Not JSON, or JSON that is not an object** (a proxy's HTML page, a cut transfer): a
  :class:`TransientError`, retried: the next attempt usually gets the real answer.
* **No choices, or no text** (``choices: []``, ``content: null``): retried too, as servers under
  load send them.
* **An object of the wrong shape** (``choices`` an object, ``message`` a string, a token count
  ``"lots"`` or -3, a text that is not a string): a :class:`MalformedReply` naming the field, and
  that item fails, not retried in this run: the serializer that wrote it once writes it again,
  and each attempt may be billed. The next run asks again, as for any failed item.
* **A lone surrogate** in a text: replaced by U+FFFD (:func:`base.without_surrogates`, applied by
  :class:`Completion` to whatever any provider builds), so the store and a bundle take it.

The wire models keep only what is read and ignore the rest, so a vendor adding fields is fine.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intima.providers.base import (
    MAX_TOKEN_COUNT,
    Completion,
    MalformedReply,
    RequestError,
    TransientError,
)

#: A token count: a JSON integer from 0 to :data:`MAX_TOKEN_COUNT` (strict: not ``"12"``,
#: ``12.0`` or ``true``); ``10**19`` is a malformed reply, not an overflow in the store.
Count = Annotated[int, Field(strict=True, ge=0, le=MAX_TOKEN_COUNT)]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _ChatUsage(_Wire):
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None


class _ChatMessage(_Wire):
    content: str | None = None
    refusal: str | None = None


class _ChatChoice(_Wire):
    message: _ChatMessage | None = None
    finish_reason: str | None = None


class ChatReply(_Wire):
    """OpenAI's chat completion, as far as it is read."""

    choices: list[_ChatChoice] | None = None
    usage: _ChatUsage | None = None


class _Block(_Wire):
    type: str
    text: str | None = None
    input: Any = None


class _MessageUsage(_Wire):
    input_tokens: Count | None = None
    output_tokens: Count | None = None


class MessageReply(_Wire):
    """Anthropic's Messages API reply, as far as it is read."""

    content: list[_Block] | None = None
    stop_reason: str | None = None
    usage: _MessageUsage | None = None


W = TypeVar("W", bound=_Wire)


def read_json(raw: bytes) -> Any:
    """A 200's body as JSON; anything else is worth another attempt."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TransientError(f"malformed JSON in response body ({exc})") from exc


def checked(model: type[W], data: Any) -> W:
    """``data`` as ``model``, or why not: a :class:`MalformedReply` naming the field."""
    if not isinstance(data, dict):
        raise TransientError("response body is not a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MalformedReply(malformed_reason(exc)) from exc


_COUNT = "a count (a whole number, 0 or more)"
#: What a field should have been, by pydantic's error type.
_EXPECTED = {
    "list_type": "a list",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dict_type": "an object",
    "string_type": "a string",
    **dict.fromkeys(("int_type", "int_parsing", "int_from_float", "greater_than_equal"), _COUNT),
    "less_than_equal": f"a count (a whole number, at most {MAX_TOKEN_COUNT:,})",
}


def malformed_reason(exc: ValidationError) -> str:
    """One line naming the first wrong field, what it held (cut, escaped by ``repr``) and what
    it should hold, e.g. ``malformed reply: usage.prompt_tokens is 'lots', not a count``."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "the reply"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first["type"] == "missing":
        return f"malformed reply: {where} is missing{more}"
    shown = repr(first.get("input"))
    shown = shown if len(shown) <= 40 else shown[:40] + "…"
    expected = _EXPECTED.get(first["type"])
    if expected is None:
        return f"malformed reply: {where} is {shown} ({first['msg']}){more}"
    return f"malformed reply: {where} is {shown}, not {expected}{more}"


def chat_completion(data: Any, served_by: str) -> Completion:
    """An OpenAI chat completion (the parsed body). A refusal is the model's answer, stored with
    finish_reason ``refusal``; a content filter that left no text fails the request."""
    reply = checked(ChatReply, data)
    if not reply.choices:
        raise TransientError("the server returned no choices")
    choice, usage = reply.choices[0], reply.usage or _ChatUsage()
    message = choice.message or _ChatMessage()
    text, finish = message.content, choice.finish_reason
    if message.refusal:
        text, finish = message.refusal, "refusal"
    if not text and finish == "content_filter":
        raise RequestError("the server's content filter withheld the answer (content_filter)")
    if text is None:
        raise TransientError("the server returned no message content")
    return Completion(
        text=text,
        finish_reason=finish,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        served_by=served_by,
    )


def message_completion(data: Any, served_by: str) -> Completion:
    """An Anthropic Messages reply (the parsed body). A forced tool call's ``input`` is the reply
    text (as JSON); a refusal with no text is a failed request."""
    reply = checked(MessageReply, data)
    blocks = reply.content or []
    tool = next((b for b in blocks if b.type == "tool_use"), None)
    if tool is not None:
        text, form = json.dumps(tool.input, ensure_ascii=False), "tool"
    else:
        text, form = "".join(b.text or "" for b in blocks if b.type == "text"), None
    if reply.stop_reason == "refusal" and not text.strip():
        raise RequestError("Anthropic declined to answer (stop_reason refusal)")
    usage = reply.usage or _MessageUsage()
    return Completion(
        text=text,
        finish_reason=reply.stop_reason,
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        served_by=served_by,
        structured_output=form,
    )
