"""The drift view in real headless Chromium: the static site and the app (``intima board
serve``) built from one real store with conversation runs, each checked against the numbers
the CLI computes, and against each other (one rendering, :mod:`intima.leaderboard.drift_render`).
The fragments themselves, from objects built by hand: ``test_leaderboard_drift_render.py``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from browser import watched_page
from conversation_store import mixed_run, synthetic_runs, write_run
from intima.leaderboard.chunks import read_chunk
from intima.leaderboard.drift_render import COLUMNS
from intima.leaderboard.site import build_site
from intima.results.conversations import ConversationBoard, drift_tables, load_conversations
from intima.results.data import load_board
from intima.store import Store
from synthetic import synthetic_board, write_store

HOSTILE = (
    'Hi <script>window.__pwned = "script"</script>'
    '<img src="x" onerror="window.__pwned = \'img\'"> & "quotes" </pre></script>'
)
DIM = "User Vulnerabilities"


# -- the site in Chromium -------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("drift-site")
    with Store.open(root / "store.db") as store:
        write_store(store, synthetic_board(2, 62, 3, seed=1))
        write_run(store, mixed_run())
        for run in synthetic_runs(3, 36, 3, seed=2, hostile=HOSTILE):
            write_run(store, run)
        data, conversations = load_board(store), load_conversations(store)
    build_site(data, root / "out", bootstrap=200, seed=0, conversations=conversations)
    return root / "out"


@pytest.fixture(scope="module")
def page(site: Path, browser) -> Iterator[object]:
    pg = watched_page(browser)
    pg.goto((site / "index.html").as_uri())
    pg.wait_for_selector("body[data-drift-ready='1']", timeout=10_000)
    yield pg
    pg.close()


def drift_data(site: Path) -> dict:
    html = (site / "index.html").read_text()
    m = re.search(r'<script type="application/json" id="drift-data">(.*?)</script>', html, re.S)
    assert m
    return json.loads(m.group(1))


def board_data(site: Path) -> dict:
    html = (site / "index.html").read_text()
    m = re.search(r'<script type="application/json" id="board-data">(.*?)</script>', html, re.S)
    assert m
    return json.loads(m.group(1))


def conversations(site: Path, i: int) -> list[dict]:
    return read_chunk(site / "data" / f"c{i}.js")


def stored(site: Path) -> ConversationBoard:
    with Store.open(site.parent / "store.db") as store:
        return load_conversations(store)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def test_the_site_carries_the_drift_view_and_the_board_no_conversation(site: Path) -> None:
    d = drift_data(site)
    assert [c["label"] for c in d["configs"]] == ["talker", "talker-0", "talker-1", "talker-2"]
    assert len(list((site / "data").glob("c*.js"))) == 4
    assert {c["label"] for c in board_data(site)["configs"]} == {"synthetic-0", "synthetic-1"}
    js = (site / "drift.js").read_text()
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "eval(" not in js
    # It draws and formats nothing: every number and cell comes rendered from Python.
    assert "toFixed" not in js and "Math.round" not in js and "pct" not in js
    # One loader for every data file of the site (issue 34: it was written three times).
    scripts = [p.read_text() for p in site.glob("*.js")]
    assert sum(s.count("function loadChunk") for s in scripts) == 1
    assert "U.loadChunk(" in js and "intimaChunk" not in js
    assert {c["choice"] for c in conversations(site, 0)} == {
        "loneliness · I feel alone.", "name · What should I call you?"
    }  # fmt: skip


def test_the_chart_has_one_line_per_model_with_the_rates_by_turn(page, site: Path) -> None:
    """In Chromium, the site's charts show the drift table the CLI computes, point by point."""
    d = drift_data(site)
    with Store.open(site.parent / "store.db") as store:
        table = drift_tables(load_conversations(store), ["panel"], bootstrap=200, seed=0)["panel"]
    for scope in ("all", DIM):
        page.select_option("#drift-scope", scope)
        rows = [r for r in table.rows if r.scope == scope]
        for metric in ("reinforcing", "boundary"):
            chart = f"#drift-chart-{metric}"
            configs = page.eval_on_selector_all(
                f"{chart} polyline.drift-line", "ls => ls.map(l => Number(l.dataset.config))"
            )
            assert sorted(configs) == [0, 1, 2, 3]  # one line per model
            index = {c["run_id"]: i for i, c in enumerate(d["configs"])}
            for r in rows:
                titles = page.locator(
                    f"{chart} g[data-config='{index[r.config]}'] circle title"
                ).all_text_contents()
                want = [
                    f"{r.label} – turn {t.turn}: {_pct(e.value)} [{_pct(e.lo)}, {_pct(e.hi)}] "
                    f"(n={e.n})"
                    for t in r.turns
                    for e in [getattr(t, metric)]
                    if e.value is not None
                ]
                assert titles == want and want
    page.select_option("#drift-scope", "all")
    assert page.errors == []


def test_the_table_shows_slopes_and_dropped_boundaries(page, site: Path) -> None:
    """The site's table shows the drift table the CLI computes, cell by cell."""
    table = drift_tables(stored(site), ["judge:judge-a"], bootstrap=200, seed=0)["judge:judge-a"]
    page.select_option("#drift-scorer", "judge:judge-a")
    assert page.locator("#drift-table th").all_text_contents() == list(COLUMNS)
    rows = [r for r in table.rows if r.scope == "all"]
    shown = page.locator("#drift-table tbody tr")
    assert shown.count() == len(rows) == 4
    for i, r in enumerate(rows):
        cells = shown.nth(i).locator("td").all_text_contents()
        assert cells[0] == r.label + ("" if r.enough else " *")
        assert cells[1] == str(r.n_conversations)
        for col, metric in ((2, "reinforcing"), (3, "boundary")):
            s = r.slope[metric]
            if s.value is None:
                assert cells[col] == "–"
            else:
                nums = [float(x) for x in re.findall(r"[-+]?\d+\.\d", cells[col])]
                assert nums == pytest.approx([s.value, s.lo, s.hi], abs=0.051)
        d = r.dropped
        assert cells[4].endswith(f" n={d.n}")
        shown_pct = [float(x) for x in re.findall(r"\d+\.\d", cells[4])]
        want = [] if d.value is None else [100 * d.value, 100 * d.lo, 100 * d.hi]
        assert shown_pct == pytest.approx(want, abs=0.051)
        missing = [f"{n} {k.replace('_', ' ')}" for k, n in r.not_scored.items() if n]
        assert cells[5] == (", ".join(missing) or "0")
    assert cells[0] == "talker-2"  # 36 conversations: a slope is claimed
    first = page.locator("#drift-table tbody tr").first.locator("td").all_text_contents()
    assert first[0] == "talker *" and first[5] == "1 unscored, 1 no response, 1 user stopped"
    page.select_option("#drift-scorer", "panel")


def test_the_explorer_shows_every_turn_with_its_ratings(page, site: Path) -> None:
    page.select_option("#drift-config", "2")
    page.wait_for_selector("#drift-conv")
    board = stored(site)
    conv = conversations(site, 2)[5]
    want = [t for t in board.turns if t.run_label == "talker-1" and t.conversation_id == conv["id"]]
    page.select_option("#drift-conv", conv["id"])
    box = page.locator("#drift-transcript .transcript")
    assert box.get_attribute("data-conversation-id") == conv["id"]
    turns = box.locator(".turn")
    assert turns.count() == len(want) == 3
    for i, t in enumerate(want):
        shown = turns.nth(i)
        assert shown.get_attribute("data-turn") == str(t.turn)
        assert shown.locator("pre.user").text_content() == t.user_text
        assert shown.locator("pre.assistant").text_content() == t.response_text
        rows = shown.locator("table.ratings tr[data-scorer]")
        got = [
            (
                rows.nth(j).get_attribute("data-scorer"),
                rows.nth(j).locator("td.primary").text_content(),
            )
            for j in range(rows.count())
        ]
        sets = [rs for rs in board.rating_sets if rs.response_id == t.response_id]
        assert got == [(rs.scorer, str(rs.primary)) for rs in sets]
        assert {s for s, _ in got} == {"judge:judge-a", "judge:judge-b", "panel"}
    # the mixed run: a failed reply and a simulated user who stopped are said, not hidden
    page.select_option("#drift-config", "0")
    page.select_option("#drift-conv", "conv-B")
    assert "stopped here (broke character)" in box.locator(".turn").nth(1).text_content()
    page.select_option("#drift-conv", "conv-A")
    assert box.locator(".turn").nth(2).locator(".status").text_content() == "No reply (error)."
    assert page.errors == []


def test_hostile_text_shows_as_text_and_no_script_runs(page, artifacts: Path) -> None:
    page.select_option("#drift-config", "1")  # talker-0: its first conversation is hostile
    page.select_option("#drift-conv", "seed-000")
    first = page.locator("#drift-transcript .turn").first
    assert first.locator("pre.user").text_content() == HOSTILE
    assert first.locator("pre.assistant").text_content() == HOSTILE
    assert page.locator("#drift img, #drift script").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []
    page.locator("#drift").screenshot(path=str(artifacts / "leaderboard_drift.png"))


@pytest.mark.parametrize("width", [390, 1280])
def test_nothing_overflows(page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.select_option("#drift-config", "2")
    page.wait_for_selector("#drift-transcript .turn")
    wide = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert wide <= 0
    # Every element of the drift view lies inside the section, except inside the boxes that
    # scroll on purpose (the wide tables).
    sticking_out = page.evaluate(
        """() => {
        const sec = document.getElementById('drift').getBoundingClientRect();
        return Array.from(document.querySelectorAll('#drift *'))
          .filter(e => !e.closest('.scroll') || e.classList.contains('scroll'))
          .filter(e => { const r = e.getBoundingClientRect();
                         return r.width > 0 && (r.right > sec.right + 0.5 || r.left < sec.left - 0.5); })
          .map(e => e.tagName + '#' + e.id + '.' + e.getAttribute('class'));
        }"""
    )
    assert sticking_out == []
    # ... and those boxes do scroll: their content cannot spill over the page.
    spilling = page.evaluate(
        """() => Array.from(document.querySelectorAll('#drift .scroll'))
          .filter(e => !['auto', 'scroll'].includes(getComputedStyle(e).overflowX)).length"""
    )
    assert spilling == 0 and page.locator("#drift .scroll").count() >= 2
    assert page.locator("#drift-chart-reinforcing").bounding_box()["width"] <= width
    page.set_viewport_size({"width": 1300, "height": 900})


# -- the Gradio app's drift tab (server-side HTML) --------------------------------------------


@pytest.fixture(scope="module")
def app_page(site: Path, browser) -> Iterator[object]:
    """What ``intima board serve`` serves on the same store, opened in Chromium."""
    from conftest import board_in_thread

    with board_in_thread(site.parent / "store.db", 200) as url:
        pg = watched_page(browser)
        pg.goto(url)
        pg.wait_for_selector("#board-table table", timeout=30_000)
        yield pg
        pg.close()


def test_the_app_has_a_drift_tab_with_lines_and_transcripts(app_page, page, site: Path) -> None:
    pg = app_page
    pg.get_by_role("tab", name="Drift").click()
    pg.wait_for_selector("#drift-charts svg")
    assert pg.locator("#drift-chart-reinforcing polyline.drift-line").count() == 4
    assert pg.locator("#drift-chart-boundary polyline.drift-line").count() == 4
    # One definition: the app draws the very charts (and legend) the site shows.
    page.select_option("#drift-scorer", drift_data(site)["default_scorer"])
    page.select_option("#drift-scope", "all")
    charts = "#drift-charts div.drift-charts, #drift-charts ul.drift-legend"
    site_html = page.eval_on_selector_all(charts, "es => es.map(e => e.outerHTML)")
    assert len(site_html) == 2 and site_html == pg.eval_on_selector_all(
        charts, "es => es.map(e => e.outerHTML)"
    )
    assert pg.locator("#drift-numbers tr").count() == 1 + 4
    # The first model is the mixed run: its first conversation, every turn shown.
    turns = pg.locator("#drift-transcript .turn")
    assert turns.count() == 3
    assert turns.nth(0).locator("pre.user").text_content() == "I feel alone."
    assert "No reply (error)." in turns.nth(2).text_content()
    # talker-0's first conversation is the hostile one: shown as text, nothing runs.
    pg.locator("#drift-config input").click()
    pg.get_by_role("option", name="talker-0", exact=True).click()
    pg.wait_for_function(
        "h => (document.querySelector('#drift-transcript pre.user') || {}).textContent === h",
        arg=HOSTILE,
    )
    assert pg.locator("#drift-transcript pre.assistant").first.text_content() == HOSTILE
    assert pg.locator("#drift-transcript img, #drift-transcript script").count() == 0
    assert pg.evaluate("window.__pwned") is None
    assert pg.errors == []


def _cells(pg) -> list[list[str]]:
    return pg.eval_on_selector_all(
        "#drift-table tr", "trs => trs.map(tr => Array.from(tr.children).map(c => c.textContent))"
    )


def _markup(pg, selector: str) -> str:
    return pg.eval_on_selector(selector, "e => e.outerHTML")


def _choose(pg, elem_id: str, option: str) -> None:
    """Pick ``option`` in one of the app's dropdowns."""
    pg.locator(f"#{elem_id} input").click()
    pg.get_by_role("option", name=option, exact=True).click()


def _wait_for_markup(pg, selector: str, want: str) -> None:
    """Until the app's update has landed; then the comparison itself, for a readable diff."""
    from playwright.sync_api import TimeoutError as Timeout

    try:
        pg.wait_for_function(
            "([s, w]) => (document.querySelector(s) || {}).outerHTML === w",
            arg=[selector, want],
            timeout=15_000,
        )
    except Timeout:
        pass
    assert _markup(pg, selector) == want


def test_the_site_and_the_app_show_the_same_drift_cells_and_transcripts(
    app_page, page, site: Path
) -> None:
    """One rendering: for the same store, scorer, dimension and conversation, the site and the
    app show the same table cells and the same transcript, markup and all. A column, a sign or
    a wording changed on one side alone turns this red; ``test_the_table_shows_slopes...``
    checks the cells against the CLI's numbers."""
    pg = app_page
    pg.get_by_role("tab", name="Drift").click()
    pg.wait_for_selector("#drift-table")
    page.select_option("#drift-scorer", drift_data(site)["default_scorer"])
    page.select_option("#drift-scope", "all")
    cells = _cells(page)
    assert cells[0] == list(COLUMNS) and len(cells) == 1 + 4
    assert _cells(pg) == cells
    assert _markup(pg, "#drift-table") == _markup(page, "#drift-table")
    note = "#drift-numbers p.drift-note"
    assert pg.locator(note).text_content() == page.locator(note).text_content()
    # Another scorer and dimension, chosen on both.
    page.select_option("#drift-scorer", "judge:judge-a")
    page.select_option("#drift-scope", DIM)
    _choose(pg, "drift-scorer", "judge:judge-a")
    _choose(pg, "drift-scope", DIM)
    _wait_for_markup(pg, "#drift-table", _markup(page, "#drift-table"))
    assert _cells(pg) == _cells(page) and "+0.0" not in str(_cells(page))
    # Transcripts: the mixed run's first conversation (a failed reply, a turn not rated by
    # every judge), then the hostile one; the menus name the conversations alike.
    page.select_option("#drift-config", "0")
    page.select_option("#drift-conv", "conv-A")
    _choose(pg, "drift-config", "talker")
    box = "#drift-transcript .transcript"
    _wait_for_markup(pg, box, _markup(page, box))
    page.select_option("#drift-config", "1")
    page.select_option("#drift-conv", "seed-000")
    _choose(pg, "drift-config", "talker-0")
    _wait_for_markup(pg, box, _markup(page, box))
    assert page.locator(f"{box} pre.user").first.text_content() == HOSTILE
    site_menu = page.locator("#drift-conv option").all_text_contents()
    pg.locator("#drift-conv input").click()
    app_menu = pg.get_by_role("option").all_text_contents()
    assert [t.removeprefix("✓").strip() for t in app_menu] == site_menu  # ✓: the chosen one
    pg.keyboard.press("Escape")
    for p in (page, pg):
        assert p.locator("#drift-transcript img, #drift-transcript script").count() == 0
        assert p.evaluate("window.__pwned") is None and p.errors == []
