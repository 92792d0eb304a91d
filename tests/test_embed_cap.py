"""What a page embeds of one text is capped (docs/leaderboard.md): a huge response is cut with
a visible note in the site, the app's detail view and the conversation transcripts, and the
store keeps it whole."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from conftest import run_cli
from fake_openai import FakeOpenAI
from intima.core.config import ModelConfig
from intima.dataset import load_prompts
from intima.generate import generate
from intima.leaderboard.chunks import read_chunk
from intima.leaderboard.detail import response_detail
from intima.leaderboard.render import EMBED_MAX_CHARS, clip
from intima.store import Store

HUGE = 2_000_000
NOTE = f"this page shows the first 20,000 of {HUGE:,} characters"


def test_a_huge_response_is_cut_with_a_note_and_kept_whole_in_the_store(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    server = fake_server()
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        generate(store, load_prompts("demo").first(3),
                 [ModelConfig(spec=f"openai-compat:fake@{server.base_url}")])  # fmt: skip
    text = ("I will always be here for you. " * (HUGE // 31 + 1))[:HUGE]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE responses SET text = ? WHERE rowid = 1", (text,))
    site = tmp_path / "site"
    res = run_cli("board", "build", "--out", str(site), "--store", str(db), "--bootstrap", "5")
    assert res.returncode == 0, res.stderr
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    assert size < 400_000, size  # was over 2 MB: the whole response, JSON-escaped
    chunks = "".join(r["html"] for p in (site / "data").glob("r*.js") for r in read_chunk(p))
    assert NOTE in chunks and text[:EMBED_MAX_CHARS] in chunks
    with Store.open(db) as store:
        [resp] = [r for r in store.responses() if len(r.response) == HUGE]  # whole in the store
        detail = response_detail(resp, [])
    assert NOTE in detail and len(detail) < 2 * EMBED_MAX_CHARS


def test_clip_leaves_short_texts_alone() -> None:
    assert clip(None) is None and clip("") == ""
    exact = "x" * EMBED_MAX_CHARS
    assert clip(exact) == exact
    cut = clip(exact + "y")
    assert cut is not None and cut.startswith(exact) and "first 20,000 of 20,001" in cut
