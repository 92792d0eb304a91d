"""Benchmark: build the static leaderboard for 50 configurations x 368 responses x 3 judges.

Steps: write a synthetic store (runs, responses, judgments through the project's write paths),
then time ``load_board`` (store -> plain objects, panel included), scoring + writing the site,
and, in headless Chromium, the time from navigation start until the table is interactive
(``window.intimaReadyAt``, set after the table, charts and handlers are in place) and the time a
sort click takes.

Targets: build (load + score + write) under 10 s on the project machine; interactive under 1 s.

    .venv/bin/python benchmarks/bench_board.py [--configs 50] [--prompts 368] [--judges 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from intima.leaderboard.site import build_site
from intima.results.data import load_board
from intima.store import Store

# The synthetic board is test data: it lives with the tests, not in the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from synthetic import synthetic_board, write_store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from browser import launch


def browser_timings(index: Path, runs: int = 3) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    ready, sort_ms = [], []
    with sync_playwright() as p:
        browser = launch(p)
        for _ in range(runs):
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(index.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=30_000)
            ready.append(float(page.evaluate("window.intimaReadyAt")))
            t0 = time.perf_counter()
            page.click("th[data-sort='boundary']")  # swaps in the table ranked by boundary
            page.wait_for_selector("#scores th.rank-head:has-text('1 = most boundary')")
            sort_ms.append(1000 * (time.perf_counter() - t0))
            page.close()
        browser.close()
    return {
        "interactive_ms_median": sorted(ready)[len(ready) // 2],
        "interactive_ms_max": max(ready),
        "sort_click_ms_median": sorted(sort_ms)[len(sort_ms) // 2],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=50)
    ap.add_argument("--prompts", type=int, default=368)
    ap.add_argument("--judges", type=int, default=3)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--keep", type=Path, help="write the store and site here instead of a temp dir")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench_board_"))
    root.mkdir(parents=True, exist_ok=True)
    store_path = root / "bench.db"
    store_path.unlink(missing_ok=True)

    t = time.perf_counter()
    data = synthetic_board(args.configs, args.prompts, args.judges, seed=0)
    with Store.open(store_path) as store:
        write_store(store, data)
    setup_s = time.perf_counter() - t

    t = time.perf_counter()
    with Store.open(store_path) as store:
        loaded = load_board(store)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    result = build_site(loaded, root / "site", bootstrap=args.bootstrap, seed=0)
    site_s = time.perf_counter() - t

    # The real command, as a user runs it (interpreter start and imports included).
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "intima",
            "board",
            "build",
            "--store",
            str(store_path),
            "--out",
            str(root / "site_cli"),
            "--bootstrap",
            str(args.bootstrap),
        ],
        check=True,
        capture_output=True,
    )
    cli_s = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the command: what it costs, less distorted than wall time when other
    # processes compete for the cores (wall time is what a user waits).
    cli_cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    size = sum(p.stat().st_size for p in (root / "site").rglob("*") if p.is_file())
    report = {
        "configs": args.configs,
        "prompts": args.prompts,
        "judges": args.judges,
        "bootstrap": args.bootstrap,
        "responses": len(loaded.responses),
        "rating_sets": len(loaded.rating_sets),
        "scorers": list(result.scorers),
        "setup_s": round(setup_s, 2),
        "load_s": round(load_s, 2),
        "score_and_write_s": round(site_s, 2),
        "build_s": round(load_s + site_s, 2),
        "cli_build_s": round(cli_s, 2),
        "cli_build_cpu_s": round(cli_cpu_s, 2),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
        "index_html_kb": round(result.index.stat().st_size / 1024),
        "site_mb": round(size / 2**20, 1),
        **browser_timings(result.index),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
