"""Making untrusted text (model and judge output, dataset rows) safe to show."""

from __future__ import annotations

import re

from rich.markup import escape

# C0 and C1 control characters except tab and newline: they can move the cursor, rewrite
# the terminal title or hide text, so none of them may reach a terminal. Bidirectional
# controls (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C) reorder what is shown, so a
# line can read differently from what it holds: they are replaced too. So are lone surrogates
# (an undecodable byte read with surrogateescape, "\ud800" in JSON): a terminal in the C locale
# would get the raw byte back, and a UTF-8 one a UnicodeEncodeError.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


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


#: How much of a value the user gave an error quotes back: enough to recognise it. Every echo
#: of user input is bounded; a 100 KB argument quoted whole filled the terminal and the log.
ECHO_CHARS = 80
#: The longest error line the command line prints, whatever it quotes (a last bound).
MAX_ERROR_CHARS = 2_000


def clipped(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was when cut."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 1]}… ({len(text):,} characters)"


def quoted(value: object, limit: int = ECHO_CHARS) -> str:
    """``repr`` of a value the user gave, bounded: ``'xxxx'… (100,000 characters)``."""
    if not isinstance(value, str):
        return clipped(repr(value), limit)
    if len(value) <= limit:
        return repr(value)
    return f"{value[: limit - 1]!r}… ({len(value):,} characters)"
