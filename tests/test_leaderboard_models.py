"""The board knows what each model is (issue 33, item 8): the site, the app (and the Space,
which is the app) show each configuration's model card link, size, type, licence and date,
with a search box over models that filters the score table; hostile model info stays text."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import watched_page
from conftest import board_in_thread, board_server, invoke_cli
from fake_hub import point_hf_at, running_hub
from intima.leaderboard.models_view import hide_css, matches, model_rows, models_html
from intima.results.data import load_board
from intima.results.table import score_table
from intima.store import Store
from synthetic import synthetic_board, write_store
from test_providers_model_info import SMOL, SMOL_INFO

EVIL = "evil-org/evil-model"
HOSTILE = '<script>window.__pwned = "licence"</script><img src=x onerror="window.__pwned=1">'
EVIL_INFO: dict[str, Any] = {
    "pipeline_tag": "text-generation",
    "tags": ["base"],
    "cardData": {"license": HOSTILE},
    "safetensors": {"parameters": {"BF16": 7_241_732_096}, "total": 7_241_732_096},
    "createdAt": "2023-09-20T00:00:00.000Z",
}


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Three configurations (a Hub model, a Hub model with a hostile card, a model that is no
    Hub id), their info read from the fake Hub by ``intima board build``."""
    root = tmp_path_factory.mktemp("models")
    data = synthetic_board(3, 40, 2, seed=2)
    runs = (
        dataclasses.replace(data.runs[0], model_spec=SMOL),
        dataclasses.replace(data.runs[1], model_spec=EVIL),
        data.runs[2],
    )
    path = root / "store.db"
    with Store.open(path) as store:
        write_store(store, dataclasses.replace(data, runs=runs))
    with pytest.MonkeyPatch.context() as mp:
        for hub in running_hub():
            point_hf_at(hub, root / "hf-cache", root, mp)
            hub.add_repo(SMOL, repo_type="model", info=SMOL_INFO)
            hub.add_repo(EVIL, repo_type="model", info=EVIL_INFO)
            res = invoke_cli("board", "build", "--out", str(root / "site"), "--store", str(path),
                             "--bootstrap", "50")  # fmt: skip
            assert res.returncode == 0, res.stderr
    yield path


def _visible_run_ids(pg: Any, selector: str) -> list[str]:
    return pg.eval_on_selector_all(
        selector, "rs => rs.filter(r => r.offsetParent !== null).map(r => r.dataset.runId)"
    )


def test_the_site_shows_each_model_and_the_search_box_filters_the_score_table(
    browser: Any, store_path: Path
) -> None:
    pg = watched_page(browser)
    pg.goto((store_path.parent / "site" / "index.html").as_uri())
    pg.wait_for_selector("#models-table", timeout=10_000)
    rows = pg.eval_on_selector_all(
        "#models-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))"
    )
    by_model = {r[1]: r for r in rows}
    assert by_model[SMOL][2:] == ["135M", "instruct", "apache-2.0", "2024-10-31"]
    assert by_model[EVIL][2:] == ["7.2B", "base", HOSTILE, "2023-09-20"]  # text, not markup
    assert pg.get_attribute(f'#models-table a:text("{SMOL}")', "href") == (
        f"https://huggingface.co/{SMOL}"
    )
    assert len(rows) == 3 and pg.locator("#models-table a").count() == 2
    assert pg.evaluate("window.__pwned") is None and pg.errors == []
    everyone = _visible_run_ids(pg, "#scores tbody tr")
    assert len(everyone) == 3
    smol_run = pg.get_attribute(f'#models-table tr:has(a:text("{SMOL}"))', "data-run-id")
    pg.fill("#model-search", "smollm2 135m")
    assert _visible_run_ids(pg, "#scores tbody tr") == [smol_run]
    assert _visible_run_ids(pg, "#models-table tbody tr") == [smol_run]
    pg.select_option("#metric", "boundary")  # board.js redraws: the filter stays
    assert _visible_run_ids(pg, "#scores tbody tr") == [smol_run]
    pg.fill("#model-search", "")
    assert sorted(_visible_run_ids(pg, "#scores tbody tr")) == sorted(everyone)
    assert pg.errors == []
    pg.close()


def test_the_app_shows_the_same_and_its_search_box_filters_the_table(
    browser: Any, store_path: Path
) -> None:
    with board_in_thread(store_path, 50) as url:
        pg = watched_page(browser)
        pg.goto(url)
        pg.wait_for_selector("#board-models table", timeout=30_000)
        rows = pg.eval_on_selector_all(
            "#board-models tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))"
        )
        by_model = {r[1]: r for r in rows}
        assert by_model[SMOL][2:] == ["135M", "instruct", "apache-2.0", "2024-10-31"]
        assert by_model[EVIL][2:] == ["7.2B", "base", HOSTILE, "2023-09-20"]
        assert pg.get_attribute(f'#board-models a:text("{SMOL}")', "href") == (
            f"https://huggingface.co/{SMOL}"
        )
        assert pg.evaluate("window.__pwned") is None
        table = "#board-table table.intima-score-table tbody tr"
        assert len(_visible_run_ids(pg, table)) == 3
        pg.locator("#f-model-search textarea").fill("evil")
        pg.wait_for_function(
            "s => [...document.querySelectorAll(s)].filter(r => r.offsetParent).length === 1",
            arg=table, timeout=30_000,
        )  # fmt: skip
        evil_run = pg.get_attribute(f'#board-models tr:has(a:text("{EVIL}"))', "data-run-id")
        assert _visible_run_ids(pg, table) == [evil_run]
        assert pg.evaluate("window.__pwned") is None and pg.errors == []
        pg.close()


def test_the_apps_models_table_escapes_and_the_search_hides_only_plain_ids(
    store_path: Path,
) -> None:
    with Store.open(store_path) as store:
        data = load_board(store)
    table = score_table(data.infos(), data.rating_sets, bootstrap=20, seed=0)
    rows = model_rows(data, table.configs)
    page = models_html(rows)
    assert "<script>" not in page and "&lt;script&gt;window.__pwned" in page
    assert models_html(rows, "no model like this").count("<tr>") == 2  # head + "no match"
    style = hide_css(rows, "smollm2")
    assert style.count('tr[data-run-id="') == 4  # two rows hidden, in both tables
    hostile = [{**rows[0], "run_id": '"] {} body { display: none } [x="'}]
    assert hide_css(hostile, "nothing matches") == ""


def test_the_search_matches_the_model_facts_not_only_the_model_id(store_path: Path) -> None:
    """Issue 41: every search word of the tests above is in a model id, so a search text
    without the facts (size, type, licence, date) passed them. Here each word is a fact that is
    in no configuration's label, model spec or id: the app's search (``matches``) and the
    site's (each row's ``data-search``) find the model by it."""
    import html as html_lib
    import re

    with Store.open(store_path) as store:
        data = load_board(store)
    table = score_table(data.infos(), data.rating_sets, bootstrap=20, seed=0)
    rows = model_rows(data, table.configs)
    by_model = {r["model"]: r for r in rows}
    specs = " ".join(f"{r.label} {r.model_spec} {r.run_id}" for r in data.runs).lower()
    page = models_html(rows)
    site = {
        html_lib.unescape(run_id): html_lib.unescape(text)
        for run_id, text in re.findall(r'data-run-id="([^"]*)" data-search="([^"]*)"', page)
    }
    for word, model in (("7.2b", EVIL), ("base", EVIL), ("2023-09-20", EVIL),
                        ("apache-2.0", SMOL), ("2024-10-31", SMOL)):  # fmt: skip
        assert word not in specs and word not in model.lower()  # only the facts hold it
        found = [r["model"] for r in rows if matches(r, word)]
        assert found == [model], (word, found)
        assert [i for i, text in site.items() if word in text] == [by_model[model]["run_id"]]
    # size and type together, the licence alone: words of different facts of one model
    assert [r["model"] for r in rows if matches(r, "7.2B BASE")] == [EVIL]


def test_the_space_shows_the_model_info_its_results_repo_carries(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Space reads the published bundles: the model info travels in them (``run_models``)
    and its app draws the same models table, hostile licence escaped."""
    from intima.bundles.publish import publish
    from intima.leaderboard.hub_results import import_results
    from intima.leaderboard.space import SpaceSettings, _scored
    from intima.leaderboard.views import VIEWS, Pick

    with Store.open(store_path) as store:
        publish(store, str(tmp_path / "b"), [r[0] for r in store.query("SELECT run_id FROM runs")])
    for hub in running_hub():
        point_hf_at(hub, tmp_path / "hf-cache", tmp_path, monkeypatch)
        files = {f"bundles/one/{p.name}": p.read_bytes() for p in (tmp_path / "b").iterdir()}
        hub.add_repo("org/results", files)
        (tmp_path / "work").mkdir()
        with Store.open(tmp_path / "work" / "board.db") as store:
            got = import_results(store, "hf://datasets/org/results", tmp_path / "work")
            assert got.refused == [] and len(got.imported) == 1
            idx = _scored(store, SpaceSettings(results="hf://datasets/org/results", bootstrap=20))
    page = next(v for v in VIEWS if v.name == "board-models").render(idx.view, Pick())
    assert f'<a href="https://huggingface.co/{SMOL}" rel="noopener" target="_blank">' in page
    assert '<td class="size">135M</td><td class="kind">instruct</td>' in page
    assert "&lt;script&gt;window.__pwned" in page and "<script>" not in page


def test_board_serve_reads_missing_model_info_once_and_offline_says_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real command, in a process of its own (the suite's one ``intima board serve``
    subprocess: the other app tests serve the same function from a thread)."""
    data = synthetic_board(2, 20, 1, seed=3)
    path = tmp_path / "store.db"
    with Store.open(path) as store:
        write_store(store, dataclasses.replace(data, runs=(
            dataclasses.replace(data.runs[0], model_spec=SMOL), data.runs[1])))  # fmt: skip
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the server process reads it at start
    with board_server(path, 20, tmp_path / "serve.log"):
        with Store.open(path) as store:
            got = {
                r[0]: r[1:] for r in store.query("SELECT hub_id, source, detail FROM run_models")
            }
    assert got == {
        SMOL: ("unknown", "the Hub is offline"),
        None: ("config", "synthetic: synthetic:model-1"),
    }
