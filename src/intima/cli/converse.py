"""``intima converse``: conversations of N assistant turns with a simulated user.

The dataset, generation and request options are the ones ``intima run`` takes
(``intima.cli._options``), so both commands take them with the same names, help and ranges;
the simulated user's generation and key options are the same declarations under ``--user-``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from intima.cli._common import (
    DEFAULT_STORE,
    StoreOpt,
    app,
    console,
    for_terminal,
    out,
    progress_display,
)
from intima.cli._options import (
    MAX_RETRIES,
    MAX_TOKENS,
    SEED,
    TIMEOUT_S,
    CleanedOpt,
    DatasetOpt,
    GenerationOptions,
    KeyEnvOpt,
    KeyFileOpt,
    LimitOpt,
    MaxRetriesOpt,
    MaxTokensOpt,
    MemoryOpt,
    ModelOptions,
    ProgressOpt,
    PromptOptions,
    RevisionOpt,
    SeedOpt,
    TemperatureOpt,
    TimeoutOpt,
    TopPOpt,
    UserKeyEnvOpt,
    UserKeyFileOpt,
    UserMaxTokensOpt,
    UserSeedOpt,
    UserTemperatureOpt,
    UserTopPOpt,
    concurrency_option,
)
from intima.cli._params import DryRunOpt, PricesOpt, max_cost_option, nonempty
from intima.converse.identity import DEFAULT_TURNS, DEFAULT_USER_RETRIES, MAX_TURNS
from intima.core.config import ModelConfig
from intima.core.spending import SpendingSettings
from intima.store import Store

if TYPE_CHECKING:  # pragma: no cover
    from intima.converse.runner import ConverseSummary
    from intima.dataset import PromptSet


# The options of `intima converse` alone (the others are `intima run`'s, from
# intima.cli._options), declared apart so that the command reads as the list of its options.
AssistantOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        parser=nonempty,
        help="The assistant: model spec PROVIDER[:MODEL]\\[@URL,...].",
    ),
]

UserModelOpt = Annotated[
    str | None,
    typer.Option(
        "--user-model",
        "-u",
        parser=nonempty,
        help="The simulated user: model spec PROVIDER[:MODEL]\\[@URL,...] (default: --model).",
    ),
]

TurnsOpt = Annotated[
    int,
    typer.Option(
        min=1,
        max=MAX_TURNS,
        help=f"Assistant turns per conversation, 1-{MAX_TURNS}: each prompt costs N "
        "assistant and N-1 simulated-user requests (plus retries).",
    ),
]

UserRetriesOpt = Annotated[
    int,
    typer.Option(
        min=0,
        max=10,
        help="Times a simulated-user reply that is empty or out of character is asked again "
        "(0-10) before it is recorded and its conversation stops.",
    ),
]

ConverseLabelOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="Display name for the conversation run (default: the assistant's label, the "
        "number of turns and the simulated user's label).",
    ),
]

AssistantSystemOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="The assistant's system prompt, sent on every turn, never to the simulated "
        "user (default: none, as in the paper).",
    ),
]

ConversationsOpt = Annotated[
    int | None,
    concurrency_option(
        "Conversations in flight (each has one request in flight at a time; default: the "
        "assistant provider's)."
    ),
]

ConverseMaxCostOpt = Annotated[
    float | None,
    max_cost_option(
        " over both models, plus one request's worst case: each request's worst-case cost "
        "(prompt + --max-tokens or --user-max-tokens) is held before it is sent"
    ),
]


@app.command("converse")
def converse_cmd(
    ctx: typer.Context,
    model: AssistantOpt = "llamacpp",
    user_model: UserModelOpt = None,
    turns: TurnsOpt = DEFAULT_TURNS,
    user_retries: UserRetriesOpt = DEFAULT_USER_RETRIES,
    dataset: DatasetOpt = None,
    revision: RevisionOpt = None,
    include_memory: MemoryOpt = False,
    cleaned: CleanedOpt = False,
    limit: LimitOpt = None,
    label: ConverseLabelOpt = None,
    system_prompt: AssistantSystemOpt = None,
    temperature: TemperatureOpt = None,
    top_p: TopPOpt = None,
    max_tokens: MaxTokensOpt = MAX_TOKENS,
    seed: SeedOpt = SEED,
    user_temperature: UserTemperatureOpt = None,
    user_top_p: UserTopPOpt = None,
    user_max_tokens: UserMaxTokensOpt = MAX_TOKENS,
    user_seed: UserSeedOpt = SEED,
    api_key_env: KeyEnvOpt = None,
    api_key_file: KeyFileOpt = None,
    user_api_key_env: UserKeyEnvOpt = None,
    user_api_key_file: UserKeyFileOpt = None,
    concurrency: ConversationsOpt = None,
    timeout: TimeoutOpt = TIMEOUT_S,
    max_retries: MaxRetriesOpt = MAX_RETRIES,
    prices: PricesOpt = None,
    max_cost: ConverseMaxCostOpt = None,
    dry_run: DryRunOpt = False,
    store: StoreOpt = DEFAULT_STORE,
    progress: ProgressOpt = True,
) -> None:
    """Hold an N-turn conversation from every prompt with a simulated user; resumable.

    A second model plays the person who wrote each prompt; every assistant turn is stored as an
    ordinary response, so `intima judge` and `intima score` rate each turn in its context.

    Example: intima converse -m openai-compat:smollm2@http://127.0.0.1:8091/v1 --turns 3
    """
    from intima.converse.runner import converse
    from intima.generate.runner import check

    assistant = ModelOptions.of(ctx).config(model, GenerationOptions.of(ctx).settings())
    user = _user(ctx, assistant)
    which = PromptOptions.of(ctx)
    spending = SpendingSettings.from_options(prices, max_cost)  # the default table, under --prices
    spending.require([assistant, user])  # before any store or request: both models are priced
    if dry_run:  # before any key is read or server reached: nothing is sent
        _dry_run(store, assistant, user, turns, user_retries, spending, which.load())
        return
    # Nothing is created before the input is valid: a new store also waits for the servers,
    # and a bad spec or an unreachable server is said before any dataset download.
    check([assistant, user], reach=not store.exists())
    prompts = which.load()
    n = len(prompts)
    console.print(
        f"{for_terminal(prompts.info.dataset_id)}: {n} conversations of {turns} turns: "
        f"{n * turns} assistant and {n * (turns - 1)} simulated-user requests (plus retries); "
        f"store {for_terminal(str(store))}",
        highlight=False,
    )
    with Store.open(store) as db, progress_display(progress) as on_progress:
        summary = converse(
            db,
            assistant,
            user,
            prompts,
            turns,
            max_user_retries=user_retries,
            on_progress=on_progress,
            prices=spending.prices,
            max_cost=spending.max_cost,
        )
    _report(summary, store)


def _user(ctx: typer.Context, assistant: ModelConfig) -> ModelConfig:
    """The simulated user: its ``--user-`` options; the assistant's model, and its keys unless
    the user has a model or keys of its own; the assistant's timeout and retries."""
    user_model, key_env, key_file = (
        ctx.params["user_model"],
        ctx.params["user_api_key_env"],
        ctx.params["user_api_key_file"],
    )
    same_keys = user_model is None and key_env is None and key_file is None
    return ModelConfig(
        spec=user_model or assistant.spec,
        generation=GenerationOptions.of(ctx, prefix="user_").settings(),
        api_key_env=assistant.api_key_env if same_keys else key_env,
        api_key_file=assistant.api_key_file if same_keys else key_file,
        timeout_s=assistant.timeout_s,
        max_retries=assistant.max_retries,
    )


def _dry_run(
    store: Path,
    assistant: ModelConfig,
    user: ModelConfig,
    turns: int,
    user_retries: int,
    spending: SpendingSettings,
    prompts: PromptSet,
) -> None:
    from intima.cli._dry_run import dry_run
    from intima.converse.estimate import estimate_conversations

    dry_run(
        store,
        lambda db: estimate_conversations(
            db, assistant, user, prompts, turns, spending.prices, max_user_retries=user_retries
        ),
    )


def _report(summary: ConverseSummary, store: Path) -> None:
    table = Table(title="intima converse")
    columns = ("run", "label", "conversations", "turns", "new", "complete", "stopped", "cost",
               "status")  # fmt: skip
    for col in columns:
        table.add_column(col, overflow="fold")
    cost = "-" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
    table.add_row(
        summary.run_id[:8],
        for_terminal(summary.label),
        str(summary.conversations),
        str(summary.turns_stored),
        str(summary.turns_new),
        str(summary.complete),
        str(summary.stopped_by_user),
        cost,
        summary.status,
    )
    out.print(table)
    out.print(
        f"converse: {summary.turns_stored} turns stored ({summary.turns_new} new, "
        f"{summary.turns_reused} reused); {summary.complete} of {summary.conversations} "
        f"conversations complete; {summary.stopped_by_user} stopped by the simulated user; "
        f"{summary.failed} errors",
        highlight=False,
    )
    from intima.cli.judge import fail_if_any, print_notes
    from intima.converse.state import failure_reasons

    print_notes(summary.notes)
    if summary.failed:
        with Store.open(store) as db:
            reasons = failure_reasons(db, summary.run_id)
        fail_if_any(
            "request(s) failed after retries",
            reasons or {"unknown": summary.failed},
            "Run the same command again to retry them.",
        )
