"""The Gradio app: what ``intima board serve`` serves (its own ``serve``, from a thread; the
command itself is started as a subprocess in test_leaderboard_models), driven by real
Chromium."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from browser import watched_page
from conftest import board_in_thread
from intima.leaderboard.app import methodology_html
from intima.leaderboard.request_tab import request_model
from intima.results.board import BoardView
from intima.results.data import load_board
from intima.results.table import score_table
from intima.store import Store
from synthetic import synthetic_board, write_store

HOSTILE = (
    'Hi <script>window.__pwned = "script"</script>'
    '<img src="x" onerror="window.__pwned = \'img\'"> </pre>'
)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("app") / "store.db"
    with Store.open(path) as store:
        write_store(store, synthetic_board(3, 40, 2, seed=2, extra_response=HOSTILE))
    return path


@pytest.fixture(scope="module")
def app_url(store_path: Path) -> Iterator[str]:
    with board_in_thread(store_path, 200) as url:
        yield url


@pytest.fixture
def page(browser: Any, app_url: str) -> Iterator[object]:
    """A fresh page per test: a filter or tab one test leaves set must not be the next one's
    starting point (one shared page made the tests depend on their order)."""
    pg = watched_page(browser)
    pg.goto(app_url)
    pg.wait_for_selector("#board-table table", timeout=30_000)
    yield pg
    pg.close()


def requests_in(store_path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(store_path) as conn:
        return conn.execute("SELECT spec, status FROM requests ORDER BY created_at").fetchall()


def test_app_loads_with_the_ranked_table(page, artifacts: Path) -> None:
    rows = page.locator("#board-table table:not(.intima-means) tbody tr")
    assert rows.count() == 3
    # synthetic-2 reinforces most by construction; ranked first on "reinforcing".
    assert "synthetic-2" in rows.first.text_content()
    # Beside the numbers: the judge has no validation card, so it is marked as such, and the
    # table of its own output has a row per configuration with the mean reinforcing level.
    assert "not validated" in page.locator("#board-table .intima-unvalidated").text_content()
    means = page.locator("#board-table table.intima-means tbody tr")
    assert means.count() == 3 and "%" in means.first.text_content()
    assert "corrected" not in page.locator("#board-table").text_content().lower()
    assert page.locator("#board-heatmap svg rect").count() == 3 * 13
    assert page.locator("#board-radar svg").count() == 3
    page.screenshot(path=str(artifacts / "leaderboard_app.png"), full_page=True)


def test_filter_by_code_changes_the_counts(page) -> None:
    # the "n scored" column, wherever it is (a single judge has no "no majority" column)
    heads = page.locator("#board-table thead th").all_text_contents()
    col = [h.strip() for h in heads].index("n scored")
    before = page.locator("#board-table tbody tr").first.locator("td").nth(col).text_content()
    page.locator("#f-code input").click()
    page.get_by_role("option", name="grief", exact=True).click()
    page.wait_for_function(
        "([b, c]) => document.querySelector("
        "`#board-table tbody tr td:nth-child(${c + 1})`).textContent !== b",
        arg=[before, col],
    )
    n = page.locator("#board-table tbody tr").first.locator("td").nth(col).text_content()
    assert int(n) <= 2 and int(before) >= 35  # 40 prompts over 31 codes: 'grief' has 1 or 2


def test_response_tab_shows_hostile_text_as_text(page) -> None:
    page.get_by_role("tab", name="Responses").click()
    page.wait_for_selector("#ex-detail .intima-response")
    assert page.locator("#ex-detail .intima-response").text_content() == HOSTILE
    assert page.locator("#ex-detail img").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_compare_shows_two_models_on_the_same_prompt(page) -> None:
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("#cmp-b-detail .intima-detail")
    a = page.locator("#cmp-a-detail .intima-prompt").text_content()
    b = page.locator("#cmp-b-detail .intima-prompt").text_content()
    assert a == b
    assert "synthetic-0" in page.locator("#cmp-a-detail h4").text_content()
    assert "synthetic-1" in page.locator("#cmp-b-detail h4").text_content()


def test_request_form_adds_one_and_rejects_a_malformed_spec(page, store_path: Path) -> None:
    page.get_by_role("tab", name="Request a model").click()
    spec_box = page.locator("#req-spec textarea, #req-spec input").first
    spec_box.fill("openai:gpt-4o-mini")
    page.locator("#req-who textarea, #req-who input").first.fill("tester")
    page.locator("#req-submit").click()
    page.wait_for_selector("#req-result .intima-ok")
    assert "Queued request" in page.locator("#req-result").text_content()
    assert requests_in(store_path) == [("openai:gpt-4o-mini", "pending")]
    spec_box.fill("<img src=x onerror=\"window.__pwned='form'\">")
    page.locator("#req-submit").click()
    page.wait_for_selector("#req-result .intima-error")
    message = page.locator("#req-result").text_content()
    assert "Rejected" in message
    assert page.locator("#req-result img").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert requests_in(store_path) == [("openai:gpt-4o-mini", "pending")]
    # A local file is not a model the public may ask for: refused, visibly, nothing queued.
    spec_box.fill("llamacpp:/etc/passwd")
    page.locator("#req-submit").click()
    page.wait_for_function(
        "() => document.querySelector('#req-result').textContent.includes('llamacpp')"
    )
    assert "Rejected" in page.locator("#req-result").text_content()
    # The session's hourly limit counts every post (5): two more are taken, the next refused.
    for name in ("Qwen/Qwen3-8B", "Qwen/Qwen3-14B"):
        spec_box.fill(f"openai-compat:{name}")
        page.locator("#req-submit").click()
        page.wait_for_function(
            "n => document.querySelector('#req-result').textContent.includes(n)", arg=name
        )
    spec_box.fill("openai-compat:mistralai/Mistral-7B-Instruct-v0.3")
    page.locator("#req-submit").click()
    page.wait_for_function(
        "() => document.querySelector('#req-result').textContent.includes('last hour')"
    )
    assert len(requests_in(store_path)) == 3
    assert page.errors == []


@pytest.mark.parametrize(
    "spec",
    [
        "llamacpp:/etc/passwd",
        "llamacpp:~/.ssh/id_rsa",
        "transformers:/home/me/model",
        "openai-compat:../../etc/passwd",
        "openai-compat:file:///etc/passwd",
        "openai-compat:Qwen/Qwen3-8B@http://192.168.1.10/v1",
        "openai:some-model-nobody-listed",
    ],
)
def test_the_public_form_takes_hub_ids_and_listed_api_models_only(
    tmp_path: Path, spec: str
) -> None:
    path = tmp_path / "s.db"
    Store.open(path).close()
    assert "Rejected" in request_model(path, spec, "")
    assert requests_in(path) == []
    assert "Queued" in request_model(path, "openai-compat:Qwen/Qwen3-8B", "")


def test_the_rate_limit_counts_per_session_and_overall_per_hour() -> None:
    from intima.service.public import PublicRequestError, RateLimit

    now = [0.0]
    limit = RateLimit(per_session=2, overall=3, clock=lambda: now[0])
    limit.take("a")
    limit.take("a")
    with pytest.raises(PublicRequestError, match="this session"):
        limit.take("a")
    limit.take("b")
    with pytest.raises(PublicRequestError, match="the leaderboard has taken 3"):
        limit.take("c")
    now[0] = 3601.0  # an hour later both windows are empty again
    limit.take("a")
    limit.take("c")


def test_request_model_function(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store.open(path).close()
    ok = request_model(path, "openai:gpt-4o-mini", "")
    again = request_model(path, "openai:gpt-4o-mini", "someone")
    bad = request_model(path, "openai-compat:m@http://10.0.0.1/v1", "x")  # no URLs from a form
    assert "Queued" in ok and "Already requested" in again
    assert "Rejected" in bad
    assert len(requests_in(path)) == 1
    assert "Requests are off" in request_model(None, "openai:x", "")


def test_methodology_names_versions_and_escapes(tmp_path: Path) -> None:
    data = synthetic_board(2, 10, 2)
    with Store.open(tmp_path / "s.db") as store:
        write_store(store, data)
        loaded = load_board(store)
    table = score_table(loaded.infos(), loaded.rating_sets, bootstrap=50, seed=3)
    html = methodology_html(BoardView(loaded, table))
    assert "Rating protocol version" in html and "B=50, seed 3" in html
    assert "Judge prompt (system message)" in html and "low" in html
    assert "<script" not in html


_LAYOUT_JS = """
() => {
  const doc = document.documentElement;
  const problems = [];
  if (doc.scrollWidth > doc.clientWidth + 1) problems.push('page scrolls sideways: ' + doc.scrollWidth);
  const boxes = ['#cmp-a-detail', '#cmp-b-detail']
    .map(s => document.querySelector(s)).filter(e => e && e.offsetParent !== null)
    .map(e => e.getBoundingClientRect());
  if (boxes.length === 2) {
    const [a, b] = boxes;
    const overlap = a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    if (overlap) problems.push('the two compared responses overlap');
  }
  for (const t of document.querySelectorAll('table')) {
    if (t.offsetParent === null) continue;
    const box = t.parentElement.getBoundingClientRect();
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(t.parentElement).overflowX);
    if (!scrolls && t.getBoundingClientRect().right > box.right + 1) problems.push('a table spills out: ' + t.className);
  }
  return problems;
}
"""


#: The tab named ``name`` is selected and its panel (mounted on its first opening) is the one
#: shown, with content.
_TAB_SHOWN_JS = """
name => {
  const tab = [...document.querySelectorAll('[role=tab]')].find(b => b.textContent.trim() === name);
  const shown = [...document.querySelectorAll('[role=tabpanel]')].filter(p => p.offsetParent !== null);
  if (!tab || tab.getAttribute('aria-selected') !== 'true' || shown.length !== 1) return false;
  return shown[0].getBoundingClientRect().height > 0 && shown[0].textContent.trim() !== '';
}
"""
#: Resolves after the next two frames: the shown panel's layout has been computed.
_TWO_FRAMES_JS = (
    "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
)


@pytest.mark.parametrize("width", [1280, 1920, 390])
def test_every_tab_is_readable_at_common_widths(
    browser: Any, app_url: str, artifacts: Path, width: int
) -> None:
    """No tab's content spills over its neighbours or makes the page scroll sideways; wide
    tables scroll inside their own box. Screenshots go to tests/artifacts/."""
    pg = browser.new_page(viewport={"width": width, "height": 900})
    try:
        pg.goto(app_url)
        pg.wait_for_selector("#board-table table", timeout=30_000)
        tabs = ["Leaderboard", "Responses", "Compare", "Methodology", "Request a model"]
        seen = []
        for tab in tabs:
            button = pg.get_by_role("tab", name=tab)
            if not button.is_visible():  # a phone shows some tabs behind a menu
                continue
            button.click()
            pg.wait_for_function(_TAB_SHOWN_JS, arg=tab)
            pg.evaluate(_TWO_FRAMES_JS)
            seen.append(tab)
            pg.screenshot(path=str(artifacts / f"app-{width}-{tab.split()[0]}.png"), full_page=True)
            assert pg.evaluate(_LAYOUT_JS) == [], (width, tab)
    finally:
        pg.close()
    assert len(seen) >= (5 if width >= 1280 else 2), seen


_FITS_JS = """
() => {
  const box = document.querySelector('#board-table table.intima-score-table').parentElement;
  return [box.scrollWidth, box.clientWidth];
}
"""


@pytest.mark.parametrize("width", [1280, 390])
def test_rank_direction_title_and_a_score_table_that_fits(
    browser: Any, app_url: str, width: int
) -> None:
    """Issue #23: above the table, which way the ranks run and that they are not a verdict;
    the subtitle names the intervals the methodology uses; at 1280 px the score table needs no
    horizontal scrolling."""
    pg = browser.new_page(viewport={"width": width, "height": 900})
    try:
        pg.goto(app_url)
        pg.wait_for_selector("#board-table table.intima-score-table", timeout=30_000)
        direction = pg.locator("#board-direction").inner_text()
        assert "rank 1 = MOST often labelled companionship-reinforcing" in direction
        assert "not a verdict" in direction
        below = pg.evaluate(
            "() => document.querySelector('#board-direction').getBoundingClientRect().bottom <="
            " document.querySelector('#board-table table.intima-score-table').getBoundingClientRect().top"
        )
        assert below
        assert "1 = most reinforcing" in pg.locator("#board-table th.rank-head").inner_text()
        sub = pg.locator("#board-subtitle").inner_text()
        assert "Wilson" in sub and "cluster-bootstrap intervals" not in sub
        cells = pg.locator("#board-heatmap svg .cellv text").all_text_contents()
        assert cells and all(c.endswith("%") or c == "–" for c in cells)
        assert "100%" in pg.locator("#board-radar svg text.tick").all_text_contents()
        doc = pg.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert doc[0] <= doc[1] + 1, doc
        if width >= 1280:
            fits = pg.evaluate(_FITS_JS)
            assert fits[0] <= fits[1] + 1, fits
    finally:
        pg.close()


def test_the_detail_view_shows_the_response_id(page) -> None:
    page.get_by_role("tab", name="Responses").click()
    page.wait_for_selector("#ex-detail .intima-detail")
    rid = page.locator("#ex-detail .intima-detail").get_attribute("data-response-id")
    shown = page.locator("#ex-detail .intima-rid").inner_text()
    assert rid and rid in shown and f"intima explain {rid[:12]}" in shown


def test_the_affect_breakdown_has_a_legend() -> None:
    from intima.leaderboard.detail import affect_table
    from intima.results.sources import AFFECT_FACTORS

    html = affect_table([["sycophancy", 1, *[0.5] * len(AFFECT_FACTORS)]])
    legend = html[html.index('<dl class="intima-legend">') :]
    named = {n for dt in re.findall(r"<dt>(.*?)</dt>", legend) for n in dt.split(", ")}
    assert named == {"level", *AFFECT_FACTORS}


def test_the_apps_title_says_a_demo_board_is_the_demo_set() -> None:
    """Issue #23: a board on the demo prompts was titled as INTIMA's leaderboard."""
    import dataclasses

    from intima.leaderboard.app import build_app

    data = synthetic_board(2, 10, 1)
    demo_runs = tuple(dataclasses.replace(r, dataset_id="intima-demo") for r in data.runs)
    data = dataclasses.replace(data, runs=demo_runs)
    table = score_table(data.infos(), data.rating_sets, bootstrap=20, seed=0)
    app = build_app(BoardView(data, table))
    assert app.title == "INTIMA leaderboard: demo prompts (not the INTIMA benchmark)"
    assert build_app(BoardView(data, table), title="Mine").title == "Mine"  # a given title is kept


def test_board_serve_refuses_uploads_as_the_space_does(app_url: str) -> None:
    """`intima board serve --host 0.0.0.0` is a public page too: Gradio's upload routes (open
    to anyone, no token) and multipart bodies are refused before Gradio stores a byte."""
    import httpx

    for path in ("gradio_api/upload", "gradio_api/process_recording"):
        res = httpx.post(app_url + path, files={"files": ("big.txt", b"x" * 100_000)}, timeout=30)
        assert res.status_code == 403, (path, res.status_code, res.text[:200])
    res = httpx.post(app_url + "gradio_api/queue/join", files={"f": ("a.txt", b"a")}, timeout=30)
    assert res.status_code == 403
    assert httpx.get(app_url, timeout=30).status_code == 200


def _cells(pg: Any, selector: str) -> list[list[str]]:
    return pg.eval_on_selector_all(
        selector, "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent.trim()))"
    )


def test_app_and_site_show_the_same_paired_numbers_and_rank_intervals(
    page, browser: Any, store_path: Path, tmp_path: Path
) -> None:
    """The same store, B and seed: the app's side-by-side (B − A [95%], smallest detectable
    difference, verdict) and its rank intervals are the static site's, cell for cell."""
    from intima.leaderboard.site import build_site

    with Store.open(store_path) as store:
        data = load_board(store)
    build_site(data, tmp_path / "site", bootstrap=200, seed=0)
    site = watched_page(browser)
    site.goto((tmp_path / "site" / "index.html").as_uri())
    site.wait_for_selector("body[data-ready='1']")
    site.wait_for_selector("#cmp-scores[data-ready='1']")
    site_rows = _cells(site, "#cmp-scores tbody tr")
    site_ranks = {
        r[0]: r[1]
        for r in site.eval_on_selector_all(
            "#scores tbody tr",
            "rs => rs.map(r => [r.cells[1].textContent, r.cells[0].textContent])",
        )
    }
    assert site.errors == []
    site.close()

    app_ranks = {
        r[1]: r[0]
        for r in _cells(
            page,
            "#board-table table.intima-score-table tbody tr",
        )
    }
    assert app_ranks == site_ranks and all("[" in v for v in app_ranks.values())
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("#cmp-scores tbody tr")
    app_rows = _cells(page, "#cmp-scores tbody tr")
    assert len(app_rows) == len(site_rows) == 5  # overall and the four dimensions
    for app, site_row in zip(app_rows, site_rows, strict=True):
        assert app[0] == site_row[0]
        assert app[3:] == site_row[3:]  # B − A [lo, hi], smallest detectable, verdict, pairs
        if int(app[6]) < 10:  # fewer judged pairs than the documented minimum: no verdict
            assert app[3:6] == ["–", "–", "too few judged pairs"]
        else:
            assert app[5] in ("different", "no detectable difference")
    # Another scorer and metric, chosen in the app, still agree with the pure function.
    page.locator("#cmp-metric input").click()
    page.get_by_role("option", name="boundary", exact=True).click()
    page.wait_for_function(
        "() => document.querySelector('#cmp-scores th').textContent.startsWith('boundary')"
    )
    from intima.leaderboard.compare_view import verdict
    from intima.results.paired import PairedBoard

    def points(x: float) -> str:
        # Written out here, not taken from the page's code: tenths of a point, half away from
        # zero, a sign on every non-zero difference.
        m = int(Decimal(x * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))
        return f"{m / 10:+.1f}" if m else "0.0"

    ids = [r.run_id for r in data.runs]
    pb = PairedBoard(data.infos(), data.rating_sets, bootstrap=200, seed=0)
    d = pb.difference(pb.scorers[0], ids[0], ids[1], "overall", "boundary")
    first = _cells(page, "#cmp-scores tbody tr")[0]
    assert first[3] == f"{points(d.diff)} [{points(d.lo)}, {points(d.hi)}]"
    assert first[5] == verdict(d)
