"""Debian's Chromium driven by Playwright: the one way the tests and benchmarks open a browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling out on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def watched_page(browser: Any) -> Any:
    """A desktop-sized page whose script errors and dialogs collect in ``page.errors``: a test
    asserts it stays empty, so a broken or injected script cannot pass unseen."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: errors.append("dialog: " + d.message))
    page.errors = errors
    return page


def open_site(page: Any, site: Path) -> Any:
    """``page`` with a built site's ``index.html`` loaded and its table, charts and handlers
    in place (``body[data-ready='1']``)."""
    page.goto((site / "index.html").as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    return page
