"""The stages a worker runs each request through: generation first, then judging and scoring
when they are configured (a stage that is not configured is simply not in the list).

A stage is a callable taking a :class:`StageContext`. Every stage must be resumable (skip what
is already stored), because a worker killed mid-request leaves its request to the next worker
once the lease runs out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from intima.core.config import ModelConfig
from intima.core.errors import IntimaError
from intima.core.spending import Budget, SpendingSettings
from intima.dataset import PromptSet
from intima.service.queue import RequestRecord
from intima.store import Store

#: Receives the worker's one-line reports; they hold untrusted text (model specs, server
#: errors), so a terminal must escape them (the CLI does).
OnMessage = Callable[[str], None]


class StageFailed(IntimaError):
    """A stage could not complete the request; the message becomes the request's reason."""


class BudgetReached(IntimaError):
    """The worker's --max-cost is spent: the request in hand goes back to the queue."""


def budget_reached(spent: Budget) -> BudgetReached:
    return BudgetReached(
        f"the worker's --max-cost is reached (${spent.spent:.4f} of ${spent.limit:g} spent)"
    )


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
    #: The worker's prices and --max-cost, and what it has spent of that cap over every
    #: request it has run: each generation or judging call may spend what is left.
    spending: SpendingSettings = field(default_factory=SpendingSettings)
    spent: Budget = field(default_factory=Budget)
    #: Asked before each prompt or judgment starts: True once the request is no longer the
    #: worker's (cancelled, or its lease taken over); no more work starts then.
    stop: Callable[[], bool] | None = None


Stage = Callable[[StageContext], None]


def _most_common(reasons: Counter[str]) -> str:
    if not reasons:
        return ""
    reason, n = reasons.most_common(1)[0]
    return f"; most common reason ({n} of {sum(reasons.values())}): {reason}"


def _left(ctx: StageContext) -> dict[str, Any]:
    """``prices`` and ``max_cost`` (what is left of the worker's cap) for one call; the call
    itself refuses a model with no price under a cap
    (:func:`~intima.core.spending.require_prices`)."""
    if ctx.spent.exhausted:
        raise budget_reached(ctx.spent)
    return {"prices": ctx.spending.prices, "max_cost": ctx.spent.left}


def _spend(ctx: StageContext, costs: Iterable[float | None]) -> None:
    for cost in costs:
        ctx.spent.add(cost)


def generation_stage(ctx: StageContext) -> None:
    """Ask the model for every prompt still missing; stored answers are reused."""
    from intima.generate import runner

    summaries = runner.generate(ctx.store, ctx.prompts, [ctx.config], stop=ctx.stop, **_left(ctx))
    _spend(ctx, (s.cost_usd for s in summaries))
    ctx.run_ids.extend(s.run_id for s in summaries)
    if any(s.status == "stopped (max cost)" for s in summaries):
        raise budget_reached(ctx.spent)
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
        summaries = judge(
            ctx.store, list(judges), ctx.run_ids, max_reasks=reasks, stop=ctx.stop, **_left(ctx)
        )
        _spend(ctx, (s.cost_usd for s in summaries))
        if any(s.stopped_by_budget for s in summaries):
            raise budget_reached(ctx.spent)
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
