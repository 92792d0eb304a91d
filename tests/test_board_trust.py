"""Issue 37, items 2 and 4: ``board build --store`` and ``board serve`` take a trust set, as
``board build --from`` and ``intima import`` do, and a bundle's model facts are the Hub's where
the board can read them.

The store under test is real: this machine's run and judge (made in the store), and publisher
"bee"'s bundle imported beside them (bee's own run, and bee's judge of this machine's run,
which bee's bundle carries along). Rows of a publisher outside the trust set are left out and
said so; this machine's run stays this machine's even though bee's bundle carried it.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
from fake_hub import FakeHub, point_hf_at, running_hub
from fake_openai import FakeOpenAI, FaultPlan
from intima.bundles.merge import import_bundle
from intima.bundles.publish import publish
from intima.bundles.trust import default_trust, read_trust
from intima.core.config import ModelConfig
from intima.dataset import load_prompts
from intima.generate import generate
from intima.judges.loop import judge
from intima.leaderboard.stored import StoredBoard, load_stored
from intima.providers.model_info import record
from intima.store import Store
from signed import new_key, public, resign, trust_file

N = 4
SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"
SMOL_INFO: dict[str, Any] = {
    "safetensors": {"parameters": {"BF16": 134515008}, "total": 134515008},
    "pipeline_tag": "text-generation",
    "tags": ["conversational"],
    "cardData": {"license": "apache-2.0"},
    "createdAt": "2024-10-31T13:43:30.000Z",
}
#: what bee's bundle says of its model (a forged card, licence and size)
PHISHING = ("attacker/phishing-card", "mit", 70_000_000_000)


def _judge(store: Store, url: str, label: str) -> None:
    judge(store, [ModelConfig(spec=f"openai-compat:judge@{url}", label=label, max_retries=0)])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """ours.db (this machine's run 'ours', judged by judge-a), bee's key, and store.db: ours.db
    with bee's bundle imported (bee's run 'theirs' of SMOL, its model facts forged, and bee's
    judge-b of both runs)."""
    tmp = tmp_path_factory.mktemp("trust")
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    prompts = load_prompts("demo").first(N)
    try:
        with Store.open(tmp / "ours.db") as store:
            generate(store, prompts, [ModelConfig(spec=f"openai-compat:fake@{server.base_url}",
                                                  label="ours")])  # fmt: skip
            _judge(store, server.base_url, "judge-a")
        shutil.copy(tmp / "ours.db", tmp / "bee.db")
        with Store.open(tmp / "bee.db") as store:
            store.query("DELETE FROM judgments")  # bee publishes its own judge only
            generate(store, prompts, [ModelConfig(spec=f"openai-compat:{SMOL}@{server.base_url}",
                                                  label="theirs")])  # fmt: skip
            _judge(store, server.base_url, "judge-b")
            card, licence, size = PHISHING
            store.query(
                "INSERT INTO run_models (run_id, source, hub_id, parameters, license, checked_at) "
                "SELECT run_id, 'hub', ?, ?, ?, '2026-01-01' FROM runs WHERE label = 'theirs'",
                (card, size, licence),
            )
            publish(store, str(tmp / "bee-bundle"))
    finally:
        server.stop()
    bee = new_key(tmp / "bee.key")
    resign(tmp / "bee-bundle", bee, name="bee")
    both = trust_file(tmp / "both.toml", None, bee)
    shutil.copy(tmp / "ours.db", tmp / "store.db")
    with Store.open(tmp / "store.db") as store:
        import_bundle(store, str(tmp / "bee-bundle"), trust=read_trust(both))
        record(store)  # this store's model facts, read now (the board would read them once)
    yield {"tmp": tmp, "store": tmp / "store.db", "bee": bee, "both": both,
           "bee_only": trust_file(tmp / "bee.toml", bee)}  # fmt: skip


def _fp(key: Path) -> str:
    return hashlib.sha256(base64.b64decode(public(key))).hexdigest()[:8]


def _seen(board: StoredBoard) -> tuple[set[str], set[str]]:
    """The board's configurations and scorers."""
    return {r.label for r in board.data.runs}, {s.scorer for s in board.data.rating_sets}


def test_by_default_the_board_of_a_store_leaves_out_an_untrusted_publisher(
    world: dict[str, Path],
) -> None:
    board = load_stored(world["store"], default_trust())
    runs, scorers = _seen(board)
    # this machine's run stays, though bee's bundle carried it; bee's run and judge do not
    assert runs == {"ours"}
    assert scorers == {"judge:judge-a"}
    fp = _fp(world["bee"])
    assert set(board.left_out) == {f"bee (key {fp})"}, board.left_out
    # every row only bee published: its run's row, its N run_prompts and N answers, its model
    # facts, and its judge's N verdicts (both runs answer alike: one verdict per content; the
    # prompts are this store's run's too)
    assert board.left_out[f"bee (key {fp})"] == 1 + N + N + 1 + N
    assert "not in this machine's publisher key only" in board.notes()[0]
    with Store.open(world["store"]) as store:  # the store itself is unchanged
        assert store.query("SELECT COUNT(*) FROM runs")[0][0] == 2


def test_a_trust_file_shows_the_publishers_it_names(world: dict[str, Path]) -> None:
    board = load_stored(world["store"], read_trust(world["both"]))
    assert _seen(board) == ({"ours", "theirs"}, {"judge:judge-a", "judge:judge-b", "panel"})
    assert board.left_out == {}
    bee = f"judge:judge-b: bee (key {_fp(world['bee'])})"
    assert bee in board.data.methodology.publishers, board.data.methodology.publishers
    # bee alone: this store's own rows are left out, bee's (and the run bee carried) shown
    board = load_stored(world["store"], read_trust(world["bee_only"]))
    assert _seen(board) == ({"ours", "theirs"}, {"judge:judge-b"})
    assert set(board.left_out) == {"this store"}
    # all this store made alone: judge-a's N verdicts and its own run's model facts
    assert board.left_out["this store"] == N + 1


def test_board_build_store_takes_trust_and_says_what_it_left_out(
    world: dict[str, Path], tmp_path: Path
) -> None:
    site = tmp_path / "site"
    plain = invoke_cli("board", "build", "--out", str(site), "--store", str(world["store"]),
                       "--bootstrap", "20")  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-800:]
    fp = _fp(world["bee"])
    assert f"published by bee (key {fp}): not in this machine's publisher key" in plain.stderr
    page = (site / "index.html").read_text()
    assert "judge-b" not in page and "theirs" not in page
    trusted = invoke_cli("board", "build", "--out", str(site), "--store", str(world["store"]),
                         "--bootstrap", "20", "--trust", str(world["both"]))  # fmt: skip
    assert trusted.returncode == 0, trusted.stderr[-800:]
    assert "left out" not in trusted.stderr
    page = (site / "index.html").read_text()
    assert "judge-b" in page and "theirs" in page
    # a trust file of a stranger alone: nothing to show, said so (not "run intima run first")
    stranger = trust_file(tmp_path / "stranger.toml", new_key(tmp_path / "stranger.key"))
    none = invoke_cli("board", "build", "--out", str(tmp_path / "s2"), "--store",
                      str(world["store"]), "--trust", str(stranger))  # fmt: skip
    assert none.returncode == 2, none.stderr[-800:]
    assert none.stderr.count("left out") == 2  # bee's rows, and this store's
    said = " ".join(none.stderr.split())  # (the terminal's width wraps the lines)
    assert "naming this machine's key (`intima publisher` prints it)" in said
    assert f"has no responses of a publisher in the trust file {stranger}" in said


def test_board_serve_takes_trust(world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's data, through the command and the API it calls (the server is not started)."""
    import gradio as gr

    from intima.leaderboard import app

    seen: list[Any] = []
    real = app.build_app
    monkeypatch.setattr(
        app, "build_app", lambda view, *a, **k: seen.append(view) or real(view, *a, **k)
    )
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **_: None)
    for extra, scorers in (([], {"judge:judge-a"}),
                           (["--trust", str(world["both"])], {"judge:judge-a", "judge:judge-b", "panel"})):  # fmt: skip
        res = invoke_cli("board", "serve", "--store", str(world["store"]), "--bootstrap", "20",
                         *extra)  # fmt: skip
        assert res.returncode == 0, res.stderr[-800:]
        view = seen.pop()
        assert {s.split(" @")[0] for s in view.table.scorers} == scorers
        assert ("left out" in res.stderr) == (not extra), res.stderr


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read the trust file"),
        ("", "names no publisher"),
        ("[[publisher]\nname = 'x'", "is not TOML"),
        ("[[publisher]]\nname = 'x'\n", "publisher.0.key: Field required"),
        ("[[publisher]]\nname = 'x'\nkey = 'bm90IGEga2V5'\n", "not a 32-byte ed25519 key"),
    ],
)
@pytest.mark.parametrize("command", ["build", "serve"])
def test_a_bad_trust_file_is_one_line(
    command: str, content: str | None, says: str, world: dict[str, Path], tmp_path: Path
) -> None:
    path = tmp_path / "trust.toml"
    if content is not None:
        path.write_text(content)
    res = invoke_cli("board", command, "--store", str(world["store"]), "--trust", str(path))
    lines = res.stderr.strip().splitlines()
    assert res.returncode != 0 and len(lines) == 1, res.stderr[-800:]
    assert says in lines[0] and "Traceback" not in res.stderr, lines


# -- model facts: the Hub's, where the board can read it ----------------------------------------
@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    for server in running_hub():
        point_hf_at(server, tmp_path / "hf-cache", tmp_path, monkeypatch)
        yield server


def _theirs(world: dict[str, Path], tmp_path: Path) -> Any:
    """bee's model, as the board shows it (a copy of the store: record() writes to it)."""
    shutil.copy(world["store"], tmp_path / "s.db")
    board = load_stored(tmp_path / "s.db", read_trust(world["both"]))
    return next(
        m for r in board.data.runs if r.label == "theirs" for m in [board.data.models[r.run_id]]
    )


def test_a_bundles_model_facts_give_way_to_the_hubs(
    world: dict[str, Path], hub: FakeHub, tmp_path: Path
) -> None:
    """The Hub has the model (not its size): card, type, licence and date are the Hub's; the
    size is bee's, said so."""
    hub.add_repo(SMOL, repo_type="model", info={**SMOL_INFO, "safetensors": None})
    got = _theirs(world, tmp_path)
    assert (got.hub_id, got.license, got.kind, got.date) == (SMOL, "apache-2.0", "instruct",
                                                              "2024-10-31")  # fmt: skip
    assert got.parameters == PHISHING[2]
    by = f"as published by bee (key {_fp(world['bee'])})"
    assert got.sources == {"card": "from the Hub", "licence": "from the Hub", "type": "from the Hub",
                           "date": "from the Hub", "size": by}  # fmt: skip
    from intima.leaderboard.models_view import _note

    assert _note(got, ()) == f"card, type, licence, date from the Hub; size {by}"


def test_without_the_hub_a_bundles_facts_are_shown_as_published(
    world: dict[str, Path], hub: FakeHub, tmp_path: Path
) -> None:
    hub.fail_all = 503
    got = _theirs(world, tmp_path)
    card, licence, size = PHISHING
    assert (got.hub_id, got.license, got.parameters) == (card, licence, size)
    by = f"as published by bee (key {_fp(world['bee'])})"
    assert set(got.sources.values()) == {by}
    assert got.unfetched == "the Hub could not be reached"
    # one short attempt: the Hub is asked once, for bee's model only
    assert [p for _, p in hub.calls() if p.startswith("/api/models/")] == [f"/api/models/{SMOL}"]


def test_offline_a_bundles_facts_are_shown_as_published_without_asking(
    world: dict[str, Path], hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    hub.hang_up = True  # were it asked, it would never answer
    got = _theirs(world, tmp_path)
    assert got.hub_id == PHISHING[0] and got.unfetched == "the Hub is offline"
    assert hub.requests == []


# -- intima doctor --------------------------------------------------------------------------------
def test_doctor_lists_each_rows_publisher_and_a_row_its_publisher_may_not_speak_for(
    world: dict[str, Path], tmp_path: Path
) -> None:
    db = tmp_path / "doctor.db"
    shutil.copy(world["store"], db)
    bee = f"bee (key {_fp(world['bee'])})"
    res = invoke_cli("doctor", "--store", str(db))
    assert res.returncode == 0, res.stdout + res.stderr
    lines = set(res.stdout.splitlines())
    # bee's bundle carried this store's run along: its row and N answers are bee's and this
    # store's, bee's own run bee's; each judge gave N verdicts (both runs answer alike)
    for table, n_bee, n_here in (("judgments", N, N), ("responses", 2 * N, N),
                                 ("runs", 2, 1)):  # fmt: skip
        assert f"{n_bee} row(s) in {table} published by {bee}" in lines, res.stdout
        assert f"{n_here} row(s) in {table} published by this store" in lines, res.stdout
    # a judgment of this store's judge said to be bee's (an import from before the marks)
    with sqlite3.connect(db) as conn:
        jid = conn.execute("SELECT judgment_id FROM judgments WHERE judge_label = 'judge-a'")
        fp = conn.execute("SELECT fingerprint FROM publishers WHERE name = 'bee'").fetchone()[0]
        conn.execute("INSERT INTO row_publishers VALUES ('judgments', json_array(?), ?)",
                     (jid.fetchone()[0], fp))  # fmt: skip
    res = invoke_cli("doctor", "--store", str(db))
    assert res.returncode == 1
    assert f"1 row(s) in judgments: published by {bee} for the scorer of this store" in res.stdout
