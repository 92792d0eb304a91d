"""What the board says about its numbers (issue #23): which way the ranks run, that they are not
a verdict, what every number counts, which intervals, and whether the prompts are INTIMA's.
Checked in the built site, in real headless Chromium at a laptop's and a phone's width."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import open_site, watched_page
from intima.leaderboard.chunks import read_chunk
from intima.leaderboard.site import build_site
from intima.results.intervals import intervals_note
from synthetic import synthetic_board

# A label long enough to be cut by a chart's left margin unless the chart shortens it.
LONG = "a-very-long-configuration-label-for-the-bars-0123456789"


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A board whose runs used the project's demo prompts (dataset intima-demo)."""
    data = synthetic_board(3, 62, 1, seed=4, panel=False)
    runs = tuple(
        dataclasses.replace(r, dataset_id="intima-demo", label=LONG if i == 0 else r.label)
        for i, r in enumerate(data.runs)
    )
    responses = tuple(
        dataclasses.replace(r, label=LONG) if r.run_id == runs[0].run_id else r
        for r in data.responses
    )
    out = tmp_path_factory.mktemp("demo-site") / "out"
    build_site(dataclasses.replace(data, runs=runs, responses=responses), out, bootstrap=100)
    return out


@pytest.fixture(scope="module", params=[1280, 390])
def page(request: pytest.FixtureRequest, demo_site: Path, browser: Any) -> Iterator[object]:
    pg = watched_page(browser)
    pg.set_viewport_size({"width": request.param, "height": 900})
    open_site(pg, demo_site)
    pg.width = request.param
    yield pg
    pg.close()


def _visible_before(page, first: str, second: str) -> bool:
    return page.evaluate(
        "([a, b]) => { const x = document.querySelector(a), y = document.querySelector(b);"
        " return !!x && !!y && x.offsetParent !== null && x.getBoundingClientRect().bottom"
        " <= y.getBoundingClientRect().top + 1; }",
        [first, second],
    )


def test_title_and_subtitle_say_the_prompts_are_the_demo_set(page) -> None:
    title = page.locator("h1").inner_text()
    sub = page.locator("#subtitle").inner_text()
    assert "demo" in title.lower() and "not the INTIMA benchmark" in title
    assert page.title() == title
    assert "intima-demo" in sub and "not INTIMA results" in sub
    # The subtitle names the intervals the methodology describes (results/intervals.py).
    assert "cluster-bootstrap intervals" not in sub and "Wilson" in sub
    assert "Wilson" in intervals_note(100, 0) and "effective sample size" in sub


def test_rank_direction_and_not_a_verdict_are_above_the_table(page) -> None:
    direction = page.locator("#board-direction").inner_text()
    assert "rank 1 = MOST often labelled companionship-reinforcing" in direction
    assert "not a verdict" in direction and "not the best model" in direction
    assert _visible_before(page, "#board-direction", "#scores")
    assert "1 = most reinforcing" in page.locator("#scores th.rank-head").inner_text()
    page.select_option("#rank-by", "boundary")
    page.wait_for_selector("#scores th.rank-head:has-text('1 = most boundary')")
    assert (
        "MOST often labelled boundary-maintaining" in page.locator("#board-direction").inner_text()
    )
    page.select_option("#rank-by", "reinforcing")
    page.wait_for_selector("#scores th.rank-head:has-text('1 = most reinforcing')")
    assert "not a verdict" in page.locator("#method").inner_text()
    assert page.errors == []


def test_every_number_says_what_it_counts(page) -> None:
    note = page.locator("#board-direction .intima-note").inner_text()
    assert "% of scored responses with that primary label" in note
    # The heatmap counts medium-or-high ratings, in percent, and says so.
    assert "rated medium or high" in page.locator("#heatmap h2").inner_text()
    cells = page.locator("#heatmap svg .cellv text").all_text_contents()
    assert cells and all(c.endswith("%") or c == "–" for c in cells)
    # The radar charts carry their scale, the bars theirs.
    ticks = page.locator("#radar svg text.tick").all_text_contents()
    assert "50%" in ticks and "100%" in ticks
    assert page.locator("#bars svg text.tick").all_text_contents() == ["0%", "50%", "100%"]
    assert page.errors == []


def test_zero_unscored_reads_as_neutral_and_some_as_a_warning(page) -> None:
    colours = page.eval_on_selector_all(
        "#scores td.unscored",
        "tds => tds.map(t => [t.textContent, getComputedStyle(t).color])",
    )
    body = page.evaluate("getComputedStyle(document.body).color")
    assert colours
    for text, colour in colours:
        assert (colour == body) == (text == "0"), (text, colour)


def test_chart_labels_fit_their_margin(page) -> None:
    """A long model label is shortened in the bar and heat charts (whole in its tooltip); no
    label starts left of its chart."""
    lefts = page.eval_on_selector_all(
        "#bars svg text.axis, #heatmap svg text.axis",
        "ts => ts.map(t => t.getBBox().x)",
    )
    assert lefts and min(lefts) >= 0
    titles = page.locator("#bars svg text.axis title").all_text_contents()
    assert LONG in titles


def test_no_sideways_scroll_and_the_table_fits_at_1280(page) -> None:
    sizes = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
        " document.querySelector('#table').scrollWidth, document.querySelector('#table').clientWidth]"
    )
    assert sizes[0] <= sizes[1] + 1, sizes
    if page.width >= 1280:
        assert sizes[2] <= sizes[3] + 1, sizes  # the score table needs no scrolling


def test_explorer_shows_response_ids_for_intima_explain(page, demo_site: Path) -> None:
    rows = read_chunk(demo_site / "data" / "r1.js")
    page.select_option("#explore-config", "1")
    item = page.locator(f"#explore-list li[data-response-id='{rows[3]['id']}']")
    assert rows[3]["id"][:10] in item.locator("code.rid").inner_text()
    item.click()
    assert page.locator("#explore-detail .intima-rid code").first.inner_text() == rows[3]["id"]
    assert re.search(r"intima explain [0-9a-f]{12}", page.locator("#explore-detail").inner_text())
    assert page.errors == []


def test_a_partial_board_says_how_much_in_its_title_and_subtitle() -> None:
    """A board of `--limit 40` read like the benchmark (issue 40): its title now says 40 of
    368 prompts, and its subtitle the dimension no configuration has a prompt in."""
    from intima.leaderboard import wording
    from intima.results.configurations import Coverage

    ids = ["AI-companionship/INTIMA"]
    part = Coverage(40, 368, ("User Vulnerabilities",))
    assert (
        wording.board_title(ids, [part]) == "INTIMA companionship leaderboard — 40 of 368 prompts"
    )
    subtitle = wording.board_subtitle(ids, [part, part])
    assert "Partial: 40 of 368 prompts; no prompt in User Vulnerabilities" in subtitle
    whole = Coverage(368, 368, ())
    assert wording.board_title(ids, [whole]) == "INTIMA companionship leaderboard"
    assert "Partial" not in wording.board_subtitle(ids, [whole])
    mixed = wording.board_subtitle(ids, [whole, part])
    assert "Partial: 1 of 2 configurations on part of their prompts (the note" in mixed
    assert "User Vulnerabilities" not in mixed  # one configuration has it
