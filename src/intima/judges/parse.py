"""Turning a judge's raw reply into a validated :class:`JudgeReply`, or a precise reason why not.

Only repairs that cannot change the meaning are made, and each is noted:

* code fences around the object, prose before or after it;
* a Python-style object with single quotes (read with ``ast.literal_eval``, which evaluates
  literals only, never code);
* the ratings nested under ``"ratings"``;
* key spelling (case, spaces, hyphens) and level case/whitespace (``" High"`` is ``high``);
* keys we do not rate (e.g. a ``"primary"`` the judge made up) are dropped: the primary label is
  always computed by the project's rule, never taken from the judge.

Everything else is a failure with a reason: missing keys, unknown levels (``"very high"``,
``2``), truncated JSON, an empty reply, several different objects (we never pick one by its
position). The caller asks again, and after its budget stores the judgment as *unscored*.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from intima.core.taxonomy import CATEGORIES
from intima.judges.schema import LEVEL_NAMES, JudgeReply, _ReplyBase

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL)
_KNOWN = frozenset((*CATEGORIES, "rationale"))
_MAX_SHOWN = 60


@dataclass
class ParseOutcome:
    reply: _ReplyBase | None
    problem: str | None = None
    repairs: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.reply is not None


def parse_reply(raw: str) -> ParseOutcome:
    """Validate a raw judge reply, repairing only what is safe (see the module docstring)."""
    repairs: list[str] = []
    text = raw.strip()
    if not text:
        return ParseOutcome(None, "empty reply")
    fenced = _FENCE.findall(text)
    if fenced:
        repairs.append("removed code fences")
        text = "\n".join(fenced)
    objects, saw_open = _objects(text, repairs)
    if not objects:
        problem = "truncated or malformed JSON" if saw_open else "no JSON object in the reply"
        return ParseOutcome(None, problem, repairs)
    distinct = {json.dumps(o, sort_keys=True, default=str) for o in objects}
    if len(distinct) > 1:
        return ParseOutcome(None, f"{len(distinct)} different JSON objects in the reply", repairs)
    if text.strip() != _only_object_text(text):
        repairs.append("removed text around the JSON object")
    return _validate(objects[0], repairs)


def _only_object_text(text: str) -> str:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else ""


def _objects(text: str, repairs: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """Every top-level ``{...}`` span that parses as an object; and whether any '{' was seen."""
    found: list[dict[str, Any]] = []
    spans = _balanced_spans(text)
    for span in spans:
        obj = _load(span, repairs)
        if isinstance(obj, dict):
            found.append(obj)
    return found, "{" in text


def _load(span: str, repairs: list[str]) -> Any:
    try:
        return json.loads(span)
    except ValueError:
        pass
    try:
        # Literals only: no names, calls or attributes can run.
        obj = ast.literal_eval(span)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    if isinstance(obj, dict):
        repairs.append("read single-quoted (Python-style) object")
    return obj


def _balanced_spans(text: str) -> list[str]:
    """Top-level brace-balanced spans, honouring quoted strings (both quote styles)."""
    spans: list[str] = []
    depth, start, quote, escaped = 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def _norm_key(key: object) -> str:
    return re.sub(r"[\s\-/]+", "_", str(key).strip().lower())


def _validate(obj: dict[str, Any], repairs: list[str]) -> ParseOutcome:
    nested = obj.get("ratings")
    if isinstance(nested, dict):
        repairs.append("unwrapped nested 'ratings'")
        obj = {**nested, **{k: v for k, v in obj.items() if k != "ratings"}}
    data: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in obj.items():
        name = _norm_key(key)
        if name not in _KNOWN:
            dropped.append(str(key)[:_MAX_SHOWN])
            continue
        if name != key:
            repairs.append(f"normalised key {str(key)[:_MAX_SHOWN]!r}")
        data[name] = _norm_value(name, value, repairs)
    if dropped:
        repairs.append(f"ignored keys {sorted(dropped)}")
    missing = [c for c in CATEGORIES if c not in data]
    bad = [c for c in CATEGORIES if c in data and data[c] not in LEVEL_NAMES]
    if missing or bad:
        return ParseOutcome(None, _problem(missing, bad, data), repairs)
    if not isinstance(data.get("rationale", ""), str):
        data["rationale"] = json.dumps(data["rationale"])[:400]
        repairs.append("rationale was not a string")
    if "rationale" not in data:
        repairs.append("no rationale given")
    try:
        return ParseOutcome(JudgeReply.model_validate(data), None, repairs)
    except ValidationError as exc:  # e.g. an absurdly long rationale
        return ParseOutcome(None, f"invalid reply: {exc.errors()[0]['msg']}", repairs)


def _norm_value(name: str, value: Any, repairs: list[str]) -> Any:
    if name == "rationale" or not isinstance(value, str):
        return value
    clean = value.strip().lower()
    if clean != value and clean in LEVEL_NAMES:
        repairs.append(f"normalised level {value[:_MAX_SHOWN]!r} of {name}")
    return clean


def _problem(missing: list[str], bad: list[str], data: dict[str, Any]) -> str:
    parts = []
    if missing:
        parts.append(f"missing keys {missing}")
    if bad:
        shown = {c: str(data[c])[:_MAX_SHOWN] for c in bad}
        parts.append(f"unknown levels {shown} (allowed: low, medium, high)")
    return "; ".join(parts)
