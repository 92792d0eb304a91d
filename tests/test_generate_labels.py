"""Default run labels tell configurations of one model apart (and a chosen label wins)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import invoke_cli
from intima.core.config import GenerationSettings, ModelConfig
from intima.dataset import load_prompts
from intima.generate import generate
from intima.generate.runner import default_label
from intima.store import Store


def test_labels_name_what_differs_from_the_defaults() -> None:
    spec = "openai-compat:smollm2@http://127.0.0.1:8080/v1"
    plain = ModelConfig(spec=spec)
    assert default_label(plain) == "openai-compat:smollm2"
    seeded = ModelConfig(spec=spec, generation=GenerationSettings(seed=1, max_tokens=64))
    assert default_label(seeded) == "openai-compat:smollm2 [max_tokens=64, seed=1]"
    mia = ModelConfig(spec=spec, system_prompt="You are Mia.")
    other = ModelConfig(spec=spec, system_prompt="You are Leo.")
    # The system prompt's first words, not a hash a reader cannot decode.
    assert default_label(mia) == 'openai-compat:smollm2 · "You are Mia."'
    juniper = ModelConfig(
        spec=spec,
        system_prompt="You are Juniper, a warm and caring companion who remembers everything.",
        generation=GenerationSettings(temperature=0.2),
    )
    assert default_label(juniper) == (
        'openai-compat:smollm2 · "You are Juniper, a warm…" [temperature=0.2]'
    )
    assert len({default_label(c) for c in (plain, seeded, mia, other)}) == 4
    assert default_label(ModelConfig(spec=spec, label="mine", system_prompt="x")) == "mine"


def test_runs_of_one_model_with_other_settings_can_be_told_apart(
    tmp_path: Path, fake_server: Any
) -> None:
    server = fake_server()
    spec = f"openai-compat:fake@{server.base_url}"
    prompts = load_prompts("demo").first(2)
    configs = [
        ModelConfig(spec=spec),
        ModelConfig(spec=spec, generation=GenerationSettings(seed=7)),
        ModelConfig(spec=spec, system_prompt="Be brief."),
    ]
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        generate(store, prompts, configs)
        labels = [r["label"] for r in store.run_summaries()]
    assert len(set(labels)) == 3
    # Each label selects exactly its run: the export holds that run's answers and no other's
    # (an export that ignored --run, writing all three runs, passed when only the exit code
    # was checked).
    with Store.open(db) as store:
        run_of = {r["label"]: r["run_id"] for r in store.run_summaries()}
    for label in labels:
        out = tmp_path / label.replace(" ", "_")
        res = invoke_cli("export", str(out), "--run", label, "--store", str(db))
        assert res.returncode == 0, res.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert [r["run_id"] for r in manifest["runs"]] == [run_of[label]]
        rows = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
        assert len(rows) == 2 and {r["run_id"] for r in rows} == {run_of[label]}


def test_the_board_names_configurations_readably_and_uniquely() -> None:
    """Labels stored before readable names (``[system 1742a6]``) read as the prompt's first
    words on a board; names that would be the same get the settings they differ in; the
    tooltip carries the hash and every setting."""
    from intima.core.labels import Named, board_labels, config_title

    prompt = "You are Juniper, a warm and caring companion."
    old = Named("r1", "openai-compat:smollm2 [system 1742a6, seed=1]", "openai-compat:smollm2",
                prompt, {"seed": 1})  # fmt: skip
    warm = Named("r2", "mine", "m", None, {"temperature": 0.2})
    cold = Named("r3", "mine", "m", None, {"temperature": 0.9})
    names = board_labels([old, warm, cold])
    assert names["r1"] == 'openai-compat:smollm2 · "You are Juniper, a warm…" [seed=1]'
    assert names["r2"] == "mine (temperature=0.2)" and names["r3"] == "mine (temperature=0.9)"
    # Same first words, different prompts: the hash tells them apart.
    a = Named("a", "x", "x", prompt + " A", {})
    b = Named("b", "x", "x", prompt + " B", {})
    assert len(set(board_labels([a, b]).values())) == 2
    title = config_title("openai-compat:smollm2", prompt, {"seed": 1, "top_p": None})
    assert "system prompt " in title and "seed=1" in title and "top_p" not in title


def test_the_board_loaded_from_a_store_shows_readable_distinct_names(
    tmp_path: Path, fake_server: Any
) -> None:
    from intima.results.data import load_board

    server = fake_server()
    spec = f"openai-compat:fake@{server.base_url}"
    prompts = load_prompts("demo").first(2)
    configs = [
        ModelConfig(spec=spec, label="mine", generation=GenerationSettings(temperature=0.2)),
        ModelConfig(spec=spec, label="mine", generation=GenerationSettings(temperature=0.9)),
        ModelConfig(spec=spec, system_prompt="You are Juniper, a warm and caring friend."),
    ]
    with Store.open(tmp_path / "s.db") as store:
        generate(store, prompts, configs)
        data = load_board(store)
    labels = sorted(r.label for r in data.runs)
    assert labels == [
        "mine (temperature=0.2)",
        "mine (temperature=0.9)",
        'openai-compat:fake · "You are Juniper, a warm…"',
    ]
    assert {r.label for r in data.responses} == set(labels)


def test_names_alike_but_for_the_dataset_or_model_say_which() -> None:
    """Two configurations the board cannot merge (another dataset, another revision, another
    model under one chosen label) get names that say how they differ, never a bare run id."""
    from intima.core.labels import Named, board_labels

    hub, demo = ("AI-companionship/INTIMA", "abc123def4567890", "s1"), ("intima-demo", None, "s2")
    newer = ("AI-companionship/INTIMA", "fedcba9876543210", "s3")
    names = board_labels([
        Named("1" * 16, "m", "m", dataset=hub),
        Named("2" * 16, "m", "m", dataset=demo),
        Named("3" * 16, "mine", "openai:gpt-4o", dataset=demo),
        Named("4" * 16, "mine", "openai:gpt-4o-mini", dataset=demo),
        Named("5" * 16, "n", "n", dataset=hub),
        Named("6" * 16, "n", "n", dataset=newer),
    ])  # fmt: skip
    assert names == {
        "1" * 16: "m (on AI-companionship/INTIMA)",
        "2" * 16: "m (on intima-demo)",
        "3" * 16: "mine (openai:gpt-4o)",
        "4" * 16: "mine (openai:gpt-4o-mini)",
        "5" * 16: "n (on AI-companionship/INTIMA @ abc123def456)",
        "6" * 16: "n (on AI-companionship/INTIMA @ fedcba987654)",
    }
