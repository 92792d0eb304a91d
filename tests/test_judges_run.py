"""The judging loop with scripted judges (a unit test of the loop; the real judge run is in
test_judges_llama.py): re-asks, unscored judgments, caching, panels, prompt versions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from intima.core.config import GenerationSettings, ModelConfig
from intima.core.ratings import Primary
from intima.core.taxonomy import CATEGORIES
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.judges import loop as judge_run
from intima.judges.prompt import JUDGE_PROMPT_VERSION
from intima.judges.store_io import load_rating_sets, load_targets
from intima.providers import register
from intima.providers.base import Completion, Message, Model, RequestError
from intima.store import Store

N_PROMPTS = 6


def reply(reinforcing: str = "high", boundary: str = "low", **extra: str) -> str:
    d = {c: "low" for c in CATEGORIES}
    d["companionship_reinforcing"] = reinforcing
    d["boundary_maintaining"] = boundary
    d.update(extra)
    d["rationale"] = "Scripted."
    return json.dumps(d)


class Scripted(Model):
    """A judge whose reply depends on the judge label and how often it was asked."""

    default_concurrency = 3
    plans: ClassVar[dict[str, Callable[[list[Message], int], str | Exception]]] = {}
    calls: ClassVar[dict[str, int]] = {}

    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        name = self.config.parsed.model
        Scripted.calls[name] = Scripted.calls.get(name, 0) + 1
        asks = sum(1 for m in messages if m.role == "assistant")
        assert json_schema is not None and json_schema["required"][-1] == "rationale"
        out = Scripted.plans[name](messages, asks)
        if isinstance(out, Exception):
            raise out
        return Completion(text=out, prompt_tokens=100, completion_tokens=50)


@pytest.fixture
def scripted() -> type[Scripted]:
    register("scripted", Scripted)
    Scripted.plans.clear()
    Scripted.calls.clear()
    return Scripted


def judge_cfg(name: str) -> ModelConfig:
    return ModelConfig(spec=f"scripted:{name}", max_retries=0)


@pytest.fixture
def store(tmp_path: Path, fake_server: Callable[..., Any]) -> Store:
    server = fake_server()
    prompts = load_prompts("demo")
    subset = PromptSet(info=prompts.info, prompts=prompts.prompts[:N_PROMPTS])
    db = Store.open(tmp_path / "s.db")
    generate(db, subset, [ModelConfig(spec=f"openai-compat:fake@{server.base_url}")])
    return db


def rows(store: Store) -> list[dict[str, Any]]:
    return [dict(r) for r in store.query("SELECT * FROM judgments ORDER BY content_hash")]


def test_judges_every_response_once_and_caches(store: Store, scripted: type[Scripted]) -> None:
    scripted.plans["a"] = lambda m, k: reply()
    [s] = judge_run.judge(store, [judge_cfg("a")])
    assert (s.n_targets, s.already_done, s.scored, s.unscored, s.requests) == (6, 0, 6, 0, 6)
    assert s.prompt_tokens == 600 and s.completion_tokens == 300
    stored = rows(store)
    assert len(stored) == 6 and {r["status"] for r in stored} == {"scored"}
    r = stored[0]
    assert json.loads(r["ratings_json"])["companionship_reinforcing"] == "high"
    assert r["primary_label"] == "reinforcing" and r["prompt_version"] == JUDGE_PROMPT_VERSION
    assert len(r["prompt_sha256"]) == 64 and r["package_version"]
    assert json.loads(r["judge_config_json"])["spec"] == "scripted:a"
    # again: nothing is missing, nothing is asked
    [again] = judge_run.judge(store, [judge_cfg("a")])
    assert (again.already_done, again.requests) == (6, 0) and scripted.calls["a"] == 6


def test_invalid_reply_is_asked_again(store: Store, scripted: type[Scripted]) -> None:
    def plan(messages: list[Message], asks: int) -> str:
        if asks == 0:
            return 'Sure! ```json\n{"companionship_reinforcing": "High"}```'
        assert "missing keys" in messages[-1].content  # the judge is told what was wrong
        return reply(boundary="Medium")

    scripted.plans["a"] = plan
    [s] = judge_run.judge(store, [judge_cfg("a")])
    assert (s.scored, s.unscored, s.requests) == (6, 0, 12)
    r = rows(store)[0]
    assert r["attempts"] == 2 and r["status"] == "scored"
    repairs = json.loads(r["repairs_json"])
    assert any(x.startswith("asked again: missing keys") for x in repairs)
    assert json.loads(r["ratings_json"])["boundary_maintaining"] == "medium"


def test_hopeless_replies_are_stored_unscored_never_dropped(
    store: Store, scripted: type[Scripted]
) -> None:
    scripted.plans["a"] = lambda m, k: reply(sycophancy="extreme")
    [s] = judge_run.judge(store, [judge_cfg("a")], max_reasks=1)
    assert (s.scored, s.unscored, s.requests) == (0, 6, 12)
    stored = rows(store)
    assert len(stored) == 6
    for r in stored:
        assert r["status"] == "unscored" and r["ratings_json"] is None
        assert r["primary_label"] is None and '"extreme"' in r["raw_reply"]
        assert r["reason"].startswith("invalid reply after 2 ask(s): unknown levels")
    sets = load_rating_sets(store)
    assert len(sets) == 6 and all(not x.scored and not x.levels for x in sets)
    # a later run retries exactly the unscored ones, and a success replaces them
    scripted.plans["a"] = lambda m, k: reply()
    [again] = judge_run.judge(store, [judge_cfg("a")])
    assert (again.already_done, again.scored, again.requests) == (0, 6, 6)
    assert {r["status"] for r in rows(store)} == {"scored"}
    assert {r["attempts"] for r in rows(store)} == {3}


def test_request_failures_are_unscored_with_the_reason(
    store: Store, scripted: type[Scripted]
) -> None:
    scripted.plans["a"] = lambda m, k: RequestError("HTTP 400: context too long")
    [s] = judge_run.judge(store, [judge_cfg("a")])
    assert s.unscored == 6
    assert {r["reason"] for r in rows(store)} == {
        "request failed: request rejected: HTTP 400: context too long"
    }


def test_panel_majority_and_no_majority(store: Store, scripted: type[Scripted]) -> None:
    targets = load_targets(store)
    first = targets[0].response

    def split(label: str) -> Callable[[list[Message], int], str]:
        # On the first response the three judges all disagree; elsewhere a and b agree.
        def plan(messages: list[Message], asks: int) -> str:
            if first in messages[1].content:
                return {
                    "a": reply(),
                    "b": reply(reinforcing="low", boundary="high"),
                    "c": reply(reinforcing="low", companionship_neutral="medium"),
                }[label]
            return reply() if label in "ab" else reply(reinforcing="medium", boundary="medium")

        return plan

    for name in "abc":
        scripted.plans[name] = split(name)
    judge_run.judge(store, [judge_cfg(n) for n in "abc"])
    sets = load_rating_sets(store)
    scorers = {s.scorer for s in sets}
    assert scorers == {"judge:scripted:a", "judge:scripted:b", "judge:scripted:c", "panel"}
    panel = {s.response_id: s for s in sets if s.scorer == "panel"}
    assert len(panel) == 6
    assert panel[targets[0].response_id].primary == Primary.NO_MAJORITY
    assert panel[targets[1].response_id].primary == Primary.REINFORCING
    # ordinal median of high, high, medium = high
    assert panel[targets[1].response_id].levels["companionship_reinforcing"] == 2


def test_a_new_judge_or_prompt_version_judges_only_what_is_missing(
    store: Store, scripted: type[Scripted], monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted.plans["a"] = scripted.plans["b"] = lambda m, k: reply()
    judge_run.judge(store, [judge_cfg("a")])
    [a, b] = judge_run.judge(store, [judge_cfg("a"), judge_cfg("b")])
    assert (a.requests, b.requests) == (0, 6)
    monkeypatch.setattr(judge_run, "JUDGE_PROMPT_VERSION", "test-2")
    [a2] = judge_run.judge(store, [judge_cfg("a")])
    assert a2.requests == 6
    versions = [r["prompt_version"] for r in rows(store)]
    assert versions.count(JUDGE_PROMPT_VERSION) == 12 and versions.count("test-2") == 6
    assert len(load_rating_sets(store, prompt_version="test-2")) == 6


def test_unscored_is_kept_apart_from_low(store: Store, scripted: type[Scripted]) -> None:
    targets = load_targets(store)
    bad = targets[0].response
    scripted.plans["a"] = lambda m, k: "" if bad in m[1].content else reply("low")
    judge_run.judge(store, [judge_cfg("a")], max_reasks=0)
    sets = {s.response_id: s for s in load_rating_sets(store)}
    assert sets[targets[0].response_id].status == "unscored"
    assert sets[targets[0].response_id].reason == "invalid reply after 1 ask(s): empty reply"
    assert sets[targets[1].response_id].primary == Primary.NEUTRAL


def test_a_crash_keeps_finished_judgments_and_resume_does_the_rest(
    store: Store, scripted: type[Scripted]
) -> None:
    from intima.core.errors import ProviderError

    seen: list[int] = []

    def dies_on_fourth(messages: list[Message], asks: int) -> str | Exception:
        seen.append(1)
        return ProviderError("the judge server went away") if len(seen) == 4 else reply()

    scripted.plans["a"] = dies_on_fourth
    cfg = judge_cfg("a").model_copy(update={"concurrency": 1})
    with pytest.raises(ProviderError):
        judge_run.judge(store, [cfg])
    assert len(rows(store)) == 3  # the three finished before the crash are committed
    scripted.plans["a"] = lambda m, k: reply()
    [s] = judge_run.judge(store, [cfg])
    assert (s.already_done, s.scored, s.requests) == (3, 3, 3)
    assert len(rows(store)) == 6


def test_only_the_selected_runs_are_judged(
    store: Store, scripted: type[Scripted], fake_server: Callable[..., Any]
) -> None:
    server = fake_server()
    prompts = load_prompts("demo")
    other = PromptSet(info=prompts.info, prompts=prompts.prompts[10:12])
    [summary] = generate(store, other, [ModelConfig(spec=f"openai-compat:other@{server.base_url}")])
    scripted.plans["a"] = lambda m, k: reply()
    [s] = judge_run.judge(store, [judge_cfg("a")], [summary.run_id[:8]])
    assert (s.n_targets, s.scored) == (2, 2)
    assert len(load_rating_sets(store, [summary.run_id])) == 2
    assert len(load_rating_sets(store)) == 2  # the other run's responses are not judged yet
