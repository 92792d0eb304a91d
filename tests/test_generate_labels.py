"""Default run labels tell configurations of one model apart (and a chosen label wins)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli
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
    assert default_label(mia).startswith("openai-compat:smollm2 [system ")
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
        res = run_cli("export", str(out), "--run", label, "--store", str(db))
        assert res.returncode == 0, res.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert [r["run_id"] for r in manifest["runs"]] == [run_of[label]]
        rows = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
        assert len(rows) == 2 and {r["run_id"] for r in rows} == {run_of[label]}
