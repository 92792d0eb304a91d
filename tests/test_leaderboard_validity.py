"""Validation cards and the raw share with its mean score on the board: the shipped affect card,
a scorer marked as unvalidated, cards from a store's reports, escaping, in real Chromium and in
the app's HTML; and no error-corrected share anywhere (issue 31: it was worse than raw)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from browser import open_site, watched_page
from intima.results.board import BoardView
from intima.results.cards import Card, correcting_card, shipped_cards, stored_cards
from intima.results.data import BoardData, load_board
from intima.results.sources import affect_version
from intima.store import Store, now
from synthetic import synthetic_board, write_store

HOSTILE = '<img src=x onerror="window.__pwned=1">set<script>window.__pwned=2</script>.jsonl'
REINF = "companionship_reinforcing"


def _with_affect(data: BoardData, seed: int = 2) -> BoardData:
    """The synthetic board plus an ``affect`` scorer (levels and a continuous measure) and the
    cards a loaded board would carry: the shipped affect card and a hostile stored one."""
    rng = np.random.default_rng(seed)
    judge = {
        rs.response_id: rs for rs in data.rating_sets if rs.scorer == "judge:synthetic-judge-1"
    }
    sets, breakdown = list(data.rating_sets), {}
    for r in data.responses:
        base = judge.get(r.response_id)
        if base is None or not base.scored:
            continue
        sets.append(base.model_copy(update={"scorer": "affect", "reason": None}))
        measure = round(float(rng.random()), 3)
        breakdown[r.response_id] = [[REINF, int(base.levels[REINF]), measure]]
    hostile = Card(
        scorer="judge:synthetic-judge-1",
        version="judge-prompt-x",
        source="store",
        set_name=HOSTILE,
        set_sha256="ab" * 32,
        n=300,
        protocol="intima validate",
        auroc=0.8,
        confusion_labels=["reinforcing", "boundary", "neutral"],
        confusion=[[40, 10, 0], [12, 230, 8], [0, 0, 0]],
    )
    method = dataclasses.replace(
        data.methodology,
        affect_version=affect_version(),
        cards=(*shipped_cards(affect_version()), hostile),
    )
    return dataclasses.replace(data, rating_sets=tuple(sets), affect=breakdown, methodology=method)


def test_the_shipped_affect_version_has_a_card_made_by_the_benchmark() -> None:
    """Guard: a new affect version must ship its figures (run benchmarks/affect_card.py)."""
    [card] = shipped_cards(affect_version())
    assert card.scorer == "affect" and card.version == affect_version()
    assert card.set_name == "companion-responses-dev.jsonl" and len(card.set_sha256) == 64
    assert card.protocol.startswith("leave-one-model-out")
    assert len(card.auroc_by_group) == 4 and all(0.5 < v <= 1 for v in card.auroc_by_group.values())
    assert card.graded is not None
    assert card.graded.set_name.startswith("relationship-graded-dev.jsonl")
    rates = card.error_rates()["reinforcing"]
    assert rates.n_pos + rates.n_neg == card.n and 0 < rates.recall <= 1
    raw = json.loads(
        (Path(__file__).parents[1] / "src/intima/data/affect_validation.json").read_text()
    )
    assert raw[affect_version()]["made_by"]["script"] == "benchmarks/affect_card.py"


def test_reports_in_a_store_become_cards_and_damaged_rows_are_skipped(tmp_path: Path) -> None:
    report = {
        "n": 9,
        "groups": {
            "overall": {
                "auroc": 0.7,
                "auroc_lo": 0.6,
                "auroc_hi": 0.8,
                "macro_f1_rb": 0.5,
                "kappa": 0.3,
                "confusion_labels": ["reinforcing", "boundary", "neutral", "unscored"],
                "confusion": [[2, 1, 0, 1], [1, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
            },
            "model=a": {"auroc": 0.65},
        },
    }
    graded = {"kind": "graded", "groups": {"overall": {"spearman": 0.61}}}
    with Store.open(tmp_path / "s.db") as store:
        with store.transaction() as conn:
            rows = [
                ("set.jsonl", "judge:j", json.dumps(report)),
                ("g.jsonl", "affect", json.dumps(graded)),
                ("bad.jsonl", "x", "{not json"),
                ("ins.jsonl", "judge:j", json.dumps({**report, "in_sample": True})),
            ]
            for name, scorer, text in rows:
                conn.execute(
                    "INSERT INTO validation_reports (set_sha256, set_name, scorer, scorer_version, "
                    "by_columns, n, report_json, package_version, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (name * 4, name, scorer, "v1", "", 9, text, "0", now()),
                )
        cards = {c.set_name: c for c in stored_cards(store)}
    assert set(cards) == {"set.jsonl", "g.jsonl", "ins.jsonl"}
    # A report on the rows the scorer was fitted on is shown as such, never used to correct.
    assert cards["ins.jsonl"].in_sample and "in-sample" in cards["ins.jsonl"].summary()
    assert correcting_card([cards["ins.jsonl"], cards["set.jsonl"]]) == cards["set.jsonl"]
    judge = cards["set.jsonl"]
    assert judge.auroc_by_group == {"a": 0.65} and judge.groups_title == "AUROC by model"
    r = judge.error_rates()["reinforcing"]
    assert (r.tp, r.n_pos, r.fp, r.n_neg) == (2, 3, 1, 5)  # the unscored column is left out
    assert cards["g.jsonl"].graded is not None and cards["g.jsonl"].graded.spearman == 0.61


def test_a_loaded_board_carries_the_shipped_card_and_the_stores_reports(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        write_store(store, synthetic_board(2, 31, 1, seed=3))
        board = load_board(store)
    assert [c.source for c in board.methodology.cards] == ["shipped"]
    from intima.leaderboard.app import methodology_html
    from intima.results.table import score_table

    html = methodology_html(BoardView(board, score_table([], [])))
    assert "companion-responses-dev.jsonl" in html and "no scorer validated" not in html
    assert "Rogan" not in html and "corrected" not in html.lower()


def test_the_app_shows_cards_marks_unvalidated_scorers_and_escapes_store_text() -> None:
    from intima.leaderboard.app import BoardIndex
    from intima.results.table import score_table

    data = _with_affect(synthetic_board(3, 62, 2, seed=1))
    table = score_table(data.infos(), data.rating_sets, bootstrap=100, seed=0)
    ix = BoardIndex(BoardView(data, table))
    affect = ix.scores("affect", "overall", "reinforcing")
    assert "intima-validated" in affect and "leave-one-model-out" in affect
    assert "Raw reinforcing share" in affect and "mean reinforcing measure" in affect
    assert "intima-means" in affect and affect.count("<tr data-run-id") == 2 * 3
    # The affect card has error rates (recall, false positives), yet no share is "corrected".
    for scorer in ("affect", "judge:synthetic-judge-1"):
        for metric in ("reinforcing", "boundary", "neutral"):
            html = ix.scores(scorer, "overall", metric)
            assert "corrected" not in html.lower() and "rogan" not in html.lower()
    unvalidated = ix.scores("judge:synthetic-judge-0", "overall", "reinforcing")
    assert "intima-unvalidated" in unvalidated and "not validated" in unvalidated
    hostile = ix.scores("judge:synthetic-judge-1", "overall", "reinforcing")
    assert "<script>window" not in hostile and "&lt;script&gt;" in hostile
    assert "<img" not in hostile


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from intima.leaderboard.site import build_site

    out = tmp_path_factory.mktemp("vsite") / "out"
    build_site(_with_affect(synthetic_board(3, 62, 2, seed=1)), out, bootstrap=200, seed=0)
    return out


@pytest.fixture(scope="module")
def page(site: Path, browser: Any) -> Iterator[object]:
    pg = open_site(watched_page(browser), site)
    yield pg
    pg.close()


def _choose(page, scorer: str) -> None:
    page.select_option("#scorer", scorer)
    page.wait_for_selector(f"#validity[data-scorer='{scorer}']")


def test_the_site_shows_the_shipped_card_beside_the_affect_numbers(page) -> None:
    _choose(page, "affect")
    box = page.locator("#validity")
    assert "intima-validated" in (box.get_attribute("class") or "").split()
    box.locator("summary").first.click()
    text = box.inner_text()
    assert "companion-responses-dev.jsonl" in text and "leave-one-model-out" in text
    assert "AUROC per held-out model" in text and "phi4:14b" in text
    assert "relationship-graded-dev.jsonl" in text and "Spearman" in text
    assert "docs/affect.md" in text
    assert "Error rates: reinforcing" in text and "Error rates: boundary" in text
    rows = page.locator("#mean-scores tbody tr")
    assert rows.count() == 3
    assert "%" in rows.first.locator("td.raw").inner_text()
    assert page.locator("#mean-scores td.mean").first.inner_text() != "–"
    assert page.errors == []


def test_the_site_shows_no_corrected_share_for_validated_scorers(page) -> None:
    """Issue 31: a Rogan-Gladen share fitted on other models' answers was worse than raw on the
    dev set, so no number or word of it is left on the page, whichever scorer or label."""
    for scorer in ("affect", "judge:synthetic-judge-1"):
        _choose(page, scorer)
        for metric in ("reinforcing", "boundary", "neutral"):
            page.select_option("#rank-by", metric)
            page.wait_for_function(
                "m => document.querySelector('#means').innerText.toLowerCase()"
                ".includes('raw ' + m + ' share')",
                arg=metric,
            )
            text = page.locator("#app").inner_text().lower()
            assert "corrected" not in text and "rogan" not in text
            assert page.locator("#corrected-scores, #corrected, td.corrected").count() == 0
            assert f"raw {metric} share" in page.locator("#means").inner_text().lower()
    assert page.errors == []


def test_the_site_marks_an_unvalidated_scorer_and_shows_store_text_as_text(page) -> None:
    _choose(page, "judge:synthetic-judge-0")
    box = page.locator("#validity")
    assert "intima-unvalidated" in (box.get_attribute("class") or "").split()
    assert "not validated" in box.inner_text()
    assert page.locator("#mean-scores tbody tr").count() == 3
    _choose(page, "judge:synthetic-judge-1")
    box = page.locator("#validity")
    box.locator("summary").first.click()
    assert HOSTILE in box.inner_text()  # literal text, no element made of it
    assert page.locator("#validity img, #validity script").count() == 0
    assert page.evaluate("window.__pwned") is None
    method = page.locator("#method").inner_text()
    assert "companion-responses-dev.jsonl" in method and "no scorer validated" not in method
    assert "Rogan" not in method and "Mean score" in method
    assert page.errors == []
