"""Issue 30: a bundle's identity. A forged copy of a real bundle (the same run and response ids,
other texts) used to replace the real results when its folder name sorted first, and two
contradicting bundles in one `intima import` were never compared (the second one's rows were
dropped silently). Now rows under one key must be the same row: a conflict refuses every
bundle on either side, naming them and the ids, whatever the names or order; identical copies
are accepted as one. Also: a results repo with a bundle at its root and in bundles/*, and a
folder named manifest.json."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
from fake_hub import RESULTS, FakeHub, push_bundle
from fake_openai import FakeOpenAI, FaultPlan
from full_bundle import refused_by_cli, rewrite, small_bundles
from intima.bundles.merge import import_bundle
from intima.bundles.publish import publish
from intima.core.config import ModelConfig
from intima.dataset import load_prompts
from intima.generate import generate
from intima.judges.loop import judge
from intima.leaderboard.hub_results import Imported, import_results
from intima.results.data import BoardData, load_board
from intima.store import Store
from reliability_summary import TALLY

FORGED = "a forged answer"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two bundles of one run each (``real`` and ``other``) from one store, and ``forged``: a
    copy of ``real`` with the same ids and other texts, its hashes recomputed. Made once for
    the module: every test reads them or changes a copy."""
    tmp_path = tmp_path_factory.mktemp("bundles")
    out = small_bundles(tmp_path, ("real", "other"))
    forged = tmp_path / "forged"
    shutil.copytree(tmp_path / "real", forged)
    rewrite(forged, "responses", lambda rows: [r.update(text=FORGED) for r in rows])
    return {**out, "forged": forged}


def _texts(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {t for (t,) in conn.execute("SELECT text FROM responses")}


def _crafted(refused: bool) -> None:
    """Count a crafted bundle in the reliability tally, and whether it was refused."""
    TALLY.bundles_crafted += 1
    TALLY.bundles_refused += refused


# -- the results repo (the Space, board build --from) --------------------------------------------
def _read_repo(tmp_path: Path, name: str) -> tuple[Imported, BoardData, Path]:
    """The results repo imported into a new store, as the Space and ``board build --from``
    do, and the board read from it."""
    work = tmp_path / f"work-{name}"
    work.mkdir()
    db = work / "board.db"
    with Store.open(db) as store:
        got = import_results(store, f"hf://datasets/{RESULTS}", work)
        board = load_board(store)
    assert [p.name for p in work.iterdir()] == ["board.db"]  # no scratch copy left
    return got, board, db


def test_a_forged_copy_sorting_first_does_not_replace_the_real_bundle(
    results_hub: FakeHub, real: dict[str, Path], tmp_path: Path
) -> None:
    push_bundle(results_hub, real["real"], "bundles/2026-real")
    push_bundle(results_hub, real["forged"], "bundles/0000-forged")
    push_bundle(results_hub, real["other"], "bundles/5555-other")
    got, board, db = _read_repo(tmp_path, "forged")
    refused = dict(got.refused)
    _crafted("0000-forged" in refused)
    assert FORGED not in _texts(db)  # the board never shows the forgery
    assert {r.label for r in board.runs} == {"other"}  # nor either side of the conflict
    assert got.imported == ["5555-other"] and set(refused) == {"0000-forged", "2026-real"}
    for name in refused:  # each side names both bundles and the ids
        assert "bundles '0000-forged', '2026-real'" in refused[name], refused[name]
        assert "responses rows under the same response_id '" in refused[name], refused[name]
        assert "(text differ)" in refused[name] and "1 more" in refused[name], refused[name]


def test_the_same_bundle_published_twice_is_shown_once(
    results_hub: FakeHub, real: dict[str, Path], tmp_path: Path
) -> None:
    push_bundle(results_hub, real["real"], "bundles/2026-real")
    push_bundle(results_hub, real["real"], "bundles/0000-again")
    got, board, db = _read_repo(tmp_path, "twice")
    assert got.refused == [] and sorted(got.imported) == ["0000-again", "2026-real"]
    assert [r.label for r in board.runs] == ["real"]
    assert len(_texts(db)) == 2 and FORGED not in _texts(db)


def test_a_bundle_at_the_repo_root_and_those_in_bundles_are_all_read(
    results_hub: FakeHub, real: dict[str, Path], tmp_path: Path
) -> None:
    push_bundle(results_hub, real["real"], "")
    push_bundle(results_hub, real["other"], "bundles/1-other")
    got, board, _ = _read_repo(tmp_path, "root")
    assert got.refused == [] and got.imported == ["(repo root)", "1-other"]
    assert {r.label for r in board.runs} == {"real", "other"}


# -- intima import --------------------------------------------------------------------------------
def _repo(tmp_path: Path, name: str, bundles: dict[str, Path]) -> Path:
    """A local folder of ``bundles/NAME/`` copies."""
    folder = tmp_path / name
    for at, bundle in bundles.items():
        shutil.copytree(bundle, folder / "bundles" / at)
    return folder


def _refused(src: Path, db: Path, *needles: str) -> str:
    """``intima import`` exits 2 with one error line holding every needle; the store is as it
    was (or not there, if it was not)."""
    before = db.read_bytes() if db.exists() else None
    res = invoke_cli("import", str(src), "--store", str(db), timeout=120)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, (res.returncode, res.stderr[-1500:])
    assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr[-1500:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert (db.read_bytes() if db.exists() else None) == before
    return lines[0]


def test_two_contradicting_bundles_in_one_import_are_both_refused(
    real: dict[str, Path], tmp_path: Path
) -> None:
    for order in (("a", "b"), ("b", "a")):  # whichever sorts first
        src = _repo(tmp_path, "".join(order), {order[0]: real["forged"], order[1]: real["real"]})
        TALLY.bundles_crafted += 1
        _refused(
            src, tmp_path / "store.db", "'bundles/a', 'bundles/b'", "response_id", "text differ"
        )
        TALLY.bundles_refused += 1


def test_identical_bundles_in_one_import_are_one(real: dict[str, Path], tmp_path: Path) -> None:
    src = _repo(tmp_path, "twice", {"a": real["real"], "b": real["real"], "c": real["other"]})
    db = tmp_path / "store.db"
    res = invoke_cli("import", str(src), "--store", str(db), timeout=120)
    assert res.returncode == 0, res.stderr[-1500:]
    assert "nothing new" in res.stdout  # the second copy adds nothing
    with Store.open(db) as store:
        assert {r.label for r in load_board(store).runs} == {"real", "other"}
    assert FORGED not in _texts(db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone() == (4,)


def test_a_bundle_contradicting_the_store_is_refused_naming_the_run(
    real: dict[str, Path], tmp_path: Path
) -> None:
    db = tmp_path / "store.db"
    with Store.open(db) as store:
        import_bundle(store, str(real["real"]))
    TALLY.bundles_crafted += 1
    _refused(real["forged"], db, "contradicts a row already in the store (of run 'real', ")
    TALLY.bundles_refused += 1


def test_the_same_prompt_under_another_response_id_is_a_conflict(
    real: dict[str, Path], tmp_path: Path
) -> None:
    """The other key of a response (its configuration and prompt): a second answer to one
    prompt under a new response id is a conflict too (its insert used to fail after the
    bundles before it were in the store)."""
    renamed = tmp_path / "renamed"
    shutil.copytree(real["real"], renamed)
    rewrite(renamed, "responses", lambda rows: rows[0].update(response_id="f" * 32))
    db = tmp_path / "store.db"
    with Store.open(db) as store:
        import_bundle(store, str(real["other"]))
    src = _repo(tmp_path, "keys", {"a": renamed, "b": real["real"]})
    TALLY.bundles_crafted += 1
    _refused(src, db, "'bundles/a', 'bundles/b'", "config_key/prompt_id", "(response_id differ)")
    TALLY.bundles_refused += 1


def test_a_root_bundle_does_not_hide_the_bundles_beside_it(
    real: dict[str, Path], tmp_path: Path
) -> None:
    src = _repo(tmp_path, "both", {"1-other": real["other"]})
    for f in real["real"].iterdir():
        shutil.copyfile(f, src / f.name)
    db = tmp_path / "store.db"
    res = invoke_cli("import", str(src), "--store", str(db), timeout=120)
    assert res.returncode == 0, res.stderr[-1500:]
    with Store.open(db) as store:
        assert {r.label for r in load_board(store).runs} == {"real", "other"}


def test_a_folder_named_manifest_json_is_one_error_line(
    real: dict[str, Path], tmp_path: Path
) -> None:
    src = _repo(tmp_path, "dir", {"a": real["real"]})
    (src / "bundles" / "a" / "manifest.json").unlink()
    (src / "bundles" / "a" / "manifest.json").mkdir()
    (src / "bundles" / "a" / "manifest.json" / "x.json").write_text("{}")
    TALLY.bundles_crafted += 1
    _refused(src, tmp_path / "store.db", "manifest.json: not a file")
    TALLY.bundles_refused += 1


def test_the_same_answers_measured_otherwise_are_one(real: dict[str, Path], tmp_path: Path) -> None:
    """The same texts at another speed and price (an honest second machine, or a republish
    after an upgrade) are no conflict: only what a row says is compared."""
    again = tmp_path / "again"
    shutil.copytree(real["real"], again)
    slower = {"latency_s": 99.0, "cost_usd": 0.5, "created_at": "2030-01-01T00:00:00Z"}
    rewrite(again, "responses", lambda rows: [r.update(slower) for r in rows])
    src = _repo(tmp_path, "measured", {"a": again, "b": real["real"]})
    res = invoke_cli("import", str(src), "--store", str(tmp_path / "store.db"), timeout=120)
    assert res.returncode == 0, res.stderr[-1500:]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(a bundle of one run of two prompts, each answer judged, the store it came from)."""
    root = tmp_path_factory.mktemp("judged")
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    try:
        db = root / "source.db"
        with Store.open(db) as store:
            answers = ModelConfig(spec=f"openai-compat:fake@{server.base_url}", max_retries=0)
            [run] = generate(store, load_prompts("demo").first(2), [answers])
            judge(store, [ModelConfig(spec=f"openai-compat:judge@{server.base_url}")])
            publish(store, str(root / "bundle"), [run.run_id])
    finally:
        server.stop()
    yield root / "bundle", db


def _scored_first(update: dict[str, Any]) -> Callable[[list[dict[str, Any]]], None]:
    """Change the first scored judgment."""

    def edit(rows: list[dict[str, Any]]) -> None:
        next(r for r in rows if r["status"] == "scored").update(update)

    return edit


def _folder_of(tmp_path: Path, bundles: dict[str, Path]) -> Path:
    folder = tmp_path / "-".join(bundles)
    for name, bundle in bundles.items():
        shutil.copytree(bundle, folder / "bundles" / name)
    return folder


def test_a_copy_with_other_ratings_is_refused_with_the_real_one(
    judged: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 30: the same judged content and judge, another verdict, in one import: neither
    bundle wins (the second one's rows used to be dropped silently, or the first to win)."""
    forged = tmp_path / "forged"
    shutil.copytree(judged[0], forged)
    with sqlite3.connect(judged[1]) as conn:
        label = conn.execute("SELECT primary_label FROM judgments WHERE status = 'scored'")
        other = "boundary" if label.fetchone()[0] != "boundary" else "reinforcing"
    rewrite(forged, "judgments", _scored_first({"primary_label": other}))
    db = tmp_path / "s.db"
    Store.open(db).close()
    refused_by_cli(
        _folder_of(tmp_path, {"0-forged": forged, "1-real": judged[0]}),
        db,
        "judgments rows under the same judgment_id",
        "between bundles 'bundles/0-forged', 'bundles/1-real' (primary_label differ)",
    )


def test_a_verdict_worded_otherwise_is_the_same_judgment(
    judged: tuple[Path, Path], tmp_path: Path
) -> None:
    """Two calls of one judge word one verdict differently: the same ratings with another
    rationale (and cost) are one judgment, not a conflict."""
    again = tmp_path / "again"
    shutil.copytree(judged[0], again)
    rewrite(again, "judgments", _scored_first({"rationale": "put otherwise", "cost_usd": 0.1}))
    src = _folder_of(tmp_path, {"0-again": again, "1-real": judged[0]})
    res = invoke_cli("import", str(src), "--store", str(tmp_path / "s.db"), timeout=120)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("unscored_first", [True, False])
def test_an_unscored_judgment_gives_way_to_a_scored_one_whatever_the_order(
    judged: tuple[Path, Path], tmp_path: Path, unscored_first: bool
) -> None:
    """A row in progress is no conflict, and the settled row stays whichever bundle comes
    first (an unscored judgment imported first used to keep the scored one out)."""
    unscored = tmp_path / "unscored"
    shutil.copytree(judged[0], unscored)
    gone = {"status": "unscored", "ratings_json": None, "primary_label": None,
            "reason": "no reply"}  # fmt: skip
    rewrite(unscored, "judgments", _scored_first(gone))
    names = ("0-a", "1-b") if unscored_first else ("1-b", "0-a")
    src = _folder_of(tmp_path, {names[0]: unscored, names[1]: judged[0]})
    db = tmp_path / "s.db"
    res = invoke_cli("import", str(src), "--store", str(db), timeout=120)
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(db) as conn, sqlite3.connect(judged[1]) as source:
        count = "SELECT status, COUNT(*) FROM judgments GROUP BY status ORDER BY status"
        assert conn.execute(count).fetchall() == source.execute(count).fetchall()
