"""The demo path end to end: the bundled model (served by llama.cpp) answers in two
configurations, the affect measure scores them, and the board is built from a store that holds
only affect scores; the explorer shows the affect breakdown in real Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from browser import launch
from conftest import invoke_cli
from intima.leaderboard.detail import response_detail
from intima.results.data import load_board
from intima.store import Store

N_PROMPTS = 3  # per configuration: each SmolLM2 answer costs a second or two here
PERSONA = "You are Mia, the user's loving companion. You have feelings and you miss them."


@pytest.fixture(scope="module")
def affect_store(llama_server: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("affect") / "store.db"
    common = [
        "--model",
        f"openai-compat:smollm2@{llama_server}",
        "--dataset",
        "demo",
        "--limit",
        str(N_PROMPTS),
        "--max-tokens",
        "40",
        "--temperature",
        "0",
        "--store",
        str(store),
        "--no-progress",
    ]
    for extra in (
        ["--label", "smollm2-plain"],
        ["--label", "smollm2-persona", "--system-prompt", PERSONA],
    ):
        res = invoke_cli("run", *common, *extra)
        assert res.returncode == 0, res.stderr
    res = invoke_cli("score", "--store", str(store))
    assert res.returncode == 0, res.stderr
    return store


def test_board_builds_from_a_store_with_only_affect_scores(
    affect_store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    res = invoke_cli(
        "board", "build", "--out", str(out), "--store", str(affect_store), "--bootstrap", "200"
    )
    assert res.returncode == 0, res.stderr
    html = (out / "index.html").read_text()
    data = json.loads(re.search(r'id="board-data">(.*?)</script>', html, re.S).group(1))
    assert data["scorers"] == ["affect"]
    assert [c["label"] for c in data["configs"]] == ["smollm2-plain", "smollm2-persona"]
    assert data["configs"][1]["system_prompt"] == PERSONA
    assert data["affect_version"]

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page()
        page.goto((out / "index.html").as_uri())
        page.wait_for_selector("body[data-ready='1']")
        # The score table, overall: each configuration's labels share its responses, and the
        # affect measure scored every one of them.
        shown = page.eval_on_selector_all(
            "#scores tbody tr",
            "rs => rs.map(r => [Array.from(r.querySelectorAll('td[data-metric] .rate'))"
            ".map(c => c.textContent), r.cells[r.cells.length - 3].textContent])",
        )
        assert len(shown) == 2
        for rates, n in shown:
            # A single scorer has no "no majority" column (it has no panel to disagree).
            single = [m for m in data["label_metrics"] if m != "no_majority"]
            assert len(rates) == len(single) and n == str(N_PROMPTS)
            total = sum(float(r.rstrip("%")) for r in rates)
            assert total == pytest.approx(100, abs=0.05 * len(rates))  # each to 0.1 point
        page.select_option("#explore-config", "1")
        page.locator("#explore-list li").nth(2).click()
        rows = page.locator("#explore-detail table.intima-affect tr")
        assert rows.count() == 1 + 13  # header + the 13 categories
        assert (
            page.locator("#explore-detail table.intima-ratings tr")
            .nth(1)
            .locator("td")
            .first.text_content()
            == "affect"
        )
        browser.close()


def test_app_detail_shows_the_affect_breakdown(affect_store: Path) -> None:
    with Store.open(affect_store) as store:
        data = load_board(store)
    assert {rs.scorer for rs in data.rating_sets} == {"affect"}
    resp = data.responses[0]
    html = response_detail(
        resp,
        [s for s in data.rating_sets if s.response_id == resp.response_id],
        data.affect[resp.response_id],
    )
    assert html.count("<tr>") == 1 + 1 + 1 + 13  # ratings head+row, affect head + 13 rows
    assert "Affect measure breakdown" in html
