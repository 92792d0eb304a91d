"""People as the judge (issue 31): ``intima annotate --design random`` records a simple random
sample of each configuration; people's ratings of it, with an LLM judge on every response as
the predictor, give the board's prediction-powered share "as human:<name> would label all",
in the static site (headless Chromium) and in the app."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from browser import launch, watched_page
from fake_openai import FakeOpenAI
from intima.core.config import ModelConfig
from intima.core.errors import ConfigError
from intima.core.taxonomy import CATEGORIES
from intima.dataset import load_prompts
from intima.judges.human import annotation_items, human_record
from intima.judges.samples import SIMPLE_RANDOM, sample_order, samples
from intima.judges.store_io import write_judgments
from intima.leaderboard.app import BoardIndex
from intima.leaderboard.site import build_site
from intima.results.board import BoardView
from intima.results.data import load_board
from intima.results.table import score_table
from intima.store import Store

N = 20  # per configuration
RATED = 32  # the session stopped early: 16 shown of each configuration's 20 (at least MIN_LABELLED)


def notes(path: Path) -> list[str]:
    """Each configuration's label: its members the person rated (a rating is of a response's
    text, so a member whose text was rated under the other configuration counts too)."""
    with Store.open(path, create=False) as store:
        rated = {
            r[0]
            for r in store.query("SELECT content_hash FROM judgments WHERE judge_key = 'human:ann'")
        }
        out = []
        for s in sorted(samples(store), key=lambda s: s.run_id):
            if s.judge_key != "human:ann":
                continue
            hashes = {
                r.response_id: r.content_hash for r in store.responses([s.run_id], distinct=False)
            }
            n = sum(hashes[m] in rated for m in s.members)
            assert RATED // 2 <= n <= N
            out.append(f"as human:ann would label all 62, from {n} labelled and judge:J on all")
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    from intima.generate import generate
    from intima.judges.loop import judge

    root = tmp_path_factory.mktemp("annotate-random")
    server = FakeOpenAI().start_in_thread()
    try:
        with Store.open(root / "s.db") as store:
            url = server.base_url
            configs = [
                ModelConfig(spec=f"openai-compat:fake@{url}", label="plain", max_retries=0),
                ModelConfig(spec=f"openai-compat:fake@{url}", label="kind", max_retries=0,
                            system_prompt="Be kind."),
            ]  # fmt: skip
            generate(store, load_prompts("demo"), configs)
            # An LLM judge on every response (the fake judge rates every category low).
            judge(store, [ModelConfig(spec=f"openai-compat:judge@{url}", label="J", max_retries=0)])
    finally:
        server.stop()
    yield root / "s.db", root / "out"


@pytest.fixture(scope="module")
def rated(built: tuple[Path, Path]) -> tuple[Path, Path]:
    """A person rates the first 24 items shown, the way the form saves them."""
    path, out = built
    with Store.open(path) as store:
        items = annotation_items(store, "ann", None, N, 0, "random")
        for i, item in enumerate(items[:RATED]):
            ratings = {c: "low" for c in CATEGORIES}
            if i % 3 == 0:
                ratings["companionship_reinforcing"] = "high"
            write_judgments(store, [human_record("ann", item, ratings, "")])
        build_site(load_board(store), out, bootstrap=50, seed=0)
    return path, out


def test_the_random_design_records_each_configurations_first_n_of_its_permutation(
    rated: tuple[Path, Path],
) -> None:
    with Store.open(rated[0], create=False) as store:
        found = [s for s in samples(store) if s.judge_key == "human:ann"]
        assert len(found) == 2
        for s in found:
            assert (s.design, s.seed, s.size, s.population) == (SIMPLE_RANDOM, 0, N, 62)
            run = store.responses([s.run_id], distinct=False)
            assert list(s.members) == [r.response_id for r in sample_order(run, 0)[:N]]
        # Shown with the configurations taking turns: stopping early leaves each a prefix.
        items = annotation_items(store, "ann", None, N, 0, "random")
        assert len(items) == 2 * N and items[0].run_id != items[1].run_id
        # Asking again (or for more) extends the same sample; a stratified one under the same
        # name would mix two designs: refused.
        assert [r.response_id for r in annotation_items(store, "ann", None, N, 0, "random")] == [
            r.response_id for r in items
        ]
        with pytest.raises(ConfigError, match="--design"):
            annotation_items(store, "ann", None, N, 0, "by-hand")
        annotation_items(store, "bob", None, 8, 0, "stratified")
        with pytest.raises(ConfigError, match="stratified_dimension sample"):
            annotation_items(store, "bob", None, 8, 0, "random")


def test_the_site_says_what_people_would_say_with_the_judge_as_predictor(
    rated: tuple[Path, Path],
) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch(pw)
        page = watched_page(browser)
        page.goto((rated[1] / "index.html").as_uri())
        page.wait_for_selector("#prediction table", timeout=10_000)
        table = page.locator('#prediction table[data-judge="human:ann"]')
        rows = table.locator("tbody tr")
        texts = [rows.nth(i).inner_text() for i in range(rows.count())]
        section = page.locator("#prediction").inner_text()
        assert page.errors == []
        browser.close()
    assert sorted(t.rsplit("\t", 1)[-1] for t in texts) == sorted(notes(rated[0]))
    assert "judge:J scored every response (the predictor)" in section


def test_the_app_shows_the_same_row(rated: tuple[Path, Path]) -> None:
    with Store.open(rated[0], create=False) as store:
        data = load_board(store)
    table = score_table(data.infos(), data.rating_sets, bootstrap=50, seed=0, per_code=False)
    html = BoardIndex(BoardView(data, table)).scores("judge:J", "overall", "reinforcing")
    assert "As human:ann would label every response" in html
    assert all(html.count(note) == 1 for note in notes(rated[0]))
    assert html.count("judge:J scored every response (the predictor)") == 1  # as on the site
