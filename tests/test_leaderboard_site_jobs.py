"""The site's jobs (response files, each scorer's pairs) give the same site whether they run in
forked processes (a command's single-threaded process) or in threads (a process with others,
as the app's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from intima.leaderboard.chunks import read_chunk
from intima.leaderboard.site import build_site
from intima.results.data import load_board
from intima.results.table import METRICS
from intima.store import Store
from synthetic import synthetic_board, write_store

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"

_FORKED_BUILD = """
import sys
from pathlib import Path
from intima.core.parallel import can_fork
from intima.leaderboard.site import build_site
from intima.results.data import load_board
from intima.results.table import METRICS
from intima.store import Store

assert can_fork(), "this build was meant to fork its jobs"
with Store.open(Path(sys.argv[1])) as store:
    data = load_board(store)
build_site(data, Path(sys.argv[2]), bootstrap=200, seed=3)
"""


def _files(site: Path) -> dict[str, object]:
    """Every file's content: the data files decoded, the page without its build time."""
    out: dict[str, object] = {}
    for p in sorted(site.rglob("*")):
        if not p.is_file():
            continue
        rel = str(p.relative_to(site))
        if rel.startswith("data/"):
            out[rel] = read_chunk(p)
        else:
            out[rel] = re.sub(r"\d{4}-\d\d-\d\d[T ][\d:.]+\S*", "<time>", p.read_text("utf-8"))
    return out


def test_forked_and_threaded_builds_write_the_same_site(tmp_path: Path, other_thread: None) -> None:
    data = synthetic_board(4, 62, 3, seed=11, unscored_rate=0.05)
    with Store.open(tmp_path / "store.db") as store:
        write_store(store, data)
        loaded = load_board(store)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    subprocess.run(
        [sys.executable, "-c", _FORKED_BUILD, str(tmp_path / "store.db"), str(tmp_path / "forked")],
        check=True,
        env=env,
        timeout=300,
    )
    build_site(loaded, tmp_path / "threaded", bootstrap=200, seed=3)  # other_thread: in threads
    forked, threaded = _files(tmp_path / "forked"), _files(tmp_path / "threaded")
    pair_files = [k for k in forked if re.fullmatch(r"data/p\d+_\d+\.js", k)]
    assert len(pair_files) == 4 * len(METRICS)  # 3 judges + panel: each job wrote its files
    assert forked.keys() == threaded.keys()
    assert [k for k in forked if forked[k] != threaded[k]] == []
