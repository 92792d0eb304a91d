"""The drift view: its payload (pure), and the static site built from a real store with
conversation runs, opened in real headless Chromium."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from browser import launch, watched_page
from conversation_store import mixed_run, synthetic_runs, write_run
from intima.converse import ConversationTurn
from intima.core.ratings import Level, Primary, RatingSet
from intima.core.taxonomy import CATEGORIES
from intima.leaderboard.charts import drift_charts
from intima.leaderboard.drift_view import drift_payload, transcripts
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
SVG = "http://www.w3.org/2000/svg"


# -- the payload, from objects built by hand ------------------------------------------------


def turn(run: str, conv: str, k: int, *, reply: str | None = "ok", user_status: str = "ok"):
    return ConversationTurn(
        run_id=run, run_label=f"label-{run}", conversation_id=conv, code="loneliness",
        dimension=DIM, turn=k, prompt_id=f"{conv}-{k}",
        response_id=None if reply is None else f"{run}-{conv}-{k}", user_text=f"user {conv} {k}",
        response_text=reply, response_status="ok" if reply is not None else "error",
        user_status="seed" if k == 1 else user_status,
    )  # fmt: skip


def rating(rid: str, label: Primary, scorer: str = "panel") -> RatingSet:
    levels = dict.fromkeys(CATEGORIES, Level.LOW)
    if label == Primary.REINFORCING:
        levels["companionship_reinforcing"] = Level.HIGH
    if label == Primary.BOUNDARY:
        levels["boundary_maintaining"] = Level.HIGH
    return RatingSet(scorer=scorer, response_id=rid, status="scored", levels=levels, primary=label)


def hand_board() -> ConversationBoard:
    """Run r1: conversation a (boundary, then reinforcing), b (reinforcing, reply failed).
    Run r2: conversation a (boundary, boundary)."""
    turns = (
        turn("r1", "a", 1), turn("r1", "a", 2), turn("r1", "b", 1), turn("r1", "b", 2, reply=None),
        turn("r2", "a", 1), turn("r2", "a", 2),
    )  # fmt: skip
    sets = (
        rating("r1-a-1", Primary.BOUNDARY), rating("r1-a-2", Primary.REINFORCING),
        rating("r1-b-1", Primary.REINFORCING), rating("r2-a-1", Primary.BOUNDARY),
        rating("r2-a-2", Primary.BOUNDARY), rating("r2-a-2", Primary.NEUTRAL, "judge:x"),
    )  # fmt: skip
    return ConversationBoard(
        runs=(("r1", "label-r1"), ("r2", "label-r2")), turns=turns, rating_sets=sets
    )


def test_payload_holds_every_scorer_and_row_with_hand_values() -> None:
    p = drift_payload(hand_board(), bootstrap=50, seed=0, chunks=["data/c0.js", "data/c1.js"])
    assert p["configs"] == [
        {"run_id": "r1", "label": "label-r1"},
        {"run_id": "r2", "label": "label-r2"},
    ]
    assert p["scorers"] == ["judge:x", "panel"] and p["default_scorer"] == "panel"
    assert p["scopes"] == ["all", DIM] and p["chunks"] == ["data/c0.js", "data/c1.js"]
    r1 = next(r for r in p["tables"]["panel"] if r["config"] == 0 and r["scope"] == "all")
    assert r1["dropped"][0] == 1.0 and r1["dropped"][3] == 1  # a: boundary at 1, not at 2
    assert r1["not_scored"]["no_response"] == 1
    assert not r1["enough"] and r1["slope"]["reinforcing"] == [None, None, None]
    # the same numbers as the table the CLI prints (rounded to 4 places)
    table = drift_tables(hand_board(), ["panel"], bootstrap=50, seed=0)["panel"]
    assert r1["dropped"][1] == pytest.approx(table.get("r1").dropped.lo, abs=5e-5)
    assert "turns" not in r1  # the rates by turn travel once: in the charts
    json.dumps(p)  # plain JSON all the way down


def chart_points(html: str, metric: str) -> dict[int, list[str]]:
    """Per configuration index, the tooltips of one drift chart's points, in turn order."""
    root = ET.fromstring(f"<root>{html}</root>")
    svg = root.find(f".//{{{SVG}}}svg[@id='drift-chart-{metric}']")
    assert svg is not None
    return {
        int(g.get("data-config", "-1")): [
            t.text or "" for t in g.findall(f"{{{SVG}}}circle/{{{SVG}}}title")
        ]
        for g in svg.findall(f"{{{SVG}}}g[@class='drift-series']")
    }


def test_the_drift_charts_show_the_rates_counted_by_hand() -> None:
    """r1, panel: turn 1 a boundary, b reinforcing -> reinforcing 1/2, boundary 1/2; turn 2:
    a reinforcing (b failed) -> reinforcing 1/1, boundary 0/1. r2: boundary at both turns."""
    table = drift_tables(hand_board(), ["panel"], bootstrap=50, seed=0)["panel"]
    html = drift_charts(table, "all", ["r1", "r2"])
    rates = {
        m: {
            c: [t.split(": ")[1].split(" ")[0] for t in ts]
            for c, ts in chart_points(html, m).items()
        }
        for m in ("reinforcing", "boundary")
    }
    assert rates["reinforcing"] == {0: ["50.0%", "100.0%"], 1: ["0.0%", "0.0%"]}
    assert rates["boundary"] == {0: ["50.0%", "0.0%"], 1: ["100.0%", "100.0%"]}
    assert "label-r1 – turn 1: 50.0% [" in html and "(n=2)" in html
    # r2 has one conversation: no slope claimed, which the legend marks
    assert '<li data-config="1"' in html and "label-r2 *</li>" in html


def test_transcripts_keep_every_turn_and_its_ratings_per_configuration() -> None:
    chunks = transcripts(hand_board())
    assert [[c["id"] for c in chunk] for chunk in chunks] == [["a", "b"], ["a"]]
    b = chunks[0][1]
    assert [t["turn"] for t in b["turns"]] == [1, 2]
    assert b["turns"][1]["response"] is None and b["turns"][1]["response_status"] == "error"
    assert b["turns"][1]["ratings"] == []
    a2 = chunks[1][0]["turns"][1]
    assert [(r["scorer"], r["primary"]) for r in a2["ratings"]] == [
        ("panel", "boundary"), ("judge:x", "neutral")
    ]  # fmt: skip
    assert a2["user"] == "user a 2" and a2["ratings"][0]["levels"][1] == 2  # boundary high


def test_a_site_without_conversations_has_no_drift_view(tmp_path: Path) -> None:
    build_site(synthetic_board(1, 5, 1), tmp_path / "out", bootstrap=10)
    assert not (tmp_path / "out" / "drift.js").exists()
    assert "drift-data" not in (tmp_path / "out" / "index.html").read_text()
    empty = ConversationBoard(runs=(), turns=(), rating_sets=())
    build_site(synthetic_board(1, 5, 1), tmp_path / "out", bootstrap=10, conversations=empty)
    assert not (tmp_path / "out" / "drift.js").exists()


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
def browser() -> Iterator[object]:
    """One Chromium for the module: Playwright's sync API allows one driver at a time."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = launch(p)
        yield chromium
        chromium.close()


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
    text = (site / "data" / f"c{i}.js").read_text()
    return json.loads(text[text.index(",") + 1 : text.rindex(")")])


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def test_the_site_carries_the_drift_view_and_the_board_no_conversation(site: Path) -> None:
    d = drift_data(site)
    assert [c["label"] for c in d["configs"]] == ["talker", "talker-0", "talker-1", "talker-2"]
    assert len(list((site / "data").glob("c*.js"))) == 4
    assert {c["label"] for c in board_data(site)["configs"]} == {"synthetic-0", "synthetic-1"}
    js = (site / "drift.js").read_text()
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "eval(" not in js


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
    d = drift_data(site)
    page.select_option("#drift-scorer", "judge:judge-a")
    rows = [r for r in d["tables"]["judge:judge-a"] if r["scope"] == "all"]
    shown = page.locator("#drift-table tbody tr")
    assert shown.count() == len(rows) == 4
    for i, r in enumerate(rows):
        cells = shown.nth(i).locator("td").all_text_contents()
        label = d["configs"][r["config"]]["label"]
        assert cells[0] == label + ("" if r["enough"] else " *")
        assert cells[1] == str(r["n"])
        for col, metric in ((2, "reinforcing"), (3, "boundary")):
            v, lo, hi = r["slope"][metric]
            if v is None:
                assert cells[col] == "–"
            else:
                nums = [float(x) for x in re.findall(r"[-+]?\d+\.\d", cells[col])]
                assert nums == pytest.approx([v, lo, hi], abs=0.051)
        dv, dlo, dhi, dn = r["dropped"]
        assert cells[4].endswith(f" n={dn}")
        shown_pct = [float(x) for x in re.findall(r"\d+\.\d", cells[4])]
        want = [] if dv is None else [100 * dv, 100 * dlo, 100 * dhi]
        assert shown_pct == pytest.approx(want, abs=0.051)  # JS and Python round halves apart
    assert cells[0] == "talker-2"  # 36 conversations: a slope is claimed
    assert page.locator("#drift-table tbody tr").first.locator("td").first.text_content() == (
        "talker *"
    )
    page.select_option("#drift-scorer", "panel")


def test_the_explorer_shows_every_turn_with_its_ratings(page, site: Path) -> None:
    page.select_option("#drift-config", "2")
    page.wait_for_selector("#drift-conv")
    conv = conversations(site, 2)[5]
    page.select_option("#drift-conv", conv["id"])
    box = page.locator("#drift-transcript")
    assert box.get_attribute("data-conversation-id") == conv["id"]
    turns = box.locator(".turn")
    assert turns.count() == len(conv["turns"]) == 3
    for i, t in enumerate(conv["turns"]):
        shown = turns.nth(i)
        assert shown.get_attribute("data-turn") == str(t["turn"])
        assert shown.locator("pre.user").text_content() == t["user"]
        assert shown.locator("pre.assistant").text_content() == t["response"]
        rows = shown.locator("table.ratings tr[data-scorer]")
        got = [
            (
                rows.nth(j).get_attribute("data-scorer"),
                rows.nth(j).locator("td.primary").text_content(),
            )
            for j in range(rows.count())
        ]
        assert got == [(r["scorer"], r["primary"]) for r in t["ratings"]]
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


def test_app_drift_fragments_draw_a_line_per_model_and_escape_text() -> None:
    from intima.leaderboard import drift_render

    board = hand_board()
    hostile = board.turns[0].model_copy(update={"user_text": HOSTILE, "response_text": HOSTILE})
    table = drift_tables(board, ["panel"], bootstrap=20, min_conversations=1)["panel"]
    svg = drift_charts(table, "all", ["r1", "r2"])
    assert svg.count('<polyline class="drift-line"') == 4  # one per configuration and chart
    # A hostile model label is escaped in the charts: the markup stays whole, the label is text.
    named = ConversationBoard(runs=(("r1", HOSTILE), ("r2", "label-r2")), turns=board.turns,
                              rating_sets=board.rating_sets)  # fmt: skip
    t = drift_tables(named, ["panel"], bootstrap=20, min_conversations=1)["panel"]
    root = ET.fromstring(f"<root>{drift_charts(t, 'all', ['r1', 'r2'])}</root>")
    assert not root.findall(".//script") and not root.findall(".//img")
    lines = root.findall(f".//{{{SVG}}}polyline/{{{SVG}}}title")
    assert [x.text for x in lines] == [HOSTILE, "label-r2"] * 2
    assert "".join(root.find(".//li[@data-config='0']").itertext()) == HOSTILE
    nums = drift_render.drift_numbers(table, "all")
    assert nums.count("<tr>") == 3 and "label-r2" in nums
    html = drift_render.transcript([hostile, *board.turns[1:2]], board.rating_sets)
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "onerror" in html  # shown, as text
    assert html.count('class="intima-turn"') == 2
    assert "<td>panel</td><td>boundary</td>" in html  # turn 1's rating


@pytest.fixture(scope="module")
def app_page(site: Path, browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """``intima board serve`` on the same store, opened in Chromium."""
    from conftest import board_server

    log = tmp_path_factory.mktemp("drift-app") / "serve.log"
    with board_server(site.parent / "store.db", 200, log) as url:
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
    turns = pg.locator("#drift-transcript .intima-turn")
    assert turns.count() == 3
    assert turns.nth(0).locator(".intima-user").text_content() == "I feel alone."
    assert "No reply (error)." in turns.nth(2).text_content()
    # talker-0's first conversation is the hostile one: shown as text, nothing runs.
    pg.locator("#drift-config input").click()
    pg.get_by_role("option", name="talker-0", exact=True).click()
    pg.wait_for_function(
        "h => (document.querySelector('#drift-transcript .intima-user') || {}).textContent === h",
        arg=HOSTILE,
    )
    assert pg.locator("#drift-transcript .intima-response").first.text_content() == HOSTILE
    assert pg.locator("#drift-transcript img, #drift-transcript script").count() == 0
    assert pg.evaluate("window.__pwned") is None
    assert pg.errors == []


def test_the_view_opens_on_the_scorer_with_the_most_ratings_not_one_human_rating() -> None:
    """Issue #23: on a board scored by the affect measure, one human rating made ``human`` the
    default (human sorts before affect), which opened the view on an empty chart."""
    board = hand_board()
    affect = tuple(
        rating(t.response_id, Primary.NEUTRAL, "affect") for t in board.turns if t.response_id
    )
    lone_human = rating("r1-a-1", Primary.BOUNDARY, "human")
    p = drift_payload(
        ConversationBoard(runs=board.runs, turns=board.turns, rating_sets=(*affect, lone_human)),
        bootstrap=20,
        seed=0,
        chunks=["a", "b"],
    )
    assert p["scorers"] == ["human", "affect"] and p["default_scorer"] == "affect"
    # With a panel among equally busy scorers, the panel still comes first.
    p = drift_payload(board, bootstrap=20, seed=0, chunks=["a", "b"])
    assert p["default_scorer"] == "panel"
