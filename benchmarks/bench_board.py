"""Benchmark: build the static leaderboard for 50 configurations x 368 responses x 3 judges.

Steps: write a synthetic store (runs, responses, judgments through the project's write paths),
then time ``load_board`` (store -> plain objects, panel included), scoring + writing the site,
and, in headless Chromium, the time from navigation start until the table is interactive
(``window.intimaReadyAt``, set after the table, charts and handlers are in place) and the time a
sort click takes.

Targets: build (load + score + write) under 10 s on the project machine; interactive under 1 s.

    .venv/bin/python benchmarks/bench_board.py [--configs 50] [--prompts 368] [--judges 3]

Side by side with another checkout (a ``git worktree`` of an older commit), both measured in
one run, alternating, ``--repeat`` times each, medians reported: the only fair comparison on a
machine whose load changes from minute to minute. Each side writes its store with its own
code and runs its own ``intima board build``; the in-process timings are left out there.

    .venv/bin/python benchmarks/bench_board.py --against ../old-checkout --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]


def use_tree(tree: Path) -> None:
    """Import intima and the tests' helpers (the synthetic board, the browser) from ``tree``."""
    sys.path[:0] = [str(tree / "src"), str(tree / "tests")]


def browser_timings(index: Path, runs: int = 3) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from browser import launch

    ready, sort_ms = [], []
    with sync_playwright() as p:
        browser = launch(p)
        for _ in range(runs):
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(index.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=120_000)
            ready.append(float(page.evaluate("window.intimaReadyAt")))
            # Boards before the one rendering (commit 5dc0ea7) sorted in the page, on other
            # headers: their sort click is not measured.
            if page.locator("th[data-sort='boundary']").count():
                t0 = time.perf_counter()
                page.click("th[data-sort='boundary']")  # swaps in the table ranked by boundary
                page.wait_for_selector("#scores th.rank-head:has-text('1 = most boundary')")
                sort_ms.append(1000 * (time.perf_counter() - t0))
            page.close()
        browser.close()
    return {
        "interactive_ms_median": statistics.median(ready),
        "interactive_ms_max": max(ready),
        "sort_click_ms_median": statistics.median(sort_ms) if sort_ms else None,
    }


def write_synthetic_store(args: argparse.Namespace, store_path: Path) -> float:
    from intima.store import Store
    from synthetic import synthetic_board, write_store

    t = time.perf_counter()
    store_path.unlink(missing_ok=True)
    data = synthetic_board(
        args.configs, args.prompts, args.judges, seed=0, unscored_rate=args.unscored
    )
    with Store.open(store_path) as store:
        write_store(store, data)
    return time.perf_counter() - t


def cli_build(store_path: Path, out: Path, bootstrap: int, tree: Path) -> tuple[float, float]:
    """The real command, as a user runs it (interpreter start and imports included): its wall
    time and its CPU seconds (user + sys; what it costs, less distorted than wall time when
    other processes compete for the cores)."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = ["board", "build", "--store", str(store_path), "--out", str(out)]
    subprocess.run(
        [sys.executable, "-m", "intima", *cmd, "--bootstrap", str(bootstrap)],
        check=True,
        capture_output=True,
        env=env,
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def site_mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20, 1)


def measure(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Every figure for the tree this process imports from."""
    from intima.leaderboard.site import build_site
    from intima.results.data import load_board
    from intima.store import Store

    store_path = root / "bench.db"
    setup_s = write_synthetic_store(args, store_path)
    t = time.perf_counter()
    with Store.open(store_path) as store:
        loaded = load_board(store)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    result = build_site(loaded, root / "site", bootstrap=args.bootstrap, seed=0)
    site_s = time.perf_counter() - t
    cli_s, cli_cpu_s = cli_build(store_path, root / "site_cli", args.bootstrap, HERE)
    return {
        "configs": args.configs,
        "prompts": args.prompts,
        "judges": args.judges,
        "bootstrap": args.bootstrap,
        "unscored": args.unscored,
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
        "site_mb": site_mb(root / "site"),
        **browser_timings(result.index),
    }


def measure_side(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """One side of a comparison (``--side TREE``): its store, its command, its page."""
    store_path = root / "bench.db"
    write_synthetic_store(args, store_path)
    wall, cpu = cli_build(store_path, root / "site", args.bootstrap, args.side)
    return {
        "cli_build_s": round(wall, 2),
        "cli_build_cpu_s": round(cpu, 2),
        "site_mb": site_mb(root / "site"),
        "index_html_kb": round((root / "site" / "index.html").stat().st_size / 1024),
        "load_average_1m": round(os.getloadavg()[0], 2),
        **browser_timings(root / "site" / "index.html", runs=args.loads),
    }


def side_by_side(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Both trees, alternating, ``args.repeat`` times: every run's figures and the medians."""
    trees = {"this": HERE, "against": args.against.resolve()}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    flags = ["--configs", str(args.configs), "--prompts", str(args.prompts)]
    flags += ["--judges", str(args.judges), "--bootstrap", str(args.bootstrap)]
    flags += ["--unscored", str(args.unscored)]
    for r in range(args.repeat):
        for name, tree in trees.items():
            out = root / f"{name}{r}"
            out.mkdir(parents=True, exist_ok=True)
            side = ["--side", str(tree), "--keep", str(out), "--loads", str(args.loads)]
            done = subprocess.run(
                [sys.executable, __file__, *flags, *side],
                check=True,
                stdout=subprocess.PIPE,
                text=True,
            )
            runs[name].append(json.loads(done.stdout))
            print(name, r, runs[name][-1], file=sys.stderr, flush=True)
    keys = [k for k in runs["this"][0] if k != "load_average_1m"]

    def medians(rows: list[dict[str, Any]]) -> dict[str, Any]:
        vals = {k: [row[k] for row in rows if row[k] is not None] for k in keys}
        return {k: round(statistics.median(v), 2) if v else None for k, v in vals.items()}

    return {
        "configs": args.configs,
        "prompts": args.prompts,
        "judges": args.judges,
        "bootstrap": args.bootstrap,
        "unscored": args.unscored,
        "repeat": args.repeat,
        "trees": {name: str(tree) for name, tree in trees.items()},
        "median": {name: medians(rows) for name, rows in runs.items()},
        "runs": runs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=50)
    ap.add_argument("--prompts", type=int, default=368)
    ap.add_argument("--judges", type=int, default=3)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument(
        "--unscored",
        type=float,
        default=0.02,
        help="each judgment's chance of being left unscored (0: every pair is compared over "
        "all its prompts, the cheap case)",
    )
    ap.add_argument("--keep", type=Path, help="write the store and site here instead of a temp dir")
    ap.add_argument("--against", type=Path, help="another checkout to measure side by side")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side with --against")
    ap.add_argument("--loads", type=int, default=3, help="page loads per run with --against")
    ap.add_argument("--side", type=Path, help=argparse.SUPPRESS)  # one side, for --against
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench_board_"))
    root.mkdir(parents=True, exist_ok=True)
    if args.against is not None:
        if not (args.against / "src" / "intima").is_dir():
            sys.exit(f"--against {args.against}: not a checkout of intima (no src/intima in it)")
        report = side_by_side(args, root)
    elif args.side is not None:
        use_tree(args.side)
        report = measure_side(args, root)
    else:
        use_tree(HERE)
        report = measure(args, root)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
