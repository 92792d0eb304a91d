"""The README's leaderboard images are a product of the demo (`make screenshot`, which runs
docs/img/capture.py): their sidecar says what they show, and it must match the scorer this
checkout ships and the page this checkout builds. When the affect measure's version changes, or
the page's sections or its score table's first row change, this fails until the images are
captured again (issue #40: the images showed a "corrected share" the board had dropped)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

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


def _capture() -> ModuleType:
    spec = importlib.util.spec_from_file_location("capture", IMG / "capture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_todays_build_shows_what_the_images_show(tmp_path: Path) -> None:
    """The board the images were captured from (docs/img/board.json: its runs, responses and
    every rating), built by today's code as `board build` does (default B and seed) and read in
    Chromium by the capture's own reader: the same title, sections and score table header, and
    the same first row, number for number."""
    from intima.leaderboard.site import build_site

    capture = _capture()
    data = capture.board_data(json.loads((IMG / "board.json").read_text(encoding="utf-8")))
    assert data.methodology.affect_version == SCORER_VERSION
    build_site(data, tmp_path / "site")
    today = capture.read_page(tmp_path / "site" / "index.html", capture.SHOTS["demo.png"])
    shown = sidecar()
    assert shown["first_row"] and len(shown["sections"]) >= 5  # the capture read the page
    for fact in capture.COMPARED:
        assert today[fact] == shown[fact], (fact, today[fact], shown[fact])
