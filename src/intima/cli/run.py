"""Generation commands: ``run``, ``runs``, ``export``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from intima.cli._common import (
    DEFAULT_STORE,
    RunOpt,
    StoreOpt,
    app,
    console,
    for_terminal,
    out,
    progress_display,
    writing_to,
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
    concurrency_option,
)
from intima.cli._params import (
    AllowUnlistedOpt,
    BaseUrlOpt,
    BatchOpt,
    DryRunOpt,
    PollEveryOpt,
    PricesOpt,
    max_cost_option,
    nonempty,
)
from intima.core.config import GenerationSettings, ModelConfig, RunFile, load_run_file
from intima.core.errors import ConfigError
from intima.core.spending import SpendingSettings
from intima.store import Store

if TYPE_CHECKING:  # pragma: no cover
    from intima.core.config import PriceTable
    from intima.dataset import PromptSet
    from intima.generate.runner import RunSummary


@app.command("run")
def run_cmd(
    ctx: typer.Context,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            parser=nonempty,
            help="Model spec PROVIDER[:MODEL][@URL,...], e.g. openai:gpt-4o-mini or "
            "openai-compat:smollm2@http://HOST:8080/v1; repeatable "
            "(default: llamacpp, the bundled SmolLM2 in-process).",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            exists=True,
            dir_okay=False,
            help="TOML file listing model configurations (instead of --model).",
        ),
    ] = None,
    dataset: DatasetOpt = None,
    revision: RevisionOpt = None,
    include_memory: MemoryOpt = False,
    cleaned: CleanedOpt = False,
    limit: LimitOpt = None,
    label: Annotated[
        str | None,
        typer.Option(
            parser=nonempty,
            help="Display name for the configuration (default: the spec plus the settings "
            "that differ from the defaults).",
        ),
    ] = None,
    system_prompt: Annotated[
        str | None,
        typer.Option(parser=nonempty, help="System prompt (default: none, as in the paper)."),
    ] = None,
    temperature: TemperatureOpt = None,
    top_p: TopPOpt = None,
    max_tokens: MaxTokensOpt = MAX_TOKENS,
    seed: SeedOpt = SEED,
    base_url: BaseUrlOpt = None,
    api_key_env: KeyEnvOpt = None,
    api_key_file: KeyFileOpt = None,
    concurrency: Annotated[
        int | None,
        concurrency_option(
            "Requests in flight per model (default: the provider's; 32 for openai-compat, 1 "
            "in-process)."
        ),
    ] = None,
    timeout: TimeoutOpt = TIMEOUT_S,
    max_retries: MaxRetriesOpt = MAX_RETRIES,
    prices: PricesOpt = None,
    max_cost: Annotated[
        float | None,
        max_cost_option(
            ", plus one request's worst case: each request's worst-case cost (prompt + "
            "--max-tokens) is held before it is sent"
        ),
    ] = None,
    allow_unlisted_model: AllowUnlistedOpt = False,
    batch: BatchOpt = False,
    poll_every: PollEveryOpt = 30.0,
    dry_run: DryRunOpt = False,
    store: StoreOpt = DEFAULT_STORE,
    progress: ProgressOpt = True,
) -> None:
    """Generate a response to every prompt; re-running resumes where it stopped.

    Examples: intima run --model openai-compat:smollm2@http://127.0.0.1:8080/v1 --dataset demo;
    intima run --config run.toml; intima run -m openai:gpt-4o-mini --batch;
    intima run -m openai:gpt-4o-mini --dry-run (the requests and their cost, nothing sent)
    """
    from intima.generate import runner

    which = PromptOptions.of(ctx)
    if config is not None:  # the config file's models are what runs
        _refuse_model_options(ctx)
        run_file = load_run_file(config)
        configs, which = list(run_file.models), _under(which, run_file)
    else:
        configs = _RunModels.of(ctx).configs(GenerationOptions.of(ctx).settings())
    spending = SpendingSettings.from_options(prices, max_cost)  # the default table, under --prices
    spending.require(configs, batch=batch)  # before any store or request
    prompt_set = which.load()
    if dry_run:  # before any key is read or server reached: nothing is sent
        _dry_run(store, prompt_set, configs, spending.prices, batch)
        return
    console.print(
        f"{prompt_set.info.dataset_id}: {_how_many(prompt_set)} prompts; "
        f"{len(configs)} configuration(s); store {store}"
    )
    # Nothing is created before the input is valid: a new store also waits for the servers.
    runner.check(configs, reach=not store.exists())
    with Store.open(store) as db, progress_display(progress) as on_progress:
        if batch:
            from intima.generate.batch import generate_batch

            summaries = generate_batch(
                db,
                prompt_set,
                configs,
                prices=spending.prices,
                poll_s=poll_every,
                on_progress=on_progress,
            )
        else:
            summaries = runner.generate(
                db,
                prompt_set,
                configs,
                prices=spending.prices,
                max_cost=spending.max_cost,
                on_progress=on_progress,
            )
    _report(summaries, store)


class _RunModels(ModelOptions):
    """The options that say which models run and how (with the generation options): they make
    the configurations; with --config, the file says it."""

    model: list[str] | None
    base_url: list[str] | None
    allow_unlisted_model: bool

    def configs(self, generation: GenerationSettings) -> list[ModelConfig]:
        """One configuration per ``--model`` (the bundled SmolLM2 in-process when none)."""
        return [
            self.config(
                spec,
                generation,
                base_urls=tuple(self.base_url or ()),
                allow_unlisted_model=self.allow_unlisted_model,
            )
            for spec in (self.model or ["llamacpp"])
        ]


def _under(which: PromptOptions, run_file: RunFile) -> PromptOptions:
    """The prompts the command line names, the config file's where it names none."""
    return which.model_copy(
        update={
            "dataset": which.dataset or run_file.dataset,
            "revision": which.revision or run_file.revision,
            "include_memory": which.include_memory or run_file.include_memory,
            "cleaned": which.cleaned or run_file.cleaned,
        }
    )


def _dry_run(
    store: Path, prompt_set: PromptSet, configs: list[ModelConfig], prices: PriceTable, batch: bool
) -> None:
    """What the run would send and cost; the store is read if it exists, never made."""
    from intima.cli._dry_run import dry_run, store_note
    from intima.generate.estimate import estimate_run

    console.print(
        f"{prompt_set.info.dataset_id}: {len(prompt_set)} prompts; "
        f"{len(configs)} configuration(s); {store_note(store)}",
        highlight=False,
        markup=False,
    )
    dry_run(store, lambda db: estimate_run(db, prompt_set, configs, prices), batch)


def _how_many(prompts: PromptSet) -> str:
    """ "40 of 368" when ``--limit`` took part of the dataset, else "368"."""
    size = prompts.info.size
    return (
        f"{len(prompts)} of {size}"
        if size is not None and size > len(prompts)
        else str(len(prompts))
    )


def _refuse_model_options(ctx: typer.Context) -> None:
    """With --config, an option naming a model or its settings would be silently ignored:
    refuse every one given on the command line (even at its default value)."""
    given = _RunModels.on_command_line(ctx) + GenerationOptions.on_command_line(ctx)
    if given:
        raise ConfigError(
            f"--config names the models and their settings; {', '.join(given)} would be "
            "ignored: put them in the config file, or leave out --config"
        )


def _report(summaries: list[RunSummary], store: Path) -> None:
    """The table of what each configuration did; exit 1 with the most common reason if any
    prompt failed."""
    table = Table(title="intima run")
    cols = ("run", "label", "prompts", "reused", "new", "failed", "tokens out", "cost", "s",
            "status")  # fmt: skip
    for col in cols:
        table.add_column(col, overflow="fold")
    for s in summaries:
        table.add_row(
            s.run_id[:8],
            for_terminal(s.label),
            str(s.n_prompts),
            str(s.already_done),
            str(s.generated),
            str(s.failed),
            str(s.completion_tokens),
            "-" if s.cost_usd is None else f"${s.cost_usd:.4f}",
            f"{s.elapsed_s:.1f}",
            s.status,
        )
    out.print(table)
    from intima.cli.judge import print_notes

    print_notes(n for s in summaries for n in s.notes)
    if any(s.failed for s in summaries):
        from intima.cli.judge import fail_if_any
        from intima.generate.runner import generation_failures

        with Store.open(store) as db:
            reasons = generation_failures(db, [s.run_id for s in summaries if s.failed])
        fail_if_any(
            "prompt(s) failed",
            reasons or {"unknown": sum(s.failed for s in summaries)},
            "See `intima runs`; run the same command again to retry them.",
        )


@app.command("runs")
def runs_cmd(store: StoreOpt = DEFAULT_STORE) -> None:
    """List the runs in the store with their counts and status.

    Example: intima runs --store intima.db
    """
    with Store.open(store, create=False) as db:
        rows = db.run_summaries()
    table = Table(title=f"runs in {store}")
    # In and out apart, as `run` reports them: one sum would not match either.
    cols = ("run", "label", "model", "dataset", "ok", "failed", "missing", "tokens in",
            "tokens out", "status")  # fmt: skip
    for col in cols:
        table.add_column(col, overflow="fold")
    for r in rows:
        missing = r["n_prompts"] - r["n_ok"] - r["n_error"]
        table.add_row(
            for_terminal(r["run_id"][:8]),
            for_terminal(r["label"]),
            for_terminal(r["model_spec"]),
            for_terminal(r["dataset_id"]),
            str(r["n_ok"]),
            str(r["n_error"]),
            str(missing),
            str(r["prompt_tokens"]),
            str(r["completion_tokens"]),
            for_terminal(r["status"]),
        )
    out.print(table)


@app.command("export")
def export_cmd(
    out_dir: Annotated[
        Path, typer.Argument(file_okay=False, help="Folder to write into (created if missing).")
    ],
    run: RunOpt = None,
    force: Annotated[
        bool, typer.Option(help="Write over an earlier export in the same folder.")
    ] = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Write responses as JSONL and Parquet with a manifest (all runs unless --run).

    Example: intima export out/ --run qwen3-8b
    """
    from intima.bundles.export import export_responses

    with Store.open(store, create=False) as db, writing_to(out_dir):
        manifest = export_responses(db, run or [], out_dir, force=force)
    console.print(
        f"wrote {', '.join(f.name for f in manifest.files)} and manifest.json to {out_dir}"
    )
