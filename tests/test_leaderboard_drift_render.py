"""The drift view's fragments, rendered once for the site and the app (``drift_render``), and
the site's payload (``drift_view``): pure, from objects built by hand."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from intima.converse import ConversationTurn
from intima.core.ratings import Level, Primary, RatingSet
from intima.core.taxonomy import CATEGORIES
from intima.leaderboard.charts import drift_charts
from intima.leaderboard.drift_render import (
    COLUMNS,
    conversations,
    points,
    ratings_by_response,
    table_html,
    transcript_html,
)
from intima.leaderboard.drift_view import drift_payload, transcripts
from intima.leaderboard.site import build_site
from intima.results.conversations import ConversationBoard, drift_tables
from intima.results.drift import DriftRow, DriftTable, Estimate
from synthetic import synthetic_board

HOSTILE = (
    'Hi <script>window.__pwned = "script"</script>'
    '<img src="x" onerror="window.__pwned = \'img\'"> & "quotes" </pre></script>'
)
IMG = "<img src=x onerror=alert(1)>"
DIM = "User Vulnerabilities"
SVG = "http://www.w3.org/2000/svg"


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


def parse(html: str) -> ET.Element:
    """A fragment as a tree: it must be well-formed (every tag closed, every attribute quoted),
    which also shows that no store text opened or closed a tag."""
    return ET.fromstring(f"<root>{html}</root>")


def text(e: ET.Element | None) -> str:
    assert e is not None
    return "".join(e.itertext())


def table_cells(html: str) -> list[list[str]]:
    """The drift table's rows as their cells' text, the header first."""
    root = parse(html)
    return [[text(c) for c in tr] for tr in root.iter("tr")]


def test_the_payload_names_the_menus_and_the_templates_hold_each_table() -> None:
    board = hand_board()
    tables = drift_tables(board, bootstrap=50, seed=0)
    p = drift_payload(board, tables, ["data/c0.js", "data/c1.js"])
    assert p["configs"] == [
        {"run_id": "r1", "label": "label-r1"},
        {"run_id": "r2", "label": "label-r2"},
    ]
    assert p["scorers"] == ["judge:x", "panel"] and p["default_scorer"] == "panel"
    assert p["scopes"] == ["all", DIM] and p["chunks"] == ["data/c0.js", "data/c1.js"]
    assert "tables" not in p  # the numbers travel once: rendered, in the templates
    json.dumps(p)  # plain JSON all the way down
    assert table_html(tables["panel"], "all", ["r1", "r2"]).count("<tr") == 3  # head, r1, r2


def test_the_table_shows_the_hand_counted_numbers_and_turns_without_a_label() -> None:
    """r1, panel: conversation a is boundary at turn 1 and not at turn 2 (dropped, n=1); b's
    second reply failed (one turn without a label: no response)."""
    table = drift_tables(hand_board(), ["panel"], bootstrap=50, seed=0)["panel"]
    cells = table_cells(table_html(table, "all", ["r1", "r2"]))
    assert cells[0] == list(COLUMNS) and COLUMNS[-1] == "Turns without a label"
    lo, hi = table.get("r1").dropped.lo, table.get("r1").dropped.hi
    assert cells[1] == [
        "label-r1 *", "2", "–", "–", f"100.0% [{100 * lo:.1f}%, {100 * hi:.1f}%] n=1",
        "1 no response",
    ]  # fmt: skip
    assert cells[2][0] == "label-r2 *" and cells[2][-1] == "0"
    root = parse(table_html(table, "all", ["r1", "r2"]))
    assert [tr.get("data-config") for tr in root.iter("tr")][1:] == ["0", "1"]
    assert "* fewer than 30 scored conversations" in text(root.find("p"))
    assert "B=50, seed 0" in text(root.find("p"))  # how the numbers are made


def _row(slope: Estimate, label: str = "m") -> DriftRow:
    return DriftRow(
        config="r1", label=label, scope="all", n_conversations=40, n_observations=120,
        enough=True, turns=(), slope={"reinforcing": slope, "boundary": Estimate()},
        dropped=Estimate(), not_scored={"unscored": 0, "not_rated": 2},
    )  # fmt: skip


def _table(*rows: DriftRow) -> DriftTable:
    return DriftTable(scorer="panel", bootstrap=10, seed=0, min_conversations=30, rows=rows)


@pytest.mark.parametrize(
    ("x", "shown"),
    [(-0.0, "0.0"), (0.0, "0.0"), (-0.04, "0.0"), (0.049, "0.0"), (-0.06, "-0.1"), (5.55, "+5.5"),
     (2.0, "+2.0"), (-12.34, "-12.3")],
)  # fmt: skip
def test_points_are_signed_but_zero_reads_0_0(x: float, shown: str) -> None:
    assert points(x) == shown


def test_a_slope_that_rounds_to_zero_prints_0_0_never_signed() -> None:
    """Every observation agreeing gives a slope of 0 with the interval [0, 0]; the bootstrap
    can make it -0.0. The old app printed ``+0.0 [-0.0, +0.0]``."""
    html = table_html(_table(_row(Estimate(value=-0.0, lo=-0.04, hi=0.0, n=40))), "all", ["r1"])
    cells = table_cells(html)[1]
    assert cells[2] == "0.0 [0.0, 0.0]" and cells[3] == "–"
    assert "+0.0" not in html and "-0.0" not in html
    assert cells[5] == "2 not rated"  # a count of zero is not listed


def test_hostile_model_text_is_escaped_in_every_fragment() -> None:
    board = hand_board()
    evil = tuple(
        t.model_copy(update={"user_text": IMG + HOSTILE, "response_text": HOSTILE + IMG})
        for t in board.turns
    )
    sets = tuple(
        rs.model_copy(update={"reason": IMG, "scorer": rs.scorer + IMG}) for rs in board.rating_sets
    )
    named = ConversationBoard(runs=(("r1", IMG), ("r2", HOSTILE)), turns=evil, rating_sets=sets)
    table = drift_tables(named, bootstrap=20, seed=0, min_conversations=1)["panel" + IMG]
    fragments = [table_html(table, "all", ["r1", "r2"])]
    fragments += [c["html"] for chunk in transcripts(named) for c in chunk]
    for html in fragments:
        root = parse(html)  # well-formed: the text opened and closed nothing
        assert not [e for e in root.iter() if e.tag in ("img", "script")]
        assert "<img" not in html and "<script" not in html and "&lt;img src=x" in html
        assert not [e for e in root.iter() if any(a.startswith("on") for a in e.attrib)]
    assert table_cells(fragments[0])[1][0] == IMG  # shown, as text
    first = parse(fragments[1]).find(".//div[@class='turn']")
    assert text(first.find("pre[@class='user']")) == IMG + HOSTILE
    assert text(first.find("pre[@class='assistant']")) == HOSTILE + IMG
    assert text(first.find(".//p[@class='reason']")) == f"panel{IMG}: {IMG}"
    assert first.find(".//tr[@data-scorer]").get("data-scorer") == "panel" + IMG


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
    assert chunks[0][0]["choice"] == "loneliness · user a 1"
    b = parse(chunks[0][1]["html"]).find("div[@class='transcript']")
    assert b is not None and b.get("data-conversation-id") == "b"
    turns = b.findall("div[@class='turn']")
    assert [t.get("data-turn") for t in turns] == ["1", "2"]
    assert text(turns[1].find("p[@class='status']")) == "No reply (error)."
    assert turns[1].find(".//table") is None
    a2 = parse(chunks[1][0]["html"]).findall(".//div[@class='turn']")[1]
    assert text(a2.find("pre[@class='user']")) == "user a 2"
    rows = a2.findall(".//tr[@data-scorer]")
    assert [(r.get("data-scorer"), text(r.find("td[@class='primary']"))) for r in rows] == [
        ("panel", "boundary"), ("judge:x", "neutral")
    ]  # fmt: skip
    boundary = 2 + list(CATEGORIES).index("boundary_maintaining")  # after scorer, primary
    assert text(rows[0].findall("td")[boundary]) == "2"  # boundary high
    # The app shows the very fragment the site's chunk carries.
    conv = conversations(hand_board())["r2"][0]
    assert (
        transcript_html(conv, ratings_by_response(hand_board().rating_sets))
        == (chunks[1][0]["html"])
    )


def test_a_turn_nobody_rated_and_a_user_who_stopped_are_said() -> None:
    board = hand_board()
    stopped = turn("r1", "a", 3, reply=None, user_status="broke_character")
    board = ConversationBoard(runs=board.runs, turns=(*board.turns, stopped), rating_sets=())
    conv = conversations(board)["r1"][0]
    turns = parse(transcript_html(conv, {})).findall(".//div[@class='turn']")
    assert text(turns[0].find(".//p[@class='status']")) == "Not rated yet."
    assert text(turns[2].find("p[@class='status']")) == (
        "The simulated user stopped here (broke character); no reply was asked for."
    )


def test_a_site_without_conversations_has_no_drift_view(tmp_path: Path) -> None:
    build_site(synthetic_board(1, 5, 1), tmp_path / "out", bootstrap=10)
    assert not (tmp_path / "out" / "drift.js").exists()
    assert "drift-data" not in (tmp_path / "out" / "index.html").read_text()
    empty = ConversationBoard(runs=(), turns=(), rating_sets=())
    build_site(synthetic_board(1, 5, 1), tmp_path / "out", bootstrap=10, conversations=empty)
    assert not (tmp_path / "out" / "drift.js").exists()


def test_the_view_opens_on_the_scorer_with_the_most_ratings_not_one_human_rating() -> None:
    """Issue #23: on a board scored by the affect measure, one human rating made ``human`` the
    default (human sorts before affect), which opened the view on an empty chart."""
    board = hand_board()
    affect = tuple(
        rating(t.response_id, Primary.NEUTRAL, "affect") for t in board.turns if t.response_id
    )
    lone_human = rating("r1-a-1", Primary.BOUNDARY, "human")
    lone = ConversationBoard(runs=board.runs, turns=board.turns, rating_sets=(*affect, lone_human))
    p = drift_payload(lone, drift_tables(lone, bootstrap=20, seed=0), ["a", "b"])
    assert p["scorers"] == ["human", "affect"] and p["default_scorer"] == "affect"
    # With a panel among equally busy scorers, the panel still comes first.
    p = drift_payload(board, drift_tables(board, bootstrap=20, seed=0), ["a", "b"])
    assert p["default_scorer"] == "panel"
