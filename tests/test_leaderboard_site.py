"""The static site: built from a real store, opened in real headless Chromium."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import open_site, watched_page
from intima.core.errors import IntimaError
from intima.core.ratings import Level, Primary, primary_label
from intima.core.taxonomy import CATEGORIES
from intima.leaderboard.chunks import chunk_file, chunk_json, read_chunk
from intima.leaderboard.site import build_site, safe_json
from intima.results.data import BoardData, load_board
from intima.results.paired import PairedBoard
from intima.results.rank import format_rank
from intima.results.table import OVERALL, ScoreRow, ScoreTable, score_table
from intima.store import Store
from synthetic import synthetic_board, write_store

HOSTILE = (
    'Hello <script>window.__pwned = "script"</script>'
    '<img src="x" onerror="window.__pwned = \'img\'"> & "quotes" </pre></script>'
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    data = synthetic_board(4, 62, 3, seed=5, extra_response=HOSTILE)
    with Store.open(root / "store.db") as store:
        write_store(store, data)
        loaded = load_board(store)
    build_site(loaded, root / "out", bootstrap=300, seed=0)
    return root / "out"


@pytest.fixture(scope="module")
def page(site: Path, browser: Any) -> Iterator[object]:
    pg = open_site(watched_page(browser), site)
    yield pg
    pg.close()


def payload(site: Path) -> dict:
    html = (site / "index.html").read_text()
    m = re.search(r'<script type="application/json" id="board-data">(.*?)</script>', html, re.S)
    assert m
    return json.loads(m.group(1))


@functools.cache
def _table(site: Path) -> ScoreTable:
    """The board the site was built from, scored again with its B and seed (the intervals'
    design effect comes from the bootstrap)."""
    with Store.open(site.parent / "store.db") as store:
        data = load_board(store)
    return score_table(data.infos(), data.rating_sets, bootstrap=300, seed=0, per_code=False)


def _rows(site: Path, scorer: str, scope: str, metric: str) -> list[ScoreRow]:
    """Each configuration's rate [lo, hi], in the page's order of configurations: what the
    page must show."""
    return [_table(site).get(scorer, c["run_id"], scope, metric) for c in payload(site)["configs"]]


def row_order(pg) -> list[str]:
    return pg.eval_on_selector_all("#scores tbody tr", "rs => rs.map(r => r.dataset.runId)")


def test_site_is_one_self_contained_folder(site: Path) -> None:
    names = {p.name for p in site.iterdir()}
    assert names == {"index.html", "board.js", "board.css", "models.js", "data"}
    text = "".join(p.read_text() for p in site.rglob("*") if p.is_file())
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text  # no CDN, works offline
    js = (site / "board.js").read_text() + (site / "models.js").read_text()
    # Markup comes only from the Python-rendered fragments (DOMParser, inert), never a string
    # the scripts build.
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "eval(" not in js
    assert len(list((site / "data").glob("r*.js"))) == 4
    # Every fragment with store text has it escaped: the hostile response never as markup.
    chunks = "".join(r["html"] for p in (site / "data").glob("r*.js") for r in read_chunk(p))
    assert "<script>window.__pwned" not in chunks and "&lt;script&gt;window.__pwned" in chunks


def _ranked(rates: list[float], configs: list[dict]) -> list[str]:
    """Highest rate first, equal rates by name (results.rank.rank_groups)."""
    order = sorted(range(len(configs)), key=lambda i: (-rates[i], configs[i]["label"]))
    return [configs[i]["run_id"] for i in order]


def _wait_rows(page, ids: list[str]) -> None:
    page.wait_for_function(
        "want => Array.from(document.querySelectorAll('#scores tbody tr'))"
        ".map(r => r.dataset.runId).join() === want",
        arg=",".join(ids),
    )


def test_table_ranks_by_the_clicked_metric_and_shows_the_chosen_dimension(page, site: Path) -> None:
    data = payload(site)
    assert page.locator("#scores tbody tr").count() == 4
    assert page.errors == []
    scorer = data["scorers"][0]
    ids = [c["run_id"] for c in data["configs"]]
    rates = [r.rate for r in _rows(site, scorer, OVERALL, "reinforcing")]
    desc = _ranked(rates, data["configs"])
    assert desc != ids  # the synthetic data is built so that ranking changes the order
    assert row_order(page) == desc
    page.click("th[data-sort='boundary']")
    boundary = [r.rate for r in _rows(site, scorer, OVERALL, "boundary")]
    _wait_rows(page, _ranked(boundary, data["configs"]))
    assert page.locator("#rank-by").input_value() == "boundary"
    shown = page.locator("#scores tbody tr td[data-metric='boundary'] .rate").all_text_contents()
    assert [float(t.rstrip("%")) for t in shown] == pytest.approx(
        sorted((100 * r for r in boundary), reverse=True), abs=0.051
    )
    page.click("th[data-sort='boundary']")  # second click: the other way round
    assert row_order(page) == _ranked(boundary, data["configs"])[::-1]
    dim = "Relationship & Intimacy"  # another dimension: its own rates in the same cells
    page.select_option("#scope", dim)
    want = [f"{100 * r.rate:.1f}%" for r in _rows(site, scorer, dim, "boundary")]
    page.wait_for_function(
        "w => Array.from(document.querySelectorAll('#scores td[data-metric=boundary] .rate'))"
        ".map(c => c.textContent).sort().join() === w",
        arg=",".join(sorted(want)),
    )
    page.select_option("#scope", OVERALL)
    page.select_option("#rank-by", "reinforcing")
    _wait_rows(page, desc)


def test_sorting_by_model_name(page) -> None:
    page.click("th[data-sort='label']")
    names = page.locator("#scores tbody tr td.model").all_text_contents()
    assert names == sorted(names) and len(names) == 4


def test_switching_scorer_and_rank_changes_the_numbers(page, site: Path) -> None:
    page.select_option("#scorer", "panel")
    page.select_option("#rank-by", "boundary")
    page.wait_for_selector("#validity[data-scorer='panel']")
    first = page.locator("#scores tbody tr").first
    best = max(r.rate for r in _rows(site, "panel", OVERALL, "boundary"))
    text = first.locator("td[data-metric='boundary'] .rate").text_content()
    assert float(text.rstrip("%")) == pytest.approx(100 * best, abs=0.051)
    page.select_option("#rank-by", "reinforcing")


def test_explorer_shows_the_chosen_response_as_text_and_no_script_runs(
    page, site: Path, artifacts: Path
) -> None:
    rows = read_chunk(site / "data" / "r1.js")
    chosen = rows[7]
    page.select_option("#explore-config", "1")
    page.click(f"#explore-list li[data-response-id='{chosen['id']}']")
    text = page.locator("#explore-detail .intima-response").text_content()
    assert text == _response_text(site, chosen["id"])
    assert page.locator("#explore-detail").get_attribute("data-response-id") == chosen["id"]
    ratings = page.locator("#explore-detail table.intima-ratings tr").count()
    assert ratings == 1 + 4  # header + every scorer (3 judges + panel)
    # The hostile response (first response of configuration 0) shows as literal text.
    page.select_option("#explore-config", "0")
    page.locator("#explore-list li").first.click()
    assert page.locator("#explore-detail .intima-response").text_content() == HOSTILE
    assert page.locator("#explore-detail img").count() == 0
    assert page.locator("#explore-detail script").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []
    # Saved for people to look at (tests/artifacts); the README's copy is committed by hand,
    # so running the tests never changes a tracked file.
    page.screenshot(path=str(artifacts / "leaderboard_site.png"), full_page=True)


def test_radar_bars_and_heatmap_are_drawn(page) -> None:
    assert page.locator("#radar svg.radar").count() == 4
    assert page.locator("#bars svg rect").count() >= 4 * 5
    assert page.locator("#heatmap svg rect").count() == 4 * 13


def test_safe_json_cannot_close_the_script_tag() -> None:
    text = safe_json({"x": "</script><script>alert(1)</script>&"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"x": "</script><script>alert(1)</script>&"}


def test_the_data_files_are_packed_and_read_back_whole(site: Path) -> None:
    # Each data file holds its JSON gzipped (the fragments repeat their markup on every row):
    # read back, the explorer's rows are whole (the hostile response's text in its detail,
    # escaped) and the files weigh a fraction of the JSON they carry.
    files = sorted((site / "data").glob("*.js"))
    assert {p.name[0] for p in files} == {"r", "t", "p"}
    bodies = [read_chunk(p) for p in files]
    text = sum(len(json.dumps(b, separators=(",", ":"))) for b in bodies)
    size = sum(p.stat().st_size for p in files)
    assert size < text / 3, (size, text)
    rows = [row for p, b in zip(files, bodies, strict=True) if p.name[0] == "r" for row in b]
    assert len(rows) == 4 * 62  # one of them answers with the hostile text
    assert sum("&lt;script&gt;window.__pwned" in row["html"] for row in rows) == 1
    # The page loads them as scripts (so file:// works): one intimaChunk call, plain ASCII.
    first = files[0].read_text("ascii")
    assert first.startswith(f'window.intimaChunk("{files[0].stem}","') and first.endswith('");\n')


def test_a_data_file_reads_back_what_it_was_given_whatever_its_text(tmp_path: Path) -> None:
    # The data files' JSON is UTF-8 (orjson), or json's ASCII escapes where orjson refuses the
    # body (a lone surrogate): either way the same body reads back, as the page's
    # Response.text() and JSON.parse read it (UTF-8).
    plain = {"html": "<p>B − A – é 😀 \u2028</p>", "pairs": [["+1.5", 3, None]], "n": {7: "x"}}
    odd = {"text": "a lone \ud800 surrogate"}
    for key, body in (("plain", plain), ("odd", odd)):
        chunk_file(tmp_path, key, body)
        packed = tmp_path / f"{key}.js"
        assert read_chunk(packed) == json.loads(json.dumps(body))
    plain_bytes = chunk_json(plain)
    assert "B − A – é 😀".encode() in plain_bytes  # as UTF-8, not escaped
    assert json.loads(plain_bytes.decode("utf-8")) == json.loads(json.dumps(plain))
    assert chunk_json(odd) == b'{"text":"a lone \\ud800 surrogate"}'


def test_the_side_by_side_files_hold_every_ordered_pair_as_compare_prints_it(site: Path) -> None:
    """The site's pair files are filled in bulk (every ordered pair of a scope at once); each
    entry reads as ``intima compare`` prints that one pair (``difference_texts`` of the
    pair's own ``PairedBoard.difference``), the verdict's fragment included, for A and B
    either way round, and a configuration against itself reads "the same configuration"."""
    from intima.leaderboard.compare_view import difference_texts

    data, paired = payload(site), _paired(site)
    runs, n = [c["run_id"] for c in data["configs"]], len(data["configs"])
    for metric in ("reinforcing", "boundary"):
        s = data["scorers"].index("panel")
        chunk = read_chunk(site / "data" / f"p{s}_{data['metrics'].index(metric)}.js")
        for scope in data["scopes"]:
            for a in range(n):
                for b in range(n):
                    pp, ends, mde, v, count = chunk["pairs"][scope][a * n + b]
                    verdict = re.sub(r"<[^>]+>", "", chunk["verdicts"][v])
                    if a == b:
                        assert (pp, ends, mde, verdict, count) == (
                            "–",
                            "",
                            "–",
                            "the same configuration",
                            "–",
                        )
                        continue
                    d = paired.difference("panel", runs[a], runs[b], scope, metric)
                    says, judged = difference_texts(d)[3:]
                    assert (pp, ends, mde, verdict, count) == difference_texts(d)
                    if says in ("different", "no detectable difference"):
                        assert f'title="over {judged} judged pairs' in chunk["verdicts"][v]


def test_the_page_opens_on_its_table_without_waiting_for_a_data_file(page, site: Path) -> None:
    """First interaction: the first scorer's overall table is embedded in the page, so it is in
    place as the script runs; with every data file of the score tables refused, the page still
    opens on the whole table."""
    pg = watched_page(page.context.browser)  # the module's browser: one Playwright at a time
    refused: list[str] = []

    def refuse(route) -> None:
        refused.append(route.request.url)
        route.abort()

    pg.route(re.compile(r".*/data/t\d+_\d+\.js$"), refuse)
    open_site(pg, site)
    assert len(row_order(pg)) == 4
    assert pg.locator("#means table").count() == 1
    assert refused == [] and pg.errors == []
    pg.close()


def test_build_refuses_to_clear_a_folder_that_is_not_a_build(tmp_path: Path) -> None:
    (tmp_path / "important.txt").write_text("keep me")
    with pytest.raises(IntimaError, match="not a leaderboard build"):
        build_site(synthetic_board(1, 5, 1), tmp_path, bootstrap=10)
    assert (tmp_path / "important.txt").read_text() == "keep me"


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?\d+(?:\.\d+)?", text)]


def _chunk_rows(site: Path, i: int) -> list[dict]:
    return read_chunk(site / "data" / f"r{i}.js")


def _response_text(site: Path, response_id: str) -> str:
    with Store.open(site.parent / "store.db") as store:
        return next(r.response for r in store.responses() if r.response_id == response_id)


def _paired(site_root: Path) -> PairedBoard:
    with Store.open(site_root.parent / "store.db") as store:
        data = load_board(store)
    return PairedBoard(data.infos(), data.rating_sets, bootstrap=300, seed=0)


def _check_paired_rows(page, site: Path, paired: PairedBoard, a: int, b: int, metric: str) -> None:
    """Each scope's B - A [lo, hi], smallest detectable difference and verdict are the paired
    numbers of intima.results.paired (not the marginal intervals' overlap)."""
    data = payload(site)
    page.wait_for_selector("#cmp-scores[data-ready='1']")
    rows = page.locator("#cmp-scores tbody tr")
    assert rows.count() == len(data["scopes"])
    ids = [c["run_id"] for c in data["configs"]]
    for i, scope in enumerate(data["scopes"]):
        shown = _rows(site, "panel", scope, metric)
        va, vb = ((r.rate, r.lo, r.hi) for r in (shown[a], shown[b]))
        cells = rows.nth(i).locator("td").all_text_contents()
        # Shown to one decimal in percent: rate [lo, hi] of each, then B - A [lo, hi] in points.
        assert _numbers(cells[1]) == pytest.approx([100 * x for x in va[:3]], abs=0.051)
        assert _numbers(cells[2]) == pytest.approx([100 * x for x in vb[:3]], abs=0.051)
        d = paired.difference("panel", ids[a], ids[b], scope, metric)
        assert cells[6] == str(d.n_common)  # judged pairs
        if d.n_common < 10:  # under the documented minimum of judged pairs: no number
            assert cells[3:6] == ["–", "–", "too few judged pairs"] and d.diff is None
            continue
        assert d.diff is not None and d.lo is not None and d.hi is not None and d.mde is not None
        # The page has them rounded to 4 decimals (the data files), then to 0.1 point.
        want = [100 * round(x, 4) for x in (d.diff, d.lo, d.hi)]
        assert _numbers(cells[3]) == pytest.approx(want, abs=0.051)
        assert _numbers(cells[4]) == pytest.approx([100 * round(d.mde, 4)], abs=0.051)
        assert cells[5] == ("different" if d.different else "no detectable difference")


def test_side_by_side_shows_the_paired_difference_and_what_the_board_can_detect(
    page, site: Path
) -> None:
    paired = _paired(site)
    page.select_option("#scorer", "panel")
    page.select_option("#metric", "reinforcing")
    page.select_option("#cmp-a", "2")
    page.select_option("#cmp-b", "3")
    _check_paired_rows(page, site, paired, 2, 3, "reinforcing")
    page.select_option("#cmp-a", "3")  # the other order: the same interval, negated
    page.select_option("#cmp-b", "0")
    _check_paired_rows(page, site, paired, 3, 0, "reinforcing")
    page.select_option("#metric", "boundary")
    _check_paired_rows(page, site, paired, 3, 0, "boundary")
    page.select_option("#cmp-a", "2")
    page.select_option("#cmp-b", "3")
    page.select_option("#metric", "reinforcing")
    # One prompt, both configurations' responses next to each other, as text.
    a_rows, b_rows = _chunk_rows(site, 2), {r["prompt_id"]: r for r in _chunk_rows(site, 3)}
    chosen = a_rows[11]
    page.select_option("#cmp-prompt", chosen["prompt_id"])
    b_text = _response_text(site, b_rows[chosen["prompt_id"]]["id"])
    assert page.locator("#cmp-a-detail .intima-response").text_content() == _response_text(
        site, chosen["id"]
    )
    assert page.locator("#cmp-b-detail .intima-response").text_content() == b_text
    assert page.locator("#cmp-a-detail").get_attribute("data-response-id") == chosen["id"]
    assert page.errors == []


def test_side_by_side_shows_hostile_text_as_text(page) -> None:
    page.select_option("#cmp-a", "0")
    page.select_option("#cmp-b", "1")
    page.locator("#cmp-prompt option").first.wait_for(state="attached")
    first = page.locator("#cmp-prompt option").first.get_attribute("value")
    page.select_option("#cmp-prompt", first)
    assert page.locator("#cmp-a-detail .intima-response").text_content() == HOSTILE
    assert page.locator("#cmp-a-detail img, #cmp-a-detail script").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []


def test_small_scopes_are_shown_unranked_and_the_method_is_stated(page, site: Path) -> None:
    """A dimension holds about 15 of the 62 prompts: under the minimum n, so its rows show '–'
    instead of a rank; overall (62 responses, every prompt) is ranked."""
    page.select_option("#scope", "User Vulnerabilities")
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('#scores td.rank .rank-value')).every("
        "c => c.textContent === '–')"
    )
    assert page.locator("#scores tbody tr td.rank").count() == 4
    # each says why beside its '–' (issue #40): too few scored in this scope
    why = page.locator("#scores td.rank .unranked-why").all_text_contents()
    assert len(why) == 4 and all(re.fullmatch(r"not ranked: \d+ scored, under 30", w) for w in why)
    page.select_option("#scope", OVERALL)
    page.wait_for_function(
        "() => document.querySelector('#scores td.rank .rank-value').textContent !== '–'"
    )
    ranks = page.locator("#scores tbody tr td.rank .rank-value").all_text_contents()
    assert "–" not in ranks and len(ranks) == 4
    method = page.locator("#method").inner_text()
    assert "Wilson" in method and "not ranked" in method and "Validation" in method
    assert "rank interval" in method and "smallest detectable difference" in method.lower()


def test_ranks_show_their_rank_intervals_which_hold_the_rank(page, site: Path) -> None:
    data = payload(site)
    paired = _paired(site)
    page.select_option("#scorer", "judge:synthetic-judge-1")
    page.select_option("#rank-by", "boundary")
    page.wait_for_selector("#validity[data-scorer='judge:synthetic-judge-1']")
    shown = page.eval_on_selector_all(
        "#scores tbody tr",
        "rs => rs.map(r => [r.dataset.runId, r.querySelector('.rank-value').textContent,"
        " (r.querySelector('.rank-interval') || {}).textContent || ''])",
    )
    with Store.open(site.parent / "store.db") as store:
        board = load_board(store)
    table = score_table(board.infos(), board.rating_sets, bootstrap=300, seed=0, per_code=False)
    rows = [
        table.get("judge:synthetic-judge-1", c["run_id"], OVERALL, "boundary")
        for c in data["configs"]
    ]
    want = {r.run_id: r for r in paired.ranks("judge:synthetic-judge-1", OVERALL, "boundary", rows)}
    assert len(shown) == 4
    for run_id, rank, interval in shown:
        r = want[run_id]
        lo, hi = (
            (int(x) for x in re.findall(r"\d+", interval))
            if "–" in interval
            else [int(interval.strip(" []"))] * 2
        )
        assert (lo, hi) == (r.lo, r.hi)
        assert lo <= int(rank.lstrip("=")) <= hi
        assert rank == format_rank(r)
    # Beside the ranks, what they promise: each holds its own rank, not all of them at once.
    beside = page.locator("#board-direction").inner_text()
    assert "95% rank interval for that configuration alone" in beside
    assert "not every rank at once" in page.locator("#method").inner_text()


@pytest.fixture(scope="module")
def shared_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two configurations that answer alike wherever the prompt decides (shared prompt
    effects), B reinforcing on 25 more of the 368 prompts than A: a 7-point difference the
    pairing sees and the marginal intervals do not."""
    root = tmp_path_factory.mktemp("shared")
    base = synthetic_board(2, 368, 1, seed=9, unscored_rate=0.0, panel=False)
    first, second = (r.run_id for r in base.runs)
    a_sets = {rs.response_id: rs for rs in base.rating_sets}
    b_resp = {r.prompt_id: r.response_id for r in base.responses if r.run_id == second}
    reinforcing = dict.fromkeys(CATEGORIES, Level.LOW) | {"companionship_reinforcing": Level.HIGH}
    sets, flips = [], 0
    for r in base.responses:
        if r.run_id != first:
            continue
        rs = a_sets[r.response_id]
        sets.append(rs)
        levels = dict(rs.levels)
        if rs.primary != Primary.REINFORCING and flips < 25:
            levels, flips = reinforcing, flips + 1
        sets.append(rs.model_copy(update={"response_id": b_resp[r.prompt_id], "levels": levels,
                                          "primary": primary_label(levels)}))  # fmt: skip
    data = BoardData(base.runs, base.responses, tuple(sets), base.methodology)
    with Store.open(root / "store.db") as store:
        write_store(store, data)
        loaded = load_board(store)
    build_site(loaded, root / "out", bootstrap=300, seed=0)
    return root / "out"


def test_side_by_side_calls_a_paired_difference_different_where_intervals_overlap(
    page, shared_site: Path
) -> None:
    data = payload(shared_site)
    scorer = data["scorers"][0]
    a, b = _rows(shared_site, scorer, OVERALL, "reinforcing")[:2]
    assert a.hi >= b.lo and b.hi >= a.lo  # the marginal 95% intervals overlap
    other = watched_page(page.context.browser)  # the module's browser, a page of its own
    open_site(other, shared_site)
    other.select_option("#metric", "reinforcing")
    other.wait_for_selector("#cmp-scores[data-ready='1']")
    cells = other.locator("#cmp-scores tbody tr").first.locator("td").all_text_contents()
    assert other.errors == []
    other.close()
    assert cells[0] == "Overall"
    assert _numbers(cells[3])[0] == pytest.approx(100 * 25 / 368, abs=0.051)
    assert _numbers(cells[3])[1] > 0 and cells[5] == "different"
