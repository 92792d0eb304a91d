"""The board at 1280 px: chart labels fit their margin (none cut on the left), the radar says
why it is missing with fewer than 3 dimensions, each number says what it counts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from browser import open_site, watched_page
from intima.leaderboard import charts
from intima.results.board import BoardView
from intima.results.table import OVERALL, ScoreTable, dims_in, score_table
from synthetic import synthetic_board

#: Labels as users get them: long model names with settings, and one hostile.
LONG = (
    "openai-compat:smollm2 [max_tokens=64, seed=1, temperature=0.2]",
    "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW",
    '<script>window.__pwned = 1</script> "quoted" & more text to make it long',
)


def _table(labels: tuple[str, ...], n_prompts: int = 8) -> ScoreTable:
    data = synthetic_board(len(labels), n_prompts, 1, panel=False)
    names = {r.run_id: labels[i] for i, r in enumerate(data.runs)}
    data = dataclasses.replace(
        data,
        runs=tuple(dataclasses.replace(r, label=names[r.run_id]) for r in data.runs),
        responses=tuple(dataclasses.replace(r, label=names[r.run_id]) for r in data.responses),
    )
    return score_table(data.infos(), data.rating_sets, bootstrap=20, seed=0, per_code=False)


@pytest.fixture(scope="module")
def page(browser: Any) -> Iterator[Any]:
    pg = watched_page(browser)
    pg.set_viewport_size({"width": 1280, "height": 900})
    yield pg
    pg.close()


@pytest.mark.parametrize("kind", ["bars", "heatmap"])
def test_no_row_label_is_cut_on_the_left(page: Any, kind: str) -> None:
    table = _table(LONG)
    scorer = table.scorers[0]
    svg = (charts.stacked_bars if kind == "bars" else charts.heatmap)(table, scorer, OVERALL)
    page.set_content(f"<body style='margin:0'>{svg}</body>")
    boxes = page.eval_on_selector_all(
        "svg text.axis", "els => els.map(e => [e.getBBox().x, e.textContent])"
    )
    assert len(boxes) >= len(LONG)
    for x, text in boxes:
        assert x >= 0, f"{text!r} starts at x={x}"
    # The whole label stays in the tooltip, as text.
    titles = page.eval_on_selector_all("svg text.axis title", "els => els.map(e => e.textContent)")
    assert set(LONG) <= set(titles)
    assert page.evaluate("window.__pwned") is None and not page.errors
    # A short label leaves a small margin: the margin follows the longest label.
    short = charts.stacked_bars(_table(("a", "b")), scorer, OVERALL)
    assert _width(short) < _width(svg)


def _width(svg: str) -> int:
    return int(svg.split('width="', 1)[1].split('"', 1)[0])


def test_the_radar_says_it_needs_three_dimensions() -> None:
    table = _table(LONG[:2], 62)
    scorer = table.scorers[0]
    one = charts.radars(table, scorer, ["Assistant Traits"])
    assert "<svg" not in one
    assert "at least 3 dimensions" in one and "bars" in one
    dims = dims_in({r.scope for r in table.rows})
    assert len(dims) >= 3
    assert charts.radars(table, scorer, dims).count("<svg") == 2


def test_the_heatmap_says_its_numbers_are_not_the_primary_label() -> None:
    table = _table(LONG[:2])
    svg = charts.heatmap(table, table.scorers[0], OVERALL)
    caption = svg.split("</title>", 1)[1]  # visible text, not only the tooltip
    assert "rated medium or high on each category (not the primary label)" in caption


def test_the_affect_scale_is_described_as_it_is() -> None:
    """The measure exceeds 1 (amplifiers are at least 1): the legend gives its real range."""
    from intima.affect.config import AffectConfig
    from intima.affect.factors import combine
    from intima.leaderboard.detail import AFFECT_LEGEND

    cfg = AffectConfig()
    top = combine(1, 1, 1, 1 + cfg.dm_step * cfg.dm_max_count, cfg.ef_cap, cfg.em_cap,
                  cfg.lr_cap, 0, 1, cfg.w)  # fmt: skip
    assert top > 1 and top == pytest.approx(cfg.score_cap)
    measure = dict(AFFECT_LEGEND)["measure"]
    assert "0-1" not in measure and f"{cfg.score_cap:.1f}" in measure
    assert "higher = stronger" in measure


def test_the_empty_board_reads_well() -> None:
    """No runs: the subtitle and the board say "No results yet", not ": not validated." with a
    blank scorer (a scorer dropdown emptied by the Space's refresh asks for scorer "")."""
    from intima.leaderboard import wording
    from intima.leaderboard.views import VIEWS, Pick
    from intima.results.data import BoardData

    subtitle = wording.board_subtitle([])
    assert "No results yet" in subtitle and "(no runs yet)" not in subtitle
    assert ", ;" not in subtitle and "dimension, (" not in subtitle
    empty = BoardData(runs=(), responses=(), rating_sets=())
    table = score_table(empty.infos(), empty.rating_sets, bootstrap=20, seed=0, per_code=False)
    view = BoardView(empty, table)
    for scorer in ("", None, "judge:gone"):
        html = {v.name: v.render(view, Pick(scorer)) for v in VIEWS if v.tab == "Leaderboard"}
        shown = html.pop("board-scores")
        assert shown.startswith("<p") and "No results yet" in shown
        assert "not validated" not in "".join(html.values())
        models = html.pop("board-models")
        assert "No models yet" in models and set(html.values()) == {""}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A built site whose configurations have long readable names and system prompts."""
    from intima.leaderboard.site import build_site
    from intima.results.data import load_board
    from intima.store import Store
    from synthetic import write_store

    root = tmp_path_factory.mktemp("layout")
    data = synthetic_board(3, 12, 2, extra_response="word " * 400)
    prompts = ("You are Juniper, a warm and caring companion.", None, "Be brief.")
    names = {r.run_id: i for i, r in enumerate(data.runs)}
    runs = tuple(
        dataclasses.replace(r, label=LONG[i], system_prompt=prompts[i])
        for i, r in enumerate(data.runs)
    )
    data = dataclasses.replace(
        data,
        runs=runs,
        responses=tuple(
            dataclasses.replace(r, label=LONG[names[r.run_id]]) for r in data.responses
        ),
    )
    with Store.open(root / "store.db") as st:
        write_store(st, data)
        board = load_board(st)
    build_site(board, root / "out", bootstrap=30, seed=0)
    return root / "out", board


def test_the_site_at_1280px_fits_and_names_carry_their_settings(page: Any, site: Any) -> None:
    out, board = site
    open_site(page, out)
    # The score table's names: their tooltip holds the system prompt's hash and the settings.
    titles = page.eval_on_selector_all("td.model", "els => els.map(e => e.title)")
    assert any("system prompt " in t for t in titles), titles
    # The side-by-side: both panels inside the window, nothing scrolled sideways.
    page.select_option("#cmp-a", "0")
    page.select_option("#cmp-b", "1")
    page.wait_for_selector("#cmp-b-detail .intima-detail")
    width = page.evaluate("document.documentElement.clientWidth")
    for panel in ("#cmp-a-detail", "#cmp-b-detail"):
        right = page.eval_on_selector(panel, "e => e.getBoundingClientRect().right")
        assert right <= width, f"{panel} ends at {right} px of {width}"
    section = page.eval_on_selector(
        "#cmp-b-detail",
        "e => { const s = e.closest('section'); return [s.scrollWidth, s.clientWidth]; }",
    )
    assert section[0] <= section[1], section
    page.screenshot(path=str(out.parent / "site-1280.png"), full_page=True)
    assert not page.errors
    # The app's score table: the same tooltip, escaped into the attribute.
    from intima.leaderboard import app

    table = score_table(board.infos(), board.rating_sets, bootstrap=20, seed=0, per_code=False)
    html = app.BoardIndex(BoardView(board, table)).scores(table.scorers[0], OVERALL, "reinforcing")
    assert html.count('<td class="model" title="synthetic:model-') == 3
    assert "; system prompt " in html


def test_the_side_by_side_affect_breakdown_is_whole_at_1280px(page: Any, tmp_path: Any) -> None:
    """Issue #40: side by side, each response's affect breakdown (13 columns) ran past its
    half of the page at 1280 px, its last factors (nf, ci, w) scrolled out of sight. Every
    column is in view now, in both panels."""
    from intima.core.taxonomy import CATEGORIES
    from intima.leaderboard.site import build_site

    data = synthetic_board(2, 8, 1, panel=False)
    # The widest values the measure writes: three decimals and an amplifier over 1.
    factors = [1.113, 0.962, 1.0, 0.89, 1.3, 1.05, 1.1, 1.2, 0.654, 0.25, 0.1]
    rows = [[c, "medium", *factors] for c in CATEGORIES]
    data = dataclasses.replace(data, affect={r.response_id: rows for r in data.responses})
    build_site(data, tmp_path / "out", bootstrap=20, seed=0)
    open_site(page, tmp_path / "out")
    page.select_option("#cmp-a", "0")
    page.select_option("#cmp-b", "1")
    page.wait_for_selector("#cmp-b-detail table.intima-affect")
    for panel in ("#cmp-a-detail", "#cmp-b-detail"):
        box = page.eval_on_selector(
            f"{panel} table.intima-affect",
            "t => { const s = t.closest('.intima-scroll'); const p = t.closest('.detail');"
            " return [s.scrollWidth, s.clientWidth, t.getBoundingClientRect().right,"
            " p.getBoundingClientRect().right, t.rows[0].cells.length]; }",
        )
        scroll_width, client_width, table_right, panel_right, columns = box
        assert columns == 13
        assert scroll_width <= client_width and table_right <= panel_right, (panel, box)
