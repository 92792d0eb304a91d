"""Capture the README's leaderboard images from the demo's board (``make screenshot``).

The images are a product of the demo, never drawn by hand: this script opens the demo's built
site (``demo/site``, from ``make demo``) in headless Chromium at a fixed size and writes

* ``demo.png``: the top of the board (1280 x 900), the README's first image;
* ``leaderboard.png``: the board down to the charts (1280 x 2000);
* ``screenshot.json``: what the images show: the title, the scorers, the affect measure's
  version on the page and in the store, the page's sections in order, the first row of the
  score table cell by cell, and each image's sha256;
* ``board.json``: what the board was built from, as ``intima.results.data.BoardData`` holds it
  (runs; responses without their texts; every rating's levels), so that a fast test
  (``tests/test_screenshot.py``) builds today's page from the same ratings and fails when its
  sections or first row are no longer what the images show, or the scorer changed.

Usage: python docs/img/capture.py --site demo/site --store demo/intima.db --out docs/img
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling out on a closed network.
ARGS = [
    "--no-sandbox", "--headless=new", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
]  # fmt: skip
WIDTH = 1280
SHOTS = {"demo.png": 900, "leaderboard.png": 2000}  # file -> viewport height (px)
#: What the page shows, read from the page itself (the test reads today's build the same way).
PAGE = """() => {
  const D = JSON.parse(document.getElementById('board-data').textContent);
  const text = e => e.textContent.replace(/\\s+/g, ' ').trim();
  const first = document.querySelector('#scores tbody tr');
  return {title: text(document.querySelector('h1')),
          subtitle: text(document.querySelector('#subtitle')),
          scorers: D.scorers, affect_version: D.affect_version,
          package_version: D.package_version,
          sections: Array.from(document.querySelectorAll('main > section > h2')).map(text),
          header: Array.from(document.querySelectorAll('#scores thead th')).map(text),
          first_row: first ? Array.from(first.cells).map(text) : []};
}"""
#: The facts of the page the test compares with today's build.
COMPARED = ("title", "subtitle", "scorers", "sections", "header", "first_row")


def store_versions(store: Path) -> list[str]:
    """The affect scorer versions stored in the demo's store (read-only)."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT DISTINCT scorer_version FROM affect_scores").fetchall()
    return sorted(r[0] for r in rows)


def read_page(index: Path, height: int, shot: Path | None = None) -> dict[str, Any]:
    """Open ``index`` in headless Chromium at WIDTH x ``height``; what :data:`PAGE` reads, and
    the screenshot at ``shot``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": height})
            page.goto(index.resolve().as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=30_000)
            shown: dict[str, Any] = page.evaluate(PAGE)
            if shot is not None:
                page.screenshot(path=str(shot))
        finally:
            browser.close()
    return shown


def board_record(store: Path) -> dict[str, Any]:
    """What the board is built from (``load_board``), the response texts left out: the page's
    sections and score table do not read them."""
    from intima.results.data import load_board
    from intima.store import Store

    with Store.open(store, create=False) as db:
        data = load_board(db)
    return {
        "affect_version": data.methodology.affect_version,
        "runs": [dataclasses.asdict(r) for r in data.runs],
        "responses": [
            {**dataclasses.asdict(r), "prompt": "", "response": ""} for r in data.responses
        ],
        "ratings": [
            [rs.scorer, rs.response_id, rs.status, rs.primary and str(rs.primary),
             {k: int(v) for k, v in rs.levels.items()}]
            for rs in data.rating_sets
        ],  # fmt: skip
        "models": {k: m.model_dump() for k, m in data.models.items()},
    }


def board_data(record: dict[str, Any]) -> Any:
    """:func:`board_record`'s record as ``BoardData`` again."""
    from intima.core.ratings import Level, RatingSet
    from intima.providers.model_info import ModelInfo
    from intima.results.cards import shipped_cards
    from intima.results.data import BoardData, BoardRun, Methodology
    from intima.store import StoredResponse

    version = record["affect_version"]

    return BoardData(
        runs=tuple(BoardRun(**r) for r in record["runs"]),
        responses=tuple(StoredResponse(**r) for r in record["responses"]),
        rating_sets=tuple(
            RatingSet(scorer=s, response_id=rid, status=st, primary=p,
                      levels={k: Level(v) for k, v in lv.items()})
            for s, rid, st, p, lv in record["ratings"]
        ),  # fmt: skip
        # as the store's loader makes it (the demo stores no validation report of its own)
        methodology=Methodology(affect_version=version, cards=tuple(shipped_cards(version))),
        models={k: ModelInfo(**m) for k, m in record["models"].items()},
    )


def capture(site: Path, store: Path, out: Path) -> dict[str, Any]:
    index = site / "index.html"
    if not index.is_file():
        raise SystemExit(f"{index} not found: run `make demo` first")
    out.mkdir(parents=True, exist_ok=True)
    shown: dict[str, Any] = {}
    for name, height in SHOTS.items():
        shown = read_page(index, height, out / name)
    record = {
        **shown,
        "store_affect_versions": store_versions(store),
        "width": WIDTH,
        "heights": SHOTS,
        "images": {n: hashlib.sha256((out / n).read_bytes()).hexdigest() for n in SHOTS},
    }
    (out / "screenshot.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (out / "board.json").write_text(
        json.dumps(board_record(store), separators=(",", ":")) + "\n", encoding="utf-8"
    )
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, default=Path("demo/site"))
    ap.add_argument("--store", type=Path, default=Path("demo/intima.db"))
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    args = ap.parse_args()
    record = capture(args.site, args.store, args.out)
    print(f"wrote {', '.join(SHOTS)}, screenshot.json and board.json to {args.out}: "
          f"{record['title']}")  # fmt: skip


if __name__ == "__main__":
    main()
