"""The stages a worker runs each request through: generation first, then judging and scoring
when they are configured (a stage that is not configured is simply not in the list).

A stage is a callable taking a :class:`StageContext`. Every stage must be resumable (skip what
is already stored), because a worker killed mid-request leaves its request to the next worker
once the lease runs out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from intima.core.config import ModelConfig
from intima.core.errors import IntimaError
from intima.dataset import PromptSet
from intima.service.queue import RequestRecord
from intima.service.spending import BudgetReached, Spending
from intima.store import Store

#: Receives the worker's one-line reports; they hold untrusted text (model specs, server
#: errors), so a terminal must escape them (the CLI does).
OnMessage = Callable[[str], None]


class StageFailed(IntimaError):
    """A stage could not complete the request; the message becomes the request's reason."""


@dataclass
class StageContext:
    store: Store
    request: RequestRecord
    config: ModelConfig
    prompts: PromptSet
    run_ids: list[str] = field(default_factory=list)
    on_message: OnMessage | None = None
    #: Work a stage left undone without failing the request (e.g. some judgments unscored):
    #: reason -> count. The worker adds them up and reports them.
    unscored: Counter[str] = field(default_factory=Counter)
    #: The worker's prices and --max-cost, shared by every request it runs.
    spending: Spending = field(default_factory=Spending)
    #: Asked before each prompt or judgment starts: True once the request is no longer the
    #: worker's (cancelled, or its lease taken over); no more work starts then.
    stop: Callable[[], bool] | None = None


Stage = Callable[[StageContext], None]


def _most_common(reasons: Counter[str]) -> str:
    if not reasons:
        return ""
    reason, n = reasons.most_common(1)[0]
    return f"; most common reason ({n} of {sum(reasons.values())}): {reason}"


def generation_stage(ctx: StageContext) -> None:
    """Ask the model for every prompt still missing; stored answers are reused."""
    from intima.generate import runner

    pay = ctx.spending.call_args(ctx.config)
    summaries = runner.generate(ctx.store, ctx.prompts, [ctx.config], stop=ctx.stop, **pay)
    ctx.spending.add(s.cost_usd for s in summaries)
    ctx.run_ids.extend(s.run_id for s in summaries)
    if any(s.status == "stopped (max cost)" for s in summaries):
        raise BudgetReached(ctx.spending.reached())
    bad = [s for s in summaries if s.status != "complete"]
    if bad:
        s = bad[0]
        why = _most_common(runner.generation_failures(ctx.store, [s.run_id]))
        raise StageFailed(
            f"generation {s.status}: {s.failed} of {s.n_prompts} prompts failed after retries"
            f"{why}; request the model again to retry the missing ones"
        )


def judging_stage(judges: Sequence[ModelConfig], max_reasks: int | None = None) -> Stage:
    """Judge every response of the request's runs with each judge (resumable: only missing).

    A judge whose judgments this time were *all* unscored fails the request with the most
    common reason; some unscored ones are reported (``ctx.unscored``) and retried next time.
    """
    from intima.judges.loop import DEFAULT_MAX_REASKS, judge

    def stage(ctx: StageContext) -> None:
        reasks = DEFAULT_MAX_REASKS if max_reasks is None else max_reasks
        pay: dict[str, Any] = {}
        for config in judges:  # every judge is held to the worker's cap
            pay = ctx.spending.call_args(config, "judge")
        summaries = judge(
            ctx.store, list(judges), ctx.run_ids, max_reasks=reasks, stop=ctx.stop, **pay
        )
        ctx.spending.add(s.cost_usd for s in summaries)
        if any(s.stopped_by_budget for s in summaries):
            raise BudgetReached(ctx.spending.reached())
        for s in summaries:
            for note in s.notes:
                say(ctx.on_message, note)
        for s in summaries:
            if s.all_failed:
                why = _most_common(Counter(s.unscored_reasons))
                raise StageFailed(
                    f"judging failed: all {s.unscored} judgment(s) by {s.judge_label} are "
                    f"unscored{why}"
                )
        for s in summaries:
            ctx.unscored.update(s.unscored_reasons)

    return stage


def scoring_stage() -> Stage:
    """Score the request's responses with the offline affect measure (only unscored ones)."""
    from intima.affect.store_io import score_store

    def stage(ctx: StageContext) -> None:
        score_store(ctx.store, ctx.run_ids)

    return stage


def default_stages(
    judges: Sequence[ModelConfig] = (), *, score: bool = False, max_reasks: int | None = None
) -> list[Stage]:
    stages: list[Stage] = [generation_stage]
    if judges:
        stages.append(judging_stage(judges, max_reasks))
    if score:
        stages.append(scoring_stage())
    return stages


def say(on_message: OnMessage | None, text: str) -> None:
    if on_message is not None:
        on_message(text)
