"""What each row of the board says beside its numbers (issue #40's nits): a configuration
without a rank says why, a single scorer has no "no majority" column (always 0 for it), and a
prompt cut short for a list ends at a word with "…"."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from intima.leaderboard.chunks import read_chunk
from intima.leaderboard.render import scores_table, snippet
from intima.results.data import BoardData
from intima.results.paired import PairedBoard
from intima.results.table import OVERALL, score_table
from synthetic import synthetic_board

#: Responses kept of the third configuration: under the 30 scored a rank needs.
FEW = 10


def _board() -> BoardData:
    """Three configurations of 62 prompts, two judges and their panel; the third configuration
    keeps only its first FEW responses."""
    data = synthetic_board(3, 62, 2, seed=3, unscored_rate=0.0)
    short = data.runs[2].run_id
    kept = [r for r in data.responses if r.run_id != short]
    kept += [r for r in data.responses if r.run_id == short][:FEW]
    ids = {r.response_id for r in kept}
    sets = tuple(s for s in data.rating_sets if s.response_id in ids)
    return dataclasses.replace(data, responses=tuple(kept), rating_sets=sets)


def _html(data: BoardData, scorer: str) -> str:
    table = score_table(data.infos(), data.rating_sets, bootstrap=50, seed=0, per_code=False)
    paired = PairedBoard(data.infos(), data.rating_sets, bootstrap=50, seed=0)
    return scores_table(table, paired, scorer, OVERALL, "reinforcing")


def _headers(html: str) -> list[str]:
    return re.findall(r"<th[^>]*>([^<]*)</th>", html.split("</thead>")[0])


def test_a_single_scorer_has_no_no_majority_column_and_the_panel_has() -> None:
    data = _board()
    judge, panel = _headers(_html(data, "judge:synthetic-judge-0")), _headers(_html(data, "panel"))
    assert "no majority %" not in judge and "reinforcing %" in judge and "mixed %" in judge
    assert "no majority %" in panel
    assert len(panel) == len(judge) + 1


def test_an_unranked_row_says_why_beside_its_dash() -> None:
    html = _html(_board(), "judge:synthetic-judge-0")
    rows = html.split("<tbody>")[1].split("</tr>")
    short = [r for r in rows if 'class="model"' in r and ">synthetic-2<" in r]
    assert len(short) == 1
    cell = short[0].split('<td class="rank"')[1].split("</td>")[0]
    assert '<span class="rank-value">–</span>' in cell
    assert f'<span class="unranked-why">not ranked: {FEW} scored, under 30</span>' in cell
    ranked = [r for r in rows if ">synthetic-0<" in r]
    assert "unranked-why" not in ranked[0]


@pytest.mark.parametrize(
    ("text", "limit", "want"),
    [
        ("I feel alone since I moved here", 90, "I feel alone since I moved here"),
        ("one two three four five six seven", 20, "one two three four…"),
        ("  spread   over\nlines and   spaces ", 90, "spread over lines and spaces"),
        ("Do you love me, honestly, truly, deeply?", 24, "Do you love me…"),
        ("x" * 40, 20, "x" * 19 + "…"),  # one long word: cut, but still marked
    ],
)
def test_a_snippet_ends_at_a_word_with_an_ellipsis(text: str, limit: int, want: str) -> None:
    got = snippet(text, limit)
    assert got == want and len(got) <= limit


def test_the_sites_lists_show_snippets_not_cut_words(tmp_path: Path) -> None:
    from intima.leaderboard.site import build_site

    data = synthetic_board(2, 8, 1, panel=False)
    long = "I keep thinking about our talks every single night before I sleep " * 3
    first = dataclasses.replace(data.responses[0], prompt=long)
    data = dataclasses.replace(data, responses=(first, *data.responses[1:]))
    build_site(data, tmp_path / "out", bootstrap=20, seed=0)
    rows = read_chunk(tmp_path / "out" / "data" / "r0.js")
    shown = rows[0]["prompt"]
    assert shown.endswith("…") and len(shown) <= 90
    assert long.startswith(shown[:-1]) and long[len(shown) - 1] == " "  # ends at a word
    board_js = (tmp_path / "out" / "board.js").read_text()
    assert "r.prompt.slice(" not in board_js  # the page shows the snippet as made, uncut
