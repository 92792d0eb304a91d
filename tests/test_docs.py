"""The README and docs point at files that exist (docs/leaderboard.md once linked a missing
docs/judges.md)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: [text](relative/path.md#anchor) and `docs/name.md` mentioned in code spans
_LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)#\s]+)(?:#[^)]*)?\)")
_NAMED = re.compile(r"`(docs/[\w./-]+\.md)`")


def _targets(page: Path) -> list[tuple[str, Path]]:
    text = page.read_text(encoding="utf-8")
    found = [(m, page.parent / m) for m in _LINK.findall(text)]
    found += [(name, ROOT / name) for name in _NAMED.findall(text)]
    return found


def test_every_link_and_named_doc_exists() -> None:
    missing = [f"{p.relative_to(ROOT)} -> {name}" for p in PAGES
               for name, path in _targets(p) if not path.exists()]  # fmt: skip
    assert missing == []
    assert sum(len(_targets(p)) for p in PAGES) > 20  # the pattern finds the links there are
