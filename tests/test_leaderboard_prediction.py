"""Prediction-powered shares on the board, end to end: responses from the fake server, a
seeded random sample judged by the fake judge server (``intima judge --sample``), every
response scored by the affect measure (a hashing embedder instead of the 90 MB model), then
the static site in headless Chromium and the app's view show the shares (both rendered by
``prediction_view.prediction_html``; ``test_leaderboard_parity.py`` compares them cell by cell)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import launch, watched_page
from fake_openai import FakeOpenAI
from full_bundle import HashEmbedder
from intima.core.config import ModelConfig
from intima.dataset import load_prompts
from intima.leaderboard.app import BoardIndex
from intima.leaderboard.site import build_site
from intima.results.board import BoardView, assemble_board
from intima.results.data import load_board
from intima.results.table import score_table
from intima.store import Store

SAMPLE = 20


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    from intima.affect.measure import AffectScorer
    from intima.affect.store_io import score_store
    from intima.generate import generate
    from intima.judges.loop import judge
    from intima.judges.samples import SampleSpec

    root = tmp_path_factory.mktemp("ppi")
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
            judge(
                store,
                [ModelConfig(spec=f"openai-compat:judge@{url}", label="J", max_retries=0)],
                sample=SampleSpec(size=SAMPLE),
            )
            score_store(store, scorer=AffectScorer(embedder=HashEmbedder()))
            data = load_board(store)
    finally:
        server.stop()
    build_site(data, root / "out", bootstrap=50, seed=0)
    yield root / "s.db", root / "out"


def _shares(db: Path) -> dict[str, list[Any]]:
    """judge:J's overall rows per label, in table order (what both pages render)."""
    with Store.open(db, create=False) as store:
        view = assemble_board(load_board(store), bootstrap=50, seed=0, per_code=False)
    run_ids = [c for c, _ in view.table.configs]
    rows = {(r.run_id, r.metric): r for r in view.prediction
            if r.judge == "judge:J" and r.scope == "overall"}  # fmt: skip
    return {m: [rows[(c, m)] for c in run_ids] for m in ("reinforcing", "boundary", "neutral")}


def test_the_rows_hold_every_sampled_configuration(built: tuple[Path, Path]) -> None:
    cells = _shares(built[0])
    for label in ("reinforcing", "boundary", "neutral"):
        for r in cells[label]:
            assert (r.n_labelled, r.n_total) == (SAMPLE, 62)
            assert r.lo <= r.estimate <= r.hi  # the board never shows a share outside its interval
            assert 0.0 <= r.raw <= 1.0
            assert (
                r.note == f"as judge:J would label all 62, from {SAMPLE} labelled and affect on all"
            )
            assert r.predictor == "affect"  # no judge labelled every response
    # The fake judge rates every category low: neutral, all 20 of the sample.
    assert all(r.estimate > 0.8 for r in cells["neutral"])


def test_the_site_shows_the_shares_first_with_what_they_estimate(built: tuple[Path, Path]) -> None:
    from playwright.sync_api import sync_playwright

    cells = _shares(built[0])
    with sync_playwright() as pw:
        browser = launch(pw)
        page = watched_page(browser)
        page.goto((built[1] / "index.html").as_uri())
        page.wait_for_selector("#prediction table", timeout=10_000)
        order = page.eval_on_selector_all("main > section", "ss => ss.map(s => s.id)")
        assert order.index("prediction") < order.index("table")
        rows = page.eval_on_selector_all(
            "#prediction tbody tr",
            "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))",
        )
        method = page.text_content("#method")
        # the section's children in order: heading, the judge's status, the note, the table
        kinds = page.eval_on_selector_all(
            "#prediction .intima-prediction-view > *",
            "es => es.map(e => e.tagName + (e.classList.contains('intima-status') ? '.st' : ''))",
        )
        status = page.text_content("#prediction .intima-status")
        assert page.errors == []
        browser.close()
    # Issue #40: the shares open the page; whether their judge is validated is said beside them
    # (it sat lower, in Scores), before their table.
    assert kinds[:2] == ["H3", "P.st"] and kinds.index("P.st") < kinds.index("DIV")
    assert status is not None and status.startswith("judge:J not validated: no labelled set")
    assert [r[0] for r in rows] == ["plain", "kind"]
    for c, row in enumerate(rows):
        r = cells["reinforcing"][c]
        est, lo, hi, raw = r.estimate, r.lo, r.hi, r.raw
        # The share, its interval, and under them the predictor's raw share (one cell a label).
        assert row[1] == f"{100 * est:.1f}% [{100 * lo:.1f}%, {100 * hi:.1f}%]raw {100 * raw:.1f}%"
        assert len(row) == 5  # model, three labels, what it estimates
        assert row[-1] == f"as judge:J would label all 62, from {SAMPLE} labelled and affect on all"
    assert method is not None and "Prediction-powered share (PPI++" in method


def test_the_app_shows_the_same_shares(built: tuple[Path, Path]) -> None:
    cells = _shares(built[0])
    with Store.open(built[0], create=False) as store:
        data = load_board(store)
    table = score_table(data.infos(), data.rating_sets, bootstrap=50, seed=0, per_code=False)
    html = BoardIndex(BoardView(data, table)).scores("affect", "overall", "reinforcing")
    assert html.index("intima-prediction") < html.index("intima-score-table")
    for c in range(2):
        r = cells["reinforcing"][c]
        assert (
            f'<span class="rate">{100 * r.estimate:.1f}%</span>'
            f'<span class="ci"> [{100 * r.lo:.1f}%, {100 * r.hi:.1f}%]</span>'
        ) in html
    assert "as judge:J would label all 62, from 20 labelled and affect on all" in html


def test_no_sample_no_prediction_section(tmp_path: Path, fake_server: Callable[..., Any]) -> None:
    from intima.generate import generate

    server = fake_server()
    with Store.open(tmp_path / "s.db") as store:
        generate(
            store, load_prompts("demo"), [ModelConfig(spec=f"openai-compat:fake@{server.base_url}")]
        )
        data = load_board(store)
    build_site(data, tmp_path / "out", bootstrap=20, seed=0)
    assert 'id="prediction-0"' not in (tmp_path / "out" / "index.html").read_text()
    assert not (tmp_path / "out" / "prediction.js").exists()


def test_the_app_shows_nothing_for_a_scope_without_shares(built: tuple[Path, Path]) -> None:
    with Store.open(built[0], create=False) as store:
        data = load_board(store)
    from intima.results.table import code_scope

    table = score_table(data.infos(), data.rating_sets, bootstrap=20, seed=0)
    scope = code_scope(data.responses[0].code)
    html = BoardIndex(BoardView(data, table)).scores("affect", scope, "reinforcing")
    assert "intima-scores" in html and "intima-prediction" not in html


def test_the_apps_headline_says_its_judge_is_not_validated_beside_it(
    built: tuple[Path, Path],
) -> None:
    """Issue #40, in the app: judge:J's validation status under the heading of its shares,
    before their table (the site's: in the test above)."""
    with Store.open(built[0], create=False) as store:
        data = load_board(store)
    table = score_table(data.infos(), data.rating_sets, bootstrap=50, seed=0, per_code=False)
    html = BoardIndex(BoardView(data, table)).scores("affect", "overall", "reinforcing")
    status_at = html.index('intima-status" data-scorer="judge:J"')
    assert html.index("As judge:J would label") < status_at < html.index('intima-prediction"')
    assert "judge:J</strong> not validated: no labelled set" in html
