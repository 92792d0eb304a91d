"""Making untrusted text (model and judge output, dataset rows) safe to show."""

from __future__ import annotations

import re

from rich.markup import escape

# C0 and C1 control characters except tab and newline: they can move the cursor, rewrite
# the terminal title or hide text, so none of them may reach a terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    return _CONTROL.sub("\N{REPLACEMENT CHARACTER}", text)


def for_terminal(text: str | None, limit: int | None = None) -> str:
    """Plain text for a rich console: control characters replaced, markup escaped."""
    if text is None:
        return ""
    clean = strip_controls(text)
    if limit is not None and len(clean) > limit:
        clean = clean[: limit - 1] + "…"
    return escape(clean)
