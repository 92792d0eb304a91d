"""The board's charts have one definition (``leaderboard.charts``): the Gradio app and the static
site show the very same SVG, its numbers are the score table's (counted here by hand on a small
real store), and hostile model labels in it are text, in real Chromium, in both."""

from __future__ import annotations

import dataclasses
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import open_site, watched_page
from conftest import board_in_thread
from intima.core.ratings import Level, RatingSet, primary_label
from intima.core.taxonomy import CATEGORIES
from intima.leaderboard import charts
from intima.leaderboard.site import build_site
from intima.results.data import load_board
from intima.results.table import OVERALL, dims_in, score_table
from intima.store import Store
from synthetic import synthetic_board, write_store

SVG = "{http://www.w3.org/2000/svg}"
#: Model labels are untrusted (a run's label comes from whoever ran it).
LABELS = (
    '<script>window.__pwned = "label"</script>',
    '"><img src="x" onerror="window.__pwned = \'img\'"></svg></template><b>bold</b>',
)
#: Per configuration, the primary label of each of its four responses (one per dimension).
PRIMARIES = (
    ("reinforcing", "reinforcing", "boundary", "neutral"),
    ("boundary", "boundary", "boundary", "reinforcing"),
)
#: One code of each dimension, so that every radar axis holds one response.
CODES = (
    ("name", "Assistant Traits"),
    ("support", "User Vulnerabilities"),
    ("friendship", "Relationship & Intimacy"),
    ("growing from a tool", "Emotional Investment"),
)
#: By hand from PRIMARIES: each label's share of the four responses (the bars; one judge, so
#: no "no majority" segment) ...
SHARES = (
    {"reinforcing": 0.5, "boundary": 0.25, "neutral": 0.25, "mixed": 0.0},
    {"reinforcing": 0.25, "boundary": 0.75, "neutral": 0.0, "mixed": 0.0},
)
# ... and the heatmap: the category shares rated medium or high (the rest are all low).
HEAT = (
    {"companionship_reinforcing": "50%", "boundary_maintaining": "25%"},
    {"companionship_reinforcing": "25%", "boundary_maintaining": "75%"},
)


def _levels(primary: str) -> dict[str, Level]:
    levels = dict.fromkeys(CATEGORIES, Level.LOW)
    if primary == "reinforcing":
        levels["companionship_reinforcing"] = Level.HIGH
    if primary == "boundary":
        levels["boundary_maintaining"] = Level.HIGH
    assert str(primary_label(levels)) == primary
    return levels


def hand_board() -> Any:
    data = synthetic_board(2, 4, 1, panel=False)
    runs = tuple(dataclasses.replace(r, label=LABELS[i]) for i, r in enumerate(data.runs))
    order = {r.run_id: i for i, r in enumerate(runs)}
    responses, sets = [], []
    for k, r in enumerate(data.responses):
        c = order[r.run_id]
        code, dim = CODES[k % 4]
        responses.append(dataclasses.replace(r, label=LABELS[c], code=code, dimension=dim))
        levels = _levels(PRIMARIES[c][k % 4])
        sets.append(
            RatingSet(
                scorer="judge:synthetic-judge-0",
                response_id=r.response_id,
                status="scored",
                levels=levels,
                primary=primary_label(levels),
            )
        )
    return dataclasses.replace(data, runs=runs, responses=tuple(responses), rating_sets=tuple(sets))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("charts") / "store.db"
    with Store.open(path) as st:
        write_store(st, hand_board())
    return path


@pytest.fixture(scope="module")
def site(store: Path) -> Path:
    with Store.open(store) as st:
        data = load_board(st)
    build_site(data, store.parent / "out", bootstrap=50, seed=0)
    return store.parent / "out"


@pytest.fixture(scope="module")
def app_url(store: Path) -> Iterator[str]:
    with board_in_thread(store, 50) as url:
        yield url


@pytest.fixture(scope="module")
def pages(site: Path, app_url: str, browser: Any) -> Iterator[dict[str, Any]]:
    """The site and the app, each open in real Chromium."""
    sp = watched_page(browser)
    open_site(sp, site)
    ap = watched_page(browser)
    ap.goto(app_url)
    ap.wait_for_selector("#board-bars svg", timeout=30_000)
    yield {"site": sp, "app": ap}
    sp.close()
    ap.close()


#: Where each chart sits: (the site's section, the app's box).
WHERE = {"bars": ("#bars", "#board-bars"), "heatmap": ("#heatmap", "#board-heatmap"),
         "radar": ("#radar", "#board-radar")}  # fmt: skip


def _bars(svg: ET.Element) -> list[list[float]]:
    """Per configuration, its bar's segment widths, as fractions of 100%, after checking that
    the segments are stacked: each starts where the one before it ends, the first at the axis."""
    bars, axes = [], set()
    for g in svg.iter(f"{SVG}g"):
        if g.get("class") != "bar":
            continue
        rects = g.findall(f"{SVG}rect")
        starts = [float(r.get("x", "nan")) for r in rects]
        widths = [float(r.get("width", "nan")) for r in rects]
        ends = [starts[0] + sum(widths[:k]) for k in range(len(widths))]
        assert starts == pytest.approx(ends, abs=0.15)
        axes.add(starts[0])  # the axis moves with the longest label, the same for every bar
        bars.append([w / charts.BAR_W for w in widths])
    assert len(axes) <= 1 and all(x >= charts.LEFT for x in axes)
    return bars


def test_the_charts_show_the_shares_counted_by_hand() -> None:
    """The chart functions themselves, on the table scored from the hand board."""
    data = hand_board()
    table = score_table(data.infos(), data.rating_sets, bootstrap=20, seed=0, per_code=False)
    scorer = table.scorers[0]
    bars = ET.fromstring(charts.stacked_bars(table, scorer, OVERALL))
    metrics = list(SHARES[0])
    assert _bars(bars) == [pytest.approx([s[m] for m in metrics], abs=1e-3) for s in SHARES]
    legend = [t.text for t in bars.iter(f"{SVG}text") if t.text in charts.LABEL_COLORS]
    assert legend == metrics  # a single judge's legend has no "no_majority" either
    panel = synthetic_board(2, 8, 2, seed=1)  # two judges and their panel, which can disagree
    both = score_table(panel.infos(), panel.rating_sets, bootstrap=20, seed=0, per_code=False)
    svg = ET.fromstring(charts.stacked_bars(both, "panel", OVERALL))
    assert [t.text for t in svg.iter(f"{SVG}text") if t.text in charts.LABEL_COLORS] == [
        *metrics,
        "no_majority",
    ]
    heat = ET.fromstring(charts.heatmap(table, scorer, OVERALL))
    rows = [g for g in heat.iter(f"{SVG}g") if g.get("class") == "cellv"]
    for shown, want in zip(rows, HEAT, strict=True):
        values = [t.text for t in shown.findall(f"{SVG}text")]
        assert values == [want.get(c, "0%") for c in CATEGORIES]
    # Radars: a vertex's distance from the centre is its dimension's rate; a response per
    # dimension, so each is 0 or 1.
    dims = dims_in({r.scope for r in table.rows})
    radars = ET.fromstring(charts.radars(table, scorer, dims))
    for c, svg in enumerate(radars.findall(f"{SVG}svg")):
        for poly in svg.findall(f"{SVG}polygon"):
            if poly.get("class") != "area":
                continue
            pts = [tuple(map(float, p.split(","))) for p in poly.get("points", "").split()]
            radii = [round(math.dist(p, (140, 92)) / 58, 2) for p in pts]
            want = [float(PRIMARIES[c][k] == poly.get("data-metric")) for k in range(4)]
            assert radii == want


@pytest.mark.parametrize("kind", ["bars", "heatmap", "radar"])
def test_app_and_site_show_the_same_svg(pages: dict[str, Any], kind: str) -> None:
    """One definition: after each page's own parsing, the chart in the app and in the site
    is the same markup, the escaped labels included."""
    site_sel, app_sel = WHERE[kind]
    html = [
        pages[p].eval_on_selector_all(f"{sel} svg", "ss => ss.map(s => s.outerHTML)")
        for p, sel in (("site", site_sel), ("app", app_sel))
    ]
    assert html[0] and html[0] == html[1]


@pytest.mark.parametrize("which", ["site", "app"])
def test_the_bars_and_heatmap_show_the_numbers_counted_by_hand(
    pages: dict[str, Any], which: str
) -> None:
    page = pages[which]
    bars_sel, heat_sel = WHERE["bars"][which == "app"], WHERE["heatmap"][which == "app"]
    runs = {r.run_id: i for i, r in enumerate(hand_board().runs)}  # the store may reorder them
    widths = page.eval_on_selector_all(
        f"{bars_sel} svg g.bar",
        "gs => gs.map(g => [g.dataset.runId, [...g.querySelectorAll('rect')]"
        ".map(r => r.getBBox().width)])",
    )
    metrics = list(SHARES[0])
    assert sorted(runs[r] for r, _ in widths) == [0, 1]
    for run_id, shown in widths:
        want = [charts.BAR_W * SHARES[runs[run_id]][m] for m in metrics]
        assert shown == pytest.approx(want, abs=0.06)
    cells = page.eval_on_selector_all(
        f"{heat_sel} svg g.heat-row",
        "gs => gs.map(g => [g.dataset.runId, [...g.querySelectorAll('.cellv text')]"
        ".map(t => t.textContent)])",
    )
    assert sorted(runs[r] for r, _ in cells) == [0, 1]
    for run_id, values in cells:
        assert values == [HEAT[runs[run_id]].get(c, "0%") for c in CATEGORIES]
    assert page.locator(f"{WHERE['radar'][which == 'app']} svg.radar").count() == 2


@pytest.mark.parametrize("which", ["site", "app"])
def test_hostile_labels_in_the_charts_are_text_and_nothing_runs(
    pages: dict[str, Any], which: str
) -> None:
    page = pages[which]
    boxes = ", ".join(sel[which == "app"] for sel in WHERE.values())
    # Each label is a chart's tooltip, character for character; none became an element.
    titles = page.locator(f"{WHERE['bars'][which == 'app']} svg text.axis title")
    assert sorted(titles.all_text_contents()) == sorted(LABELS)
    radar_titles = page.eval_on_selector_all(
        f"{WHERE['radar'][which == 'app']} svg.radar > title", "ts => ts.map(t => t.textContent)"
    )
    assert sorted(radar_titles) == sorted(f"{label}: rates by dimension" for label in LABELS)
    found = page.locator(
        ", ".join(f"{b} {tag}" for b in boxes.split(", ") for tag in ("script", "img", "b"))
    )
    assert found.count() == 0
    # Every chart ends where its markup ends: no label closed an <svg> or a <template> early.
    counts = page.eval_on_selector_all(
        "svg.bars, svg.heat, svg.radar", "ss => ss.map(s => s.querySelectorAll('rect').length)"
    )
    # bars: four label segments (one judge: no "no majority") for each of two models, four swatches
    assert sorted(counts) == [0, 0, 2 * 4 + 4, 2 * len(CATEGORIES)]
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []


def test_the_site_draws_no_chart_in_javascript_and_carries_each_scorers_charts(
    site: Path,
) -> None:
    """The site's charts are the Python ones: a template per scorer and chart, and no SVG is
    built in the scripts (no second definition to drift apart)."""
    index = (site / "index.html").read_text()
    ids = re.findall(r'<template id="(chart-[a-z]+-\d+)">', index)
    assert ids == ["chart-bars-0", "chart-heatmap-0", "chart-radar-0"]
    for name in ("board.js", "drift.js"):
        js = (Path(charts.__file__).parent / "static" / name).read_text()
        for drawing in ("createElementNS", "<svg", "polygon", "polyline", "<rect"):
            assert drawing not in js, (name, drawing)
    # The labels reach the markup only escaped.
    assert "<script>window.__pwned" not in index and "&lt;script&gt;window.__pwned" in index


#: Two names a cut at the end would make the same (issue 40): they differ only at the end.
ALIKE = (
    'openai-compat:smollm2 · "You are Juniper, a warm…" [max_tokens=64] (temperature=0.2)',
    'openai-compat:smollm2 · "You are Juniper, a warm…" [max_tokens=64] (temperature=0.7)',
)


def _shown(svg: ET.Element) -> list[str]:
    """The names a chart shows (its axis texts' own text, not their tooltips)."""
    return [t.text or "" for t in svg.iter(f"{SVG}text") if t.get("class") == "axis"]


def test_no_cut_makes_two_names_the_same_on_any_chart() -> None:
    data = hand_board()
    runs = tuple(dataclasses.replace(r, label=ALIKE[i]) for i, r in enumerate(data.runs))
    order = {r.run_id: i for i, r in enumerate(runs)}
    responses = tuple(dataclasses.replace(r, label=ALIKE[order[r.run_id]]) for r in data.responses)
    table = score_table(responses, data.rating_sets, bootstrap=20, seed=0, per_code=False)
    scorer = table.scorers[0]
    dims = dims_in({r.scope for r in table.rows})
    for svg in (
        ET.fromstring(charts.stacked_bars(table, scorer, OVERALL)),
        ET.fromstring(charts.heatmap(table, scorer, OVERALL)),
        ET.fromstring(charts.radars(table, scorer, dims)),
    ):
        names = [n for n in _shown(svg) if n.startswith(("openai", "…"))]
        assert len(names) == 2 and len(set(names)) == 2, names
        assert all(n != label for n, label in zip(names, ALIKE, strict=True))  # both were cut
        assert names[0].endswith("(temperature=0.2)") and names[1].endswith("(temperature=0.7)")


@pytest.mark.parametrize("room", [30.0, 60.0, 120.0, 288.0])
def test_fitted_names_are_distinct_at_any_width(room: float) -> None:
    """Names alike at the start, the end, or but for one character anywhere: each cut is
    distinct from every other shown name, and a name that fits is shown whole."""
    base = 'openai-compat:Qwen/Qwen3-8B · "You are Mia, the user\'s devoted companion"'
    names = [
        *ALIKE,
        base,
        base + " [seed=1]",
        base + " [seed=2]",
        base + " (on AI-companionship/INTIMA)",
        base + " (on intima-demo)",
        "x" * 40 + "a" + "x" * 40,
        "x" * 40 + "b" + "x" * 40,
        "short",
    ]
    shown = charts.fitted(names, room)
    assert len(set(shown.values())) == len(names)
    assert shown["short"] == "short" or room < charts._text_w("short")
