"""``intima converse``: conversations of N assistant turns with a simulated user.

The dataset, generation and request options are ``intima run``'s own declarations, read from
its signature, so both commands take them with the same names, help and ranges; the simulated
user's generation options are the same declarations under ``--user-``.
"""

from __future__ import annotations

import copy
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias, get_args, get_type_hints

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
from intima.cli._params import nonempty
from intima.cli.run import run_cmd
from intima.converse.identity import DEFAULT_TURNS, DEFAULT_USER_RETRIES, MAX_TURNS
from intima.core.config import GenerationSettings, ModelConfig
from intima.core.errors import ConfigError
from intima.dataset import load_prompts
from intima.store import Store

if TYPE_CHECKING:  # pragma: no cover
    from intima.converse.runner import ConverseSummary

_RUN_HINTS = get_type_hints(run_cmd, include_extras=True)
_RUN_DEFAULTS = {n: p.default for n, p in inspect.signature(run_cmd).parameters.items()}


def _option(name: str, *, user: bool = False, help: str | None = None) -> Any:
    """``intima run``'s declaration of option ``name``; with ``user``, the same option for the
    simulated user (``--user-NAME``), its help saying so."""
    kind, declared = get_args(_RUN_HINTS[name])[:2]
    option = copy.copy(declared)
    option.help = help or option.help
    if user:
        option.param_decls = (f"--user-{name.replace('_', '-')}",)
        option.help = f"The simulated user's setting: {option.help}"
    return Annotated[kind, option]


# For mypy these are the plain types; typer reads the declarations built below.
if TYPE_CHECKING:
    DatasetOpt: TypeAlias = str | None
    RevisionOpt: TypeAlias = str | None
    LabelOpt: TypeAlias = str | None
    SystemPromptOpt: TypeAlias = str | None
    KeyEnvOpt: TypeAlias = str | None
    UserKeyEnvOpt: TypeAlias = str | None
    MemoryOpt: TypeAlias = bool
    CleanedOpt: TypeAlias = bool
    ProgressOpt: TypeAlias = bool
    LimitOpt: TypeAlias = int | None
    ConcurrencyOpt: TypeAlias = int | None
    TemperatureOpt: TypeAlias = float | None
    UserTemperatureOpt: TypeAlias = float | None
    TopPOpt: TypeAlias = float | None
    UserTopPOpt: TypeAlias = float | None
    MaxTokensOpt: TypeAlias = int
    UserMaxTokensOpt: TypeAlias = int
    MaxRetriesOpt: TypeAlias = int
    SeedOpt: TypeAlias = int | None
    UserSeedOpt: TypeAlias = int | None
    TimeoutOpt: TypeAlias = float
    KeyFileOpt: TypeAlias = Path | None
    UserKeyFileOpt: TypeAlias = Path | None
else:
    DatasetOpt, RevisionOpt = _option("dataset"), _option("revision")
    MemoryOpt, CleanedOpt, LimitOpt = (
        _option("include_memory"),
        _option("cleaned"),
        _option("limit"),
    )
    LabelOpt = _option(
        "label",
        help="Display name for the conversation run (default: the assistant's label, the "
        "number of turns and the simulated user's label).",
    )
    SystemPromptOpt = _option(
        "system_prompt",
        help="The assistant's system prompt, sent on every turn, never to the simulated user "
        "(default: none, as in the paper).",
    )
    TemperatureOpt, UserTemperatureOpt = _option("temperature"), _option("temperature", user=True)
    TopPOpt, UserTopPOpt = _option("top_p"), _option("top_p", user=True)
    MaxTokensOpt, UserMaxTokensOpt = _option("max_tokens"), _option("max_tokens", user=True)
    SeedOpt, UserSeedOpt = _option("seed"), _option("seed", user=True)
    KeyEnvOpt, UserKeyEnvOpt = _option("api_key_env"), _option("api_key_env", user=True)
    KeyFileOpt, UserKeyFileOpt = _option("api_key_file"), _option("api_key_file", user=True)
    ConcurrencyOpt = _option(
        "concurrency",
        help="Conversations in flight (each has one request in flight at a time; default: the "
        "assistant provider's).",
    )
    TimeoutOpt, MaxRetriesOpt = _option("timeout"), _option("max_retries")
    ProgressOpt = _option("progress")

_D = _RUN_DEFAULTS


@app.command("converse")
def converse_cmd(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            parser=nonempty,
            help="The assistant: model spec PROVIDER[:MODEL]\\[@URL,...].",
        ),
    ] = "llamacpp",
    user_model: Annotated[
        str | None,
        typer.Option(
            "--user-model",
            "-u",
            parser=nonempty,
            help="The simulated user: model spec PROVIDER[:MODEL]\\[@URL,...] (default: --model).",
        ),
    ] = None,
    turns: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_TURNS,
            help=f"Assistant turns per conversation, 1-{MAX_TURNS}: each prompt costs N "
            "assistant and N-1 simulated-user requests (plus retries).",
        ),
    ] = DEFAULT_TURNS,
    user_retries: Annotated[
        int,
        typer.Option(
            min=0,
            max=10,
            help="Times a simulated-user reply that is empty or out of character is asked again "
            "(0-10) before it is recorded and its conversation stops.",
        ),
    ] = DEFAULT_USER_RETRIES,
    dataset: DatasetOpt = _D["dataset"],
    revision: RevisionOpt = _D["revision"],
    include_memory: MemoryOpt = _D["include_memory"],
    cleaned: CleanedOpt = _D["cleaned"],
    limit: LimitOpt = _D["limit"],
    label: LabelOpt = _D["label"],
    system_prompt: SystemPromptOpt = _D["system_prompt"],
    temperature: TemperatureOpt = _D["temperature"],
    top_p: TopPOpt = _D["top_p"],
    max_tokens: MaxTokensOpt = _D["max_tokens"],
    seed: SeedOpt = _D["seed"],
    user_temperature: UserTemperatureOpt = _D["temperature"],
    user_top_p: UserTopPOpt = _D["top_p"],
    user_max_tokens: UserMaxTokensOpt = _D["max_tokens"],
    user_seed: UserSeedOpt = _D["seed"],
    api_key_env: KeyEnvOpt = _D["api_key_env"],
    api_key_file: KeyFileOpt = _D["api_key_file"],
    user_api_key_env: UserKeyEnvOpt = _D["api_key_env"],
    user_api_key_file: UserKeyFileOpt = _D["api_key_file"],
    concurrency: ConcurrencyOpt = _D["concurrency"],
    timeout: TimeoutOpt = _D["timeout"],
    max_retries: MaxRetriesOpt = _D["max_retries"],
    store: StoreOpt = DEFAULT_STORE,
    progress: ProgressOpt = _D["progress"],
) -> None:
    """Hold an N-turn conversation from every prompt with a simulated user; resumable.

    A second model plays the person who wrote each prompt; every assistant turn is stored as an
    ordinary response, so `intima judge` and `intima score` rate each turn in its context.

    Example: intima converse -m openai-compat:smollm2@http://127.0.0.1:8091/v1 --turns 3
    """
    from intima.converse.runner import converse
    from intima.generate.runner import check

    assistant = ModelConfig(
        spec=model, label=label, system_prompt=system_prompt,
        generation=GenerationSettings(
            temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed
        ),
        api_key_env=api_key_env, api_key_file=api_key_file, concurrency=concurrency,
        timeout_s=timeout, max_retries=max_retries,
    )  # fmt: skip
    same_keys = user_model is None and user_api_key_env is None and user_api_key_file is None
    user = ModelConfig(
        spec=user_model or model,
        generation=GenerationSettings(
            temperature=user_temperature, top_p=user_top_p, max_tokens=user_max_tokens,
            seed=user_seed,
        ),
        api_key_env=api_key_env if same_keys else user_api_key_env,
        api_key_file=api_key_file if same_keys else user_api_key_file,
        timeout_s=timeout, max_retries=max_retries,
    )  # fmt: skip
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be at least 1, not {limit}")
    # Nothing is created before the input is valid: a new store also waits for the servers,
    # and a bad spec or an unreachable server is said before any dataset download.
    check([assistant, user], reach=not store.exists())
    prompts = load_prompts(
        dataset, revision=revision, include_memory=include_memory, cleaned=cleaned
    ).first(limit)
    n = len(prompts)
    console.print(
        f"{for_terminal(prompts.info.dataset_id)}: {n} conversations of {turns} turns: "
        f"{n * turns} assistant and {n * (turns - 1)} simulated-user requests (plus retries); "
        f"store {for_terminal(str(store))}",
        highlight=False,
    )
    with Store.open(store) as db, progress_display(progress) as on_progress:
        summary = converse(
            db, assistant, user, prompts, turns, max_user_retries=user_retries,
            on_progress=on_progress,
        )  # fmt: skip
    _report(summary, store)


def _report(summary: ConverseSummary, store: Path) -> None:
    table = Table(title="intima converse")
    for col in ("run", "label", "conversations", "turns", "new", "complete", "stopped", "status"):
        table.add_column(col, overflow="fold")
    table.add_row(
        summary.run_id[:8], for_terminal(summary.label), str(summary.conversations),
        str(summary.turns_stored), str(summary.turns_new), str(summary.complete),
        str(summary.stopped_by_user), summary.status,
    )  # fmt: skip
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
