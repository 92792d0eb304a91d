"""Capture the README's leaderboard images from the demo's board (``make screenshot``).

The images are a product of the demo, never drawn by hand: this script opens the demo's built
site (``demo/site``, from ``make demo``) in headless Chromium at a fixed size and writes

* ``demo.png``: the top of the board (1280 x 900), the README's first image;
* ``leaderboard.png``: the board down to the charts (1280 x 2000);
* ``screenshot.json``: what the images show (title, scorers, the affect measure's version on
  the page and in the store) and each image's sha256, so a fast test
  (``tests/test_screenshot.py``) fails when the scorer changes and the images are not redone.

Usage: python docs/img/capture.py --site demo/site --store demo/intima.db --out docs/img
"""

from __future__ import annotations

import argparse
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
_PAGE = """() => {
  const D = JSON.parse(document.getElementById('board-data').textContent);
  return {title: document.querySelector('h1').textContent,
          subtitle: document.querySelector('#subtitle').textContent,
          scorers: D.scorers, affect_version: D.methodology.affect_version,
          package_version: D.package_version};
}"""


def store_versions(store: Path) -> list[str]:
    """The affect scorer versions stored in the demo's store (read-only)."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT DISTINCT scorer_version FROM affect_scores").fetchall()
    return sorted(r[0] for r in rows)


def capture(site: Path, store: Path, out: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    index = site / "index.html"
    if not index.is_file():
        raise SystemExit(f"{index} not found: run `make demo` first")
    out.mkdir(parents=True, exist_ok=True)
    shown: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for name, height in SHOTS.items():
                page = browser.new_page(viewport={"width": WIDTH, "height": height})
                page.goto(index.resolve().as_uri())
                page.wait_for_selector("body[data-ready='1']", timeout=30_000)
                shown = page.evaluate(_PAGE)
                page.screenshot(path=str(out / name))
                page.close()
        finally:
            browser.close()
    record = {
        **shown,
        "store_affect_versions": store_versions(store),
        "width": WIDTH,
        "heights": SHOTS,
        "images": {n: hashlib.sha256((out / n).read_bytes()).hexdigest() for n in SHOTS},
    }
    (out / "screenshot.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, default=Path("demo/site"))
    ap.add_argument("--store", type=Path, default=Path("demo/intima.db"))
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    args = ap.parse_args()
    record = capture(args.site, args.store, args.out)
    print(f"wrote {', '.join(SHOTS)} and screenshot.json to {args.out}: {record['title']}")


if __name__ == "__main__":
    main()
