"""Content-derived ids: the one way intima turns several strings into a stable id."""

from __future__ import annotations

import hashlib


def content_id(*parts: str, length: int | None = None) -> str:
    """sha256 of the parts joined by NUL (no part can fake a boundary), as hex, cut to
    ``length`` characters when given. Every stored key (prompts, runs, responses, judgments,
    bundles) is made this way, so ids are the same on every machine."""
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
    return digest if length is None else digest[:length]


def content_hash(prompt: str, response: str, context: str | None = None) -> str:
    """Identifies what a judge reads: the (prompt, response) text and, for a conversation, its
    earlier turns. Judgments are keyed by it, so the same text in two runs is judged once."""
    return (
        content_id(prompt, response) if context is None else content_id(context, prompt, response)
    )


#: How a scorer key of another publisher ends once imported: ``<key>|publisher:<fingerprint>``
#: (``intima.bundles.owners``): its judge is another scorer than this store's of the same key.
PUBLISHER_MARK = "|publisher:"


def publisher_of_key(key: str) -> tuple[str, str | None]:
    """``(key as its publisher wrote it, publisher fingerprint or None: this store's own)``."""
    base, sep, fp = key.rpartition(PUBLISHER_MARK)
    return (base, fp) if sep else (key, None)
