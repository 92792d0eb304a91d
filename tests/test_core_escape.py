"""Untrusted text on the terminal: controls, bidi overrides and rich markup never act."""

from __future__ import annotations

import io

from rich.console import Console

from intima.core.escape import for_terminal


def _shown(text: str) -> str:
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, width=200).print(for_terminal(text), highlight=False)
    return buf.getvalue()


def test_bidi_overrides_and_controls_are_replaced() -> None:
    hostile = "invoice\u202efdp.exe \x1b]0;title\x07 \u2066x\u2069 \u200f"
    out = for_terminal(hostile)
    for ch in ("\u202e", "\x1b", "\x07", "\u2066", "\u2069", "\u200f"):
        assert ch not in out
    assert "invoice" in out and "fdp.exe" in out


def test_markup_and_links_are_shown_as_text() -> None:
    shown = _shown("[link=https://evil.example]click[/link] [bold red]x[/]")
    assert "\x1b]8;" not in shown  # no OSC 8 hyperlink
    assert "[link=https://evil.example]click[/link]" in shown
