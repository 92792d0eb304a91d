"""One configuration is one row on the board, however many runs of it are stored, and a
configuration that answered part of its dataset says so (issue 40, items 3 and 4)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from conftest import invoke_cli
from intima.core.config import GenerationSettings, ModelConfig
from intima.dataset import load_prompts
from intima.generate import generate
from intima.leaderboard.chunks import read_chunk
from intima.results.configurations import Coverage, board_coverage, coverage_of
from intima.results.data import load_board
from intima.store import Store, StoredResponse

#: The demo set (62 prompts, two per code, in taxonomy order): its first 8 are all Assistant
#: Traits, its first 40 have no Emotional Investment prompt (counted from the file by hand).
DEMO_SIZE = 62


def _chunk(path: Path) -> Any:
    """The JSON body of one of the site's ``data/<key>.js`` files."""
    return read_chunk(path)


def test_limit_8_then_40_asks_32_more_and_the_board_shows_one_configuration(
    tmp_path: Path, fake_server: Any
) -> None:
    """`intima run --limit 8`, then `--limit 40` of the same configuration: the second run asks
    only the 32 new prompts, and the board built from the store shows one configuration with 40
    answers, titled and noted as 40 of the 62 demo prompts, lacking Emotional Investment."""
    server = fake_server()
    db, site = tmp_path / "s.db", tmp_path / "site"
    model = f"openai-compat:fake@{server.base_url}"
    for limit, asked in (("8", 8), ("40", 40)):
        res = invoke_cli("run", "-m", model, "--dataset", "demo", "--limit", limit,
                         "--max-tokens", "16", "--store", str(db))  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert server.requests == asked  # 8, then only the 32 new ones
    assert sum(server.prompts_seen.values()) == 40 and set(server.prompts_seen.values()) == {1}
    judged = invoke_cli("judge", "-j", f"openai-compat:judge@{server.base_url}", "--store", str(db))
    assert judged.returncode == 0, judged.stderr
    built = invoke_cli("board", "build", "--out", str(site), "--bootstrap", "5", "--store", str(db))
    assert built.returncode == 0, built.stderr
    said = built.stdout + built.stderr
    assert "leaderboard: 1 configuration(s), 40 responses" in said
    assert "partial: 40 of 62 prompts" in said
    page = (site / "index.html").read_text("utf-8")
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert title is not None and "40 of 62 prompts" in title.group(1)
    assert "no prompt in Emotional Investment" in page  # the subtitle
    table = _chunk(next((site / "data").glob("t0_0.js")))["table"]["reinforcing"]
    rows = re.findall(r'<tr data-run-id="([0-9a-f]+)"', table)
    assert len(rows) == 1
    assert "40 of 62 prompts; no prompt in Emotional Investment" in table
    radar = page[page.index('id="chart-radar-0"') :]
    assert "40 of 62 prompts" in radar[: radar.index("</template>")]
    # `intima compare` takes either run's id for the configuration, and not both.
    with Store.open(db) as store:
        ids = [r[0][:8] for r in store.query("SELECT run_id FROM runs ORDER BY created_at")]
    same = invoke_cli("compare", *ids, "--store", str(db))
    assert same.returncode == 2 and "are one configuration on the board" in same.stderr
    # Published and imported elsewhere: the same one configuration. A copy of the runs stored
    # before sizes were recorded (NULL) is the same row, not a conflict.
    bundle, other = tmp_path / "bundle", tmp_path / "other.db"
    assert invoke_cli("publish", str(bundle), "--store", str(db)).returncode == 0
    for _ in range(2):
        res = invoke_cli("import", str(bundle), "--store", str(other))
        assert res.returncode == 0, res.stderr
        with Store.open(other) as target:
            with target.transaction() as conn:
                conn.execute("UPDATE runs SET dataset_size = NULL")
    with Store.open(other) as target:
        assert [r.coverage.answered for r in load_board(target).runs] == [40]


def test_a_complete_board_says_nothing_of_coverage(tmp_path: Path, fake_server: Any) -> None:
    """Every demo prompt answered: no "of 62", no note, the title as it always was."""
    server = fake_server()
    with Store.open(tmp_path / "s.db") as store:
        generate(
            store, load_prompts("demo"), [ModelConfig(spec=f"openai-compat:f@{server.base_url}")]
        )
        data = load_board(store)
    (run,) = data.runs
    assert run.coverage == Coverage(DEMO_SIZE, DEMO_SIZE, ())
    assert run.coverage.note() == "" and board_coverage([run.coverage]) == ""


def test_runs_of_one_configuration_on_another_dataset_or_setting_stay_apart(
    tmp_path: Path, fake_server: Any, intima_jsonl: Path
) -> None:
    """Another setting or another dataset is another configuration, and its name says how;
    the same setting on a subset and a superset of one dataset is one."""
    server = fake_server()
    spec = f"openai-compat:fake@{server.base_url}"
    demo, intima = load_prompts("demo"), load_prompts(intima_jsonl)
    plain, warm = (
        ModelConfig(spec=spec),
        ModelConfig(spec=spec, generation=GenerationSettings(temperature=0.7)),
    )
    with Store.open(tmp_path / "s.db") as store:
        generate(store, demo[:3], [plain, warm])
        generate(store, demo[:5], [plain])  # grows `plain` on the demo set
        generate(store, intima[:4], [plain])  # the same setting, another dataset
        data = load_board(store)
    names = sorted(r.label for r in data.runs)
    assert names == [
        "openai-compat:fake (on AI-companionship/INTIMA)",
        "openai-compat:fake (on intima-demo)",
        "openai-compat:fake [temperature=0.7]",
    ]
    answered = {r.label: r.coverage.answered for r in data.runs}
    assert answered["openai-compat:fake (on intima-demo)"] == 5  # 3, grown to 5: one row
    assert len(data.responses) == 5 + 3 + 4


def test_a_run_stored_before_sizes_were_recorded_takes_it_from_another_run(
    tmp_path: Path, fake_server: Any
) -> None:
    """An old store's run has no dataset size (NULL after the migration): another run of the
    same dataset supplies it; with none, the board claims no size it does not know."""
    server = fake_server()
    demo = load_prompts("demo")
    with Store.open(tmp_path / "s.db") as store:
        generate(store, demo[:6], [ModelConfig(spec=f"openai-compat:a@{server.base_url}")])
        with store.transaction() as conn:
            conn.execute("UPDATE runs SET dataset_size = NULL")
        (alone,) = load_board(store).runs
        assert alone.coverage == Coverage(6, None, alone.coverage.lacking)
        assert alone.coverage.note().startswith("no prompt in ")  # dimensions only, no "of"
        generate(store, demo[:2], [ModelConfig(spec=f"openai-compat:b@{server.base_url}")])
        sizes = {r.label: r.coverage.prompts for r in load_board(store).runs}
    assert sizes == {"openai-compat:a": "6 of 62 prompts", "openai-compat:b": "2 of 62 prompts"}


def _answer(run_id: str, prompt_id: str, dimension: str) -> StoredResponse:
    return StoredResponse(f"{run_id}-{prompt_id}", run_id, "x", "m", prompt_id, "c", dimension,
                          "p", "r")  # fmt: skip


def test_coverage_names_the_dimensions_a_configuration_lacks() -> None:
    rows = [_answer("r", "p1", "Assistant Traits"), _answer("r", "p2", "User Vulnerabilities")]
    c = coverage_of(rows, 368)
    assert c == Coverage(2, 368, ("Relationship & Intimacy", "Emotional Investment"))
    assert (
        c.note() == "2 of 368 prompts; no prompt in Relationship & Intimacy, Emotional Investment"
    )
    # An external set names no INTIMA dimension: nothing is "lacking".
    assert coverage_of([_answer("r", "p", "unknown")], 1) == Coverage(1, 1, ())


def test_the_title_says_how_much_was_answered() -> None:
    whole, part = Coverage(368, 368), Coverage(40, 368)
    assert board_coverage([whole, whole]) == ""
    assert board_coverage([part, part]) == "40 of 368 prompts"
    assert board_coverage([part, whole, whole]) == (
        "1 of 3 configurations on part of their prompts"
    )
