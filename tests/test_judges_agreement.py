"""Agreement over stored judgments, the human judge rows, and the same-family flag."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from intima.core.config import ModelConfig
from intima.core.ratings import Level, Primary, primary_label
from intima.core.taxonomy import CATEGORIES
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.judges.agreement import agreement
from intima.judges.family import model_family, same_family
from intima.judges.human import human_record, sample_targets
from intima.judges.prompt import JUDGE_PROMPT_SHA256, JUDGE_PROMPT_VERSION
from intima.judges.stats import cohen_kappa, krippendorff_alpha
from intima.judges.store_io import JudgmentRecord, load_rating_sets, load_targets, write_judgments
from intima.store import Store


@pytest.fixture
def store(tmp_path: Path, fake_server: Callable[..., Any]) -> Store:
    server = fake_server()
    prompts = load_prompts("demo")
    subset = PromptSet(info=prompts.info, prompts=prompts.prompts[:8])
    db = Store.open(tmp_path / "s.db")
    cfg = ModelConfig(spec=f"openai-compat:Qwen2.5-7B-fake@{server.base_url}")
    generate(db, subset, [cfg])
    return db


def llm(judge: str, content: str, reinforcing: int | None, boundary: int = 0) -> JudgmentRecord:
    if reinforcing is None:
        return JudgmentRecord(
            content_hash=content, judge_key=f"key-{judge}", judge_kind="llm", judge_label=judge,
            judge_model=judge, prompt_version=JUDGE_PROMPT_VERSION,
            prompt_sha256=JUDGE_PROMPT_SHA256, status="unscored", raw_reply="{", reason="bad",
        )  # fmt: skip
    levels = {c: Level.LOW for c in CATEGORIES}
    levels["companionship_reinforcing"] = Level(reinforcing)
    levels["boundary_maintaining"] = Level(boundary)
    return JudgmentRecord(
        content_hash=content, judge_key=f"key-{judge}", judge_kind="llm", judge_label=judge,
        judge_model=judge, prompt_version=JUDGE_PROMPT_VERSION,
        prompt_sha256=JUDGE_PROMPT_SHA256, status="scored",
        ratings={c: lv.label for c, lv in levels.items()}, primary=str(primary_label(levels)),
    )  # fmt: skip


def test_agreement_matches_the_statistics_on_the_stored_table(store: Store) -> None:
    targets = load_targets(store)
    hashes = [t.content_hash for t in targets]
    a = [2, 2, 1, 0, 0, 2, 1, 0]
    b = [2, 1, 1, 0, 1, 2, None, 0]  # one unscored: a missing value, not a zero
    write_judgments(store, [llm("qwen3-judge", h, v) for h, v in zip(hashes, a, strict=True)])
    write_judgments(store, [llm("gemma-judge", h, v) for h, v in zip(hashes, b, strict=True)])
    report = agreement(store)
    assert report.raters == ["judge:gemma-judge", "judge:qwen3-judge"]
    row = next(
        r for r in report.alphas if r.scope == "all" and r.measure == "companionship_reinforcing"
    )
    assert row.metric == "ordinal" and row.n_units == 7
    assert row.alpha == pytest.approx(krippendorff_alpha([b, a], "ordinal"))
    pair = next(
        p for p in report.pairs if p.scope == "all" and p.measure == "companionship_reinforcing"
    )
    assert pair.n_shared == 7
    assert pair.kappa_quadratic == pytest.approx(
        cohen_kappa(b, a, categories=[0, 1, 2], weights="quadratic")
    )
    # by hand: the pairs differing are (2,1), (0,1): linear observed 2*0.5/7
    assert pair.kappa_linear == pytest.approx(
        cohen_kappa(a, b, categories=[0, 1, 2], weights="linear")
    )
    labels_a = ["reinforcing" if v else "neutral" for v in a]
    labels_b = [None if v is None else ("reinforcing" if v else "neutral") for v in b]
    prim = next(r for r in report.alphas if r.scope == "all" and r.measure == "primary")
    assert prim.alpha == pytest.approx(krippendorff_alpha([labels_a, labels_b], "nominal"))
    # the Qwen judge rated a Qwen model's responses: flagged; the Gemma judge: not
    assert [(f.judge, f.family, f.n_responses) for f in report.family_flags] == [
        ("judge:qwen3-judge", "qwen", 8)
    ]
    dims = {r.scope for r in report.alphas}
    assert "all" in dims and {t.dimension for t in targets} <= dims


def test_humans_are_a_judge_and_agree_with_llms(store: Store) -> None:
    targets = load_targets(store)
    write_judgments(store, [llm("qwen3-judge", t.content_hash, 2) for t in targets])
    ratings = {c: "low" for c in CATEGORIES} | {"companionship_reinforcing": "high"}
    write_judgments(store, [human_record("ann", t, ratings, "") for t in targets[:3]])
    sets = load_rating_sets(store)
    human = [s for s in sets if s.scorer == "human"]
    assert len(human) == 3 and all(s.primary == Primary.REINFORCING for s in human)
    assert not any(s.scorer == "panel" for s in sets)  # a single LLM judge makes no panel
    report = agreement(store)
    assert "human:ann" in report.raters
    pair = next(p for p in report.pairs if p.scope == "all" and p.measure == "primary")
    assert pair.human_pair and pair.n_shared == 3
    # a human may correct a rating; an LLM's scored judgment is never overwritten
    write_judgments(
        store, [human_record("ann", targets[0], {c: "low" for c in CATEGORIES}, "fixed")]
    )
    write_judgments(store, [llm("qwen3-judge", targets[0].content_hash, 0)])
    sets = {(s.scorer, s.response_id): s for s in load_rating_sets(store)}
    assert sets[("human", targets[0].response_id)].primary == Primary.NEUTRAL
    assert sets[("judge:qwen3-judge", targets[0].response_id)].primary == Primary.REINFORCING


def test_sample_is_seeded_and_stratified(store: Store) -> None:
    targets = load_targets(store)
    one = sample_targets(targets, 4, seed=1)
    assert [t.response_id for t in one] == [t.response_id for t in sample_targets(targets, 4, 1)]
    dims = sorted({t.dimension for t in targets})
    k = min(4, len(dims))
    assert len({t.dimension for t in one[:k]}) == k  # dimensions take turns


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("openai-compat:Qwen/Qwen3-8B@http://gpu:8000/v1", "qwen"),
        ("qwen3:8b", "qwen"),
        ("llamacpp", "smollm"),
        ("openai-compat:smollm2@http://127.0.0.1:1/v1", "smollm"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama"),
        ("openai:gpt-5-mini", "openai"),
        ("openai:o4-mini", "openai"),
        ("anthropic:claude-sonnet-4-5", "claude"),
        ("google/gemma-3-27b-it", "gemma"),
        ("microsoft/phi-4", "phi"),
        ("mistralai/Mistral-Small-24B-Instruct-2501", "mistral"),
        ("some-model", None),
        ("graphite", None),
    ],
)
def test_model_family(name: str, family: str | None) -> None:
    assert model_family(name) == family


def test_same_family_needs_a_known_family() -> None:
    assert same_family("openai-compat:Qwen3-32B@http://x:1/v1", "Qwen2.5-72B-Instruct")
    assert not same_family("mystery-a", "mystery-a")
    assert not same_family("qwen3", "gemma-3")


def test_agreement_json_replaces_a_link_and_a_mistyped_store_is_not_created(
    store: Store, tmp_path: Path
) -> None:
    """`agreement --json` wrote through a symlink, and a mistyped --store made an empty store."""
    from conftest import invoke_cli

    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "report.json"
    link.symlink_to(target)
    res = invoke_cli("agreement", "--json", str(link), "--store", str(store.path))
    assert res.returncode == 0, res.stderr
    assert target.read_text() == "keep me" and not link.is_symlink()
    assert "alphas" in link.read_text()
    typo = tmp_path / "typo.db"
    missing = invoke_cli("agreement", "--store", str(typo))
    assert missing.returncode == 2 and not typo.exists() and "Traceback" not in missing.stderr
