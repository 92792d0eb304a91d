"""Prediction-powered shares on the board, end to end: responses from the fake server, a
seeded random sample judged by the fake judge server (``intima judge --sample``), every
response scored by the affect measure (a hashing embedder instead of the 90 MB model), then
the static site in headless Chromium and the app's view show the shares (both rendered by
``prediction_view.prediction_html``; ``test_leaderboard_parity.py`` compares them cell by cell)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import launch, watched_page
from conftest import invoke_cli
from fake_openai import FakeOpenAI
from fake_openai import _completion as fake_completion
from full_bundle import HashEmbedder
from intima.core.config import ModelConfig
from intima.dataset import load_prompts
from intima.leaderboard.app import BoardIndex
from intima.leaderboard.site import build_site
from intima.results.board import BoardView, assemble_board
from intima.results.data import load_board
from intima.results.table import score_table
from intima.store import Store

#: Of each configuration's 62 responses: about 26 judged pairs overall and 4-9 per dimension
#: (too few), 40 judged responses overall and 9-15 per dimension.
SAMPLE = 40
#: The minimums the docs give (docs/leaderboard.md, from the benchmarks): judged pairs for a
#: paired difference, judged responses of each configuration for a headline difference.
MIN_PAIRS, MIN_JUDGED = 10, 15


class _DistinctReplies(FakeOpenAI):
    """The fake server, its answer naming the system prompt: the two configurations' answers
    differ, so a judgment of one is never reused for the other (judgments are kept by text),
    and a judge on a sample of each judges few prompts of both, as with real models."""

    def _completion(self, payload: dict[str, Any]) -> dict[str, Any]:
        if "response_format" in payload:
            return super()._completion(payload)
        system = " ".join(m["content"] for m in payload["messages"] if m["role"] == "system")
        prompt = payload["messages"][-1]["content"]
        return fake_completion(payload, f"({system or 'plain'}) You said: {prompt[:60]}")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    from intima.affect.measure import AffectScorer
    from intima.affect.store_io import score_store
    from intima.generate import generate
    from intima.judges.loop import judge
    from intima.judges.samples import SampleSpec

    root = tmp_path_factory.mktemp("ppi")
    server = _DistinctReplies().start_in_thread()
    try:
        with Store.open(root / "s.db") as store:
            url = server.base_url
            configs = [
                ModelConfig(spec=f"openai-compat:fake@{url}", label="plain", max_retries=0),
                ModelConfig(spec=f"openai-compat:fake@{url}", label="kind", max_retries=0,
                            system_prompt="Be kind."),
            ]  # fmt: skip
            generate(store, load_prompts("demo"), configs)
            judge(
                store,
                [ModelConfig(spec=f"openai-compat:judge@{url}", label="J", max_retries=0)],
                sample=SampleSpec(size=SAMPLE),
            )
            score_store(store, scorer=AffectScorer(embedder=HashEmbedder()))
            data = load_board(store)
    finally:
        server.stop()
    build_site(data, root / "out", bootstrap=50, seed=0)
    yield root / "s.db", root / "out"


def _shares(db: Path) -> dict[str, list[Any]]:
    """judge:J's overall rows per label, in table order (what both pages render)."""
    with Store.open(db, create=False) as store:
        view = assemble_board(load_board(store), bootstrap=50, seed=0, per_code=False)
    run_ids = [c for c, _ in view.table.configs]
    rows = {(r.run_id, r.metric): r for r in view.prediction
            if r.judge == "judge:J" and r.scope == "overall"}  # fmt: skip
    return {m: [rows[(c, m)] for c in run_ids] for m in ("reinforcing", "boundary", "neutral")}


def test_the_rows_hold_every_sampled_configuration(built: tuple[Path, Path]) -> None:
    cells = _shares(built[0])
    for label in ("reinforcing", "boundary", "neutral"):
        for r in cells[label]:
            assert (r.n_labelled, r.n_total) == (SAMPLE, 62)
            assert r.lo <= r.estimate <= r.hi  # the board never shows a share outside its interval
            assert 0.0 <= r.raw <= 1.0
            assert (
                r.note == f"as judge:J would label all 62, from {SAMPLE} labelled and affect on all"
            )
            assert r.predictor == "affect"  # no judge labelled every response
    # The fake judge rates every category low: neutral, all of the sample.
    assert all(r.estimate > 0.8 for r in cells["neutral"])


def test_the_site_shows_the_shares_first_with_what_they_estimate(built: tuple[Path, Path]) -> None:
    from playwright.sync_api import sync_playwright

    cells = _shares(built[0])
    with sync_playwright() as pw:
        browser = launch(pw)
        page = watched_page(browser)
        page.goto((built[1] / "index.html").as_uri())
        page.wait_for_selector("#prediction table", timeout=10_000)
        order = page.eval_on_selector_all("main > section", "ss => ss.map(s => s.id)")
        assert order.index("prediction") < order.index("table")
        rows = page.eval_on_selector_all(
            "#prediction tbody tr",
            "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))",
        )
        method = page.text_content("#method")
        # the section's children in order: heading, the judge's status, the note, the table
        kinds = page.eval_on_selector_all(
            "#prediction .intima-prediction-view > *",
            "es => es.map(e => e.tagName + (e.classList.contains('intima-status') ? '.st' : ''))",
        )
        status = page.text_content("#prediction .intima-status")
        assert page.errors == []
        browser.close()
    # Issue #40: the shares open the page; whether their judge is validated is said beside them
    # (it sat lower, in Scores), before their table.
    assert kinds[:2] == ["H3", "P.st"] and kinds.index("P.st") < kinds.index("DIV")
    assert status is not None and status.startswith("judge:J not validated: no labelled set")
    assert [r[0] for r in rows] == ["plain", "kind"]
    for c, row in enumerate(rows):
        r = cells["reinforcing"][c]
        est, lo, hi, raw = r.estimate, r.lo, r.hi, r.raw
        assert row[1] == "affect"  # the predictor, named beside the model on every row
        # The share, its interval, and under them the predictor's raw share (one cell a label).
        assert row[2] == f"{100 * est:.1f}% [{100 * lo:.1f}%, {100 * hi:.1f}%]raw {100 * raw:.1f}%"
        assert len(row) == 6  # model, predictor, three labels, what it estimates
        assert row[-1] == f"as judge:J would label all 62, from {SAMPLE} labelled and affect on all"
    assert method is not None and "Prediction-powered share (PPI++" in method


def test_the_app_shows_the_same_shares(built: tuple[Path, Path]) -> None:
    cells = _shares(built[0])
    with Store.open(built[0], create=False) as store:
        data = load_board(store)
    table = score_table(data.infos(), data.rating_sets, bootstrap=50, seed=0, per_code=False)
    html = BoardIndex(BoardView(data, table)).scores("affect", "overall", "reinforcing")
    assert html.index("intima-prediction") < html.index("intima-score-table")
    for c in range(2):
        r = cells["reinforcing"][c]
        assert (
            f'<span class="rate">{100 * r.estimate:.1f}%</span>'
            f'<span class="ci"> [{100 * r.lo:.1f}%, {100 * r.hi:.1f}%]</span>'
        ) in html
    assert f"as judge:J would label all 62, from {SAMPLE} labelled and affect on all" in html


def test_no_sample_no_prediction_section(tmp_path: Path, fake_server: Callable[..., Any]) -> None:
    from intima.generate import generate

    server = fake_server()
    with Store.open(tmp_path / "s.db") as store:
        generate(
            store, load_prompts("demo"), [ModelConfig(spec=f"openai-compat:fake@{server.base_url}")]
        )
        data = load_board(store)
    build_site(data, tmp_path / "out", bootstrap=20, seed=0)
    assert 'id="prediction-0"' not in (tmp_path / "out" / "index.html").read_text()
    assert not (tmp_path / "out" / "prediction.js").exists()


def test_the_app_shows_nothing_for_a_scope_without_shares(built: tuple[Path, Path]) -> None:
    with Store.open(built[0], create=False) as store:
        data = load_board(store)
    from intima.results.table import code_scope

    table = score_table(data.infos(), data.rating_sets, bootstrap=20, seed=0)
    scope = code_scope(data.responses[0].code)
    html = BoardIndex(BoardView(data, table)).scores("affect", scope, "reinforcing")
    assert "intima-scores" in html and "intima-prediction" not in html


def test_every_string_of_the_prediction_view_is_escaped() -> None:
    """Issue 41: the configuration's name (a run's label, from a store or a bundle) came out
    unescaped and no test saw it. A hostile string in every string the view shows: parsed as a
    browser would, the fragment holds no element the string makes, and each string is text
    (whatever escaping writes it); the predictor is named on its row."""
    from html.parser import HTMLParser

    from intima.leaderboard.prediction_view import prediction_html
    from intima.results.prediction import PredictionRow

    evil = '<img src=x onerror="alert(1)">&\'{}'

    def row(metric: str, estimate: float | None) -> PredictionRow:
        return PredictionRow(f"judge:{evil}", f"predictor {evil}", f"run{evil}", "overall", metric,
                             estimate, 0.1, 0.5, 12, 40, 0.2, 0.25, f"note {evil}")  # fmt: skip

    class Parsed(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.tags: set[str] = set()
            self.cells: dict[str, str] = {}
            self.attrs: list[str] = []
            self._in: str | None = None

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.add(tag)
            self.attrs += [v or "" for _, v in attrs]
            self._in = dict(attrs).get("class") if tag == "td" else self._in

        def handle_data(self, data: str) -> None:
            if self._in:
                self.cells[self._in] = self.cells.get(self._in, "") + data

        def handle_endtag(self, tag: str) -> None:
            self._in = None if tag == "td" else self._in

    html = prediction_html(
        [row("reinforcing", 0.3), row("boundary", None), row("neutral", 0.4)],
        [(f"run{evil}", f"label {evil}")],
    )
    page = Parsed()
    page.feed(html)
    assert "img" not in page.tags and "alert(1)" not in "".join(page.tags)
    assert page.cells["model"] == f"label {evil}"
    assert page.cells["predictor"] == f"predictor {evil}"
    assert page.cells["what"] == f"note {evil}"
    assert f"judge:{evil}" in page.attrs and f"run{evil}" in page.attrs


def _judged(db: Path) -> dict[str, int]:
    """Per scope, the prompts both configurations' samples hold and judge:J scored in both:
    counted from the recorded samples and the stored verdicts, not by the paired code."""
    from intima.judges.samples import samples
    from intima.results.table import label_of

    with Store.open(db, create=False) as store:
        data = load_board(store)
        members = {s.run_id: set(s.members) for s in samples(store)}
    verdicts = {rs.response_id for rs in data.rating_sets
                if rs.scorer == "judge:J" and label_of(rs) is not None}  # fmt: skip
    judged = {(r.run_id, r.prompt_id): r.dimension for r in data.responses
              if r.response_id in members[r.run_id] and r.response_id in verdicts}  # fmt: skip
    a, b = (r.run_id for r in data.runs)
    both = [dim for (run, p), dim in judged.items() if run == a and (b, p) in judged]
    out = {"Overall": len(both)}
    for dim in both:
        out[dim] = out.get(dim, 0) + 1
    return out


def _mover(a: Any, b: Any) -> tuple[float, float, float]:
    """B - A of two shares and its interval, Newcombe's method 11 written out by hand: each
    share's interval reaches half a response further on the end its score interval leaves
    uncorrected (the upper end for a share of at most 1/2), then the reaches are combined."""

    def reach(r: Any) -> tuple[float, float]:
        half = 0.5 / r.n_labelled
        up = r.estimate <= 0.5
        return r.estimate - r.lo + (0 if up else half), r.hi - r.estimate + (half if up else 0)

    (a_lo, a_hi), (b_lo, b_hi) = reach(a), reach(b)
    d = b.estimate - a.estimate
    lo = d - (b_lo**2 + a_hi**2) ** 0.5
    hi = d + (b_hi**2 + a_lo**2) ** 0.5
    return 100 * d, 100 * max(lo, -1.0), 100 * min(hi, 1.0)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split("│")[1:-1]]


def test_compare_on_a_sampled_judge_counts_judged_pairs(built: tuple[Path, Path]) -> None:
    """Issue 39: a pair counts only where both sides were scored; under the minimum, "too few
    judged pairs" and no number; then the headline shares' B - A with its interval."""
    judged = _judged(built[0])
    assert judged["Overall"] >= MIN_PAIRS > min(judged.values())  # both kinds of row
    res = invoke_cli("compare", "plain", "kind", "--scorer", "J", "--bootstrap", "50",
                     "--store", str(built[0]), env={"COLUMNS": "250"})  # fmt: skip
    assert res.returncode == 0, res.stderr
    paired, headline = res.stdout.split("would label every response", 1)
    rows = {c[0]: c for c in map(_cells, paired.splitlines()) if len(c) == 7}
    for scope, n in judged.items():
        row = rows[scope]
        assert row[6] == str(n)
        if n < MIN_PAIRS:
            assert row[3:6] == ["–", "–", "too few judged pairs"]
        else:
            mde = float(row[4])
            assert 0 < mde <= 100 and row[5] in ("different", "no detectable difference")
    shares = {(r.run_id, r.scope): r for r in _all_rows(built[0], "reinforcing")}
    runs = [c for c, _ in _configs(built[0])]
    lines = {c[0]: c for c in map(_cells, headline.splitlines()) if len(c) == 6}
    for scope, row in lines.items():
        key = "overall" if scope == "Overall" else scope
        a, b = shares[(runs[0], key)], shares[(runs[1], key)]
        assert row[5] == f"{a.n_labelled} / {b.n_labelled}"
        if min(a.n_labelled, b.n_labelled) < MIN_JUDGED:
            assert row[3:5] == ["–", "too few judged responses"]
            continue
        d, lo, hi = _mover(a, b)
        assert [float(x) for x in row[3].replace("[", " ").replace("]", " ").replace(",", " ")
                .split()] == pytest.approx([d, lo, hi], abs=0.051)  # fmt: skip
    assert "Overall" in lines and lines["Overall"][4] in ("different", "no detectable difference")
    assert any(r[4] == "too few judged responses" for r in lines.values())


def _all_rows(db: Path, metric: str) -> list[Any]:
    with Store.open(db, create=False) as store:
        view = assemble_board(load_board(store), bootstrap=50, seed=0, per_code=False)
    return [r for r in view.prediction if r.judge == "judge:J" and r.metric == metric]


def _configs(db: Path) -> list[tuple[str, str]]:
    with Store.open(db, create=False) as store:
        view = assemble_board(load_board(store), bootstrap=50, seed=0, per_code=False)
    return list(view.table.configs)


def test_the_side_by_side_shows_judged_pairs_and_the_headline_difference(
    built: tuple[Path, Path],
) -> None:
    """The site (in Chromium) and the app show what ``intima compare`` prints."""
    from playwright.sync_api import sync_playwright

    judged = _judged(built[0])
    res = invoke_cli("compare", "plain", "kind", "--scorer", "J", "--bootstrap", "50",
                     "--store", str(built[0]), env={"COLUMNS": "250"})  # fmt: skip
    paired, headline = res.stdout.split("would label every response", 1)
    want = [c for c in map(_cells, paired.splitlines()) if len(c) == 7 and c[0] != "scope"]
    want_h = [c for c in map(_cells, headline.splitlines()) if len(c) == 6 and c[0] != "scope"]
    with sync_playwright() as pw:
        browser = launch(pw)
        page = watched_page(browser)
        page.goto((built[1] / "index.html").as_uri())
        page.wait_for_selector("#cmp-scores[data-ready='1']", timeout=10_000)
        page.select_option("#scorer", "judge:J")
        page.select_option("#cmp-a", "0")
        page.select_option("#cmp-b", "1")
        page.wait_for_selector("#cmp-headline-table", timeout=10_000)
        got = page.eval_on_selector_all(
            "#cmp-scores-table tbody tr",
            "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))",
        )
        got_h = page.eval_on_selector_all(
            "#cmp-headline-table tbody tr",
            "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))",
        )
        assert page.errors == []
        browser.close()
    # The same words and rounding as the terminal: one formatting path (issue 40).
    assert [[r[0], r[3], r[4], r[5], r[6]] for r in got] == [
        [w[0], w[3], w[4], w[5], w[6]] for w in want
    ]
    assert [r[6] for r in got] == [str(judged[r[0]]) for r in got]
    assert [[r[0], r[3], r[4], r[5]] for r in got_h] == [[w[0], w[3], w[4], w[5]] for w in want_h]
    with Store.open(built[0], create=False) as store:
        view = assemble_board(load_board(store), bootstrap=50, seed=0)
    a, b = (c for c, _ in view.table.configs)
    html = BoardIndex(view).compare("judge:J", "reinforcing", a, b)
    assert "too few judged pairs" in html and 'id="cmp-headline-table"' in html
    assert "too few judged responses" in html


def test_the_apps_headline_says_its_judge_is_not_validated_beside_it(
    built: tuple[Path, Path],
) -> None:
    """Issue #40, in the app: judge:J's validation status under the heading of its shares,
    before their table (the site's: in the test above)."""
    with Store.open(built[0], create=False) as store:
        data = load_board(store)
    table = score_table(data.infos(), data.rating_sets, bootstrap=50, seed=0, per_code=False)
    html = BoardIndex(BoardView(data, table)).scores("affect", "overall", "reinforcing")
    status_at = html.index('intima-status" data-scorer="judge:J"')
    assert html.index("As judge:J would label") < status_at < html.index('intima-prediction"')
    assert "judge:J</strong> not validated: no labelled set" in html
