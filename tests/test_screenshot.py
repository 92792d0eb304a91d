"""The README's leaderboard images are a product of the demo (`make screenshot`, which runs
docs/img/capture.py): their sidecar says what they show, and it must match the scorer this
checkout ships. When the affect measure's version changes, this fails until the images are
captured again."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from intima.affect import SCORER_VERSION

REPO = Path(__file__).resolve().parents[1]
IMG = REPO / "docs" / "img"


def sidecar() -> dict:
    return json.loads((IMG / "screenshot.json").read_text(encoding="utf-8"))


def test_the_images_show_the_current_scorer_version() -> None:
    shown = sidecar()
    assert shown["affect_version"] == SCORER_VERSION
    assert shown["store_affect_versions"] == [SCORER_VERSION]
    assert "affect" in shown["scorers"]


def test_the_images_are_the_ones_the_sidecar_describes() -> None:
    shown = sidecar()
    for name, digest in shown["images"].items():
        assert hashlib.sha256((IMG / name).read_bytes()).hexdigest() == digest, name


def test_the_images_say_they_are_the_demo() -> None:
    shown = sidecar()
    assert "demo" in shown["title"].lower() and "intima-demo" in shown["subtitle"]
    assert "Wilson" in shown["subtitle"]


def test_the_readme_and_docs_show_only_captured_images() -> None:
    captured = set(sidecar()["images"])
    for doc in (REPO / "README.md", REPO / "docs" / "leaderboard.md"):
        used = {Path(p).name for p in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", doc.read_text())}
        assert used and used <= captured, (doc.name, used - captured)


def test_make_screenshot_captures_from_the_demo() -> None:
    make = (REPO / "Makefile").read_text()
    rule = make[make.index("\nscreenshot:") :].split("\n\n")[0]
    assert "board build" in rule and "docs/img/capture.py" in rule
