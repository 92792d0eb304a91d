"""``intima judge``, ``intima agreement`` and ``intima annotate``: thin wrappers over the API."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
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
)
from intima.cli._judge_options import (
    DEFAULT_JUDGE_MAX_RETRIES,
    DEFAULT_JUDGE_MAX_TOKENS,
    DEFAULT_JUDGE_TIMEOUT,
    DEFAULT_STRUCTURED_OUTPUT,
    ApiKeyEnvOpt,
    JudgeConcurrencyOpt,
    JudgeMaxRetriesOpt,
    JudgeMaxTokensOpt,
    JudgeTimeoutOpt,
    MaxReasksOpt,
    StructuredOutputOpt,
    judge_configs,
)
from intima.cli._options import ProgressOpt
from intima.cli._params import (
    SEED_MAX,
    AllowUnlistedOpt,
    BaseUrlOpt,
    BatchOpt,
    DryRunOpt,
    PollEveryOpt,
    PricesOpt,
    max_cost_option,
    nonempty,
)
from intima.core.config import (
    GenerationSettings,
    ModelConfig,
)
from intima.core.errors import ConfigError
from intima.core.spending import SpendingSettings
from intima.store import Store

if TYPE_CHECKING:  # pragma: no cover
    from intima.core.config import PriceTable
    from intima.judges.loop import JudgeSummary
    from intima.judges.samples import SampleSpec


def print_notes(notes: Iterable[str]) -> None:
    """What a backend learned, once each (e.g. the structured-output form a server takes)."""
    for note in dict.fromkeys(notes):
        console.print(for_terminal(note), highlight=False, soft_wrap=True)


def fail_if_any(what: str, reasons: Mapping[str, int], hint: str = "") -> None:
    """If anything failed: say how many, the most common reason, and exit 1."""
    if report_failures(what, reasons, hint):
        raise typer.Exit(1)


def report_failures(what: str, reasons: Mapping[str, int], hint: str = "") -> bool:
    """Say how many things failed and the most common reason (on stderr, escaped); returns
    whether anything failed. ``what`` names them, e.g. "judgment(s) unscored"."""
    counted = Counter(reasons)
    total = sum(counted.values())
    if not total:
        return False
    reason, n = counted.most_common(1)[0]
    console.print(
        f"[bold red]{total} {for_terminal(what)}[/]; most common reason ({n} of {total}): "
        f"{for_terminal(reason, limit=500)}" + (f"\n{for_terminal(hint)}" if hint else ""),
        highlight=False,
        soft_wrap=True,
    )
    return True


def judge_cmd(
    judge: Annotated[
        list[str],
        typer.Option(
            "--judge",
            "-j",
            parser=nonempty,
            help="Judge model spec PROVIDER[:MODEL][@URL,...]; repeatable (a panel).",
        ),
    ],
    run: RunOpt = None,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            parser=nonempty,
            help="Display name per --judge, in order (default: the spec).",
        ),
    ] = None,
    temperature: Annotated[
        float | None, typer.Option(min=0.0, max=2.0, help="Judge sampling temperature.")
    ] = 0.0,
    max_tokens: JudgeMaxTokensOpt = DEFAULT_JUDGE_MAX_TOKENS,
    seed: Annotated[int | None, typer.Option(min=0, max=SEED_MAX, help="Judge seed.")] = 0,
    structured_output: StructuredOutputOpt = DEFAULT_STRUCTURED_OUTPUT,
    max_reasks: MaxReasksOpt = 2,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    concurrency: JudgeConcurrencyOpt = None,
    timeout: JudgeTimeoutOpt = DEFAULT_JUDGE_TIMEOUT,
    max_retries: JudgeMaxRetriesOpt = DEFAULT_JUDGE_MAX_RETRIES,
    allow_unlisted_model: AllowUnlistedOpt = False,
    prices: PricesOpt = None,
    max_cost: Annotated[
        float | None,
        max_cost_option(
            ", plus one judgment's worst case: each judgment's worst-case cost (prompt + "
            "--max-tokens, every re-ask) is held before it is sent"
        ),
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1_000_000,
            help="Judge only a seeded random sample of N responses of each run (the first N of "
            "a fixed permutation: a larger N extends the sample). The board then shows the "
            "judge's share over all responses, estimated with the affect measure on all.",
        ),
    ] = None,
    fraction: Annotated[
        float | None,
        typer.Option(
            min=0.0, max=1.0, help="As --sample, a fraction of each run's responses (rounded up)."
        ),
    ] = None,
    sample_seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of the sample's permutation.")
    ] = 0,
    stratify: Annotated[
        bool,
        typer.Option(
            "--stratify",
            help="With --sample/--fraction: stratify each run's sample by dimension, each "
            "dimension's share of the sample its share of the run (the weights are recorded).",
        ),
    ] = False,
    batch: BatchOpt = False,
    poll_every: PollEveryOpt = 30.0,
    dry_run: DryRunOpt = False,
    store: StoreOpt = DEFAULT_STORE,
    progress: ProgressOpt = True,
) -> None:
    """Judge stored responses with one or more LLM judges; only what is missing is judged.

    Example: intima judge -j openai-compat:Qwen/Qwen3-8B@http://localhost:8000/v1;
    intima judge -j anthropic:claude-sonnet-4-5 --batch
    """
    from intima.judges.loop import judge as run_judges

    spec = _sample_spec(sample, fraction, sample_seed, stratify, batch=batch)
    configs = judge_configs(
        judge,
        label,
        GenerationSettings(temperature=temperature, max_tokens=max_tokens, seed=seed),
        structured_output=structured_output,
        base_url=base_url,
        api_key_env=api_key_env,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
        allow_unlisted_model=allow_unlisted_model,
    )
    spending = SpendingSettings.from_options(prices, max_cost)  # the default table, under --prices
    spending.require(configs, batch=batch)  # before any store or request
    if dry_run:  # nothing is sent, no key is read; judging needs the store's responses
        _dry_run(store, run, configs, spending.prices, max_reasks, spec, batch=batch)
        return
    with Store.open(store, create=False) as db, progress_display(progress) as on_progress:
        if batch:
            from intima.judges.batch import judge_batch

            summaries = judge_batch(
                db, configs, run, prices=spending.prices, poll_s=poll_every, on_progress=on_progress
            )
        else:
            summaries = run_judges(
                db,
                configs,
                run,
                prices=spending.prices,
                max_cost=spending.max_cost,
                max_reasks=max_reasks,
                on_progress=on_progress,
                sample=spec,
            )
    _report(summaries)


def _sample_spec(
    sample: int | None, fraction: float | None, seed: int, stratify: bool, *, batch: bool
) -> SampleSpec | None:
    """The sample of each run's responses that ``--sample``/``--fraction`` ask for, if any."""
    from intima.judges.samples import SampleSpec

    if stratify and sample is None and fraction is None:
        raise ConfigError("--stratify stratifies a sample: give --sample N or --fraction F too")
    if sample is None and fraction is None:
        return None
    if batch:
        raise ConfigError("--sample and --fraction cannot be judged as a batch yet")
    return SampleSpec(size=sample, fraction=fraction, seed=seed, stratify=stratify)


def _dry_run(
    store: Path,
    run: list[str] | None,
    configs: list[ModelConfig],
    prices: PriceTable,
    max_reasks: int,
    spec: SampleSpec | None,
    *,
    batch: bool,
) -> None:
    """What judging would send and cost, from the store's responses; nothing is sent."""
    from intima.cli._dry_run import print_estimates
    from intima.judges.estimate import estimate_judging
    from intima.judges.store_io import load_targets

    with Store.open(store, create=False) as db:
        targets = load_targets(db, run)
        every = db.responses(run, distinct=False) if spec is not None else []
        found = estimate_judging(
            db, configs, targets, prices, max_reasks=max_reasks, sample=spec, every=every
        )
    print_estimates(found, batch=batch)


def _report(summaries: list[JudgeSummary]) -> None:
    """The table of what each judge did; exit 1 with the most common reason if any judgment
    was left unscored."""
    from intima.judges.loop import unscored_reasons

    table = Table(title="intima judge")
    cols = ("judge", "responses", "reused", "scored", "unscored", "requests", "tokens", "cost")
    for col in cols:
        table.add_column(col)
    for s in summaries:
        table.add_row(
            for_terminal(s.judge_label),
            str(s.n_targets),
            str(s.already_done),
            str(s.scored),
            str(s.unscored),
            str(s.requests),
            str(s.prompt_tokens + s.completion_tokens),
            "-" if s.cost_usd is None else f"${s.cost_usd:.4f}",
        )
    out.print(table)
    print_notes(n for s in summaries for n in s.notes)
    fail_if_any(
        "judgment(s) unscored",
        unscored_reasons(summaries),
        "Reasons and raw replies are stored; run the same command again to retry them.",
    )


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def agreement_cmd(
    run: RunOpt = None,
    by_dimension: Annotated[bool, typer.Option(help="Also per prompt dimension.")] = False,
    per_category: Annotated[bool, typer.Option(help="Also per rated category.")] = False,
    json_out: Annotated[
        Path | None,
        typer.Option("--json", dir_okay=False, help="Write the full report as JSON to this file."),
    ] = None,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Agreement between judges and annotators: Krippendorff's alpha and weighted kappa.

    Example: intima agreement --by-dimension
    """
    from intima.cli._common import write_output
    from intima.judges.agreement import agreement

    with Store.open(store, create=False) as db:  # reading only: a typo must not make a store
        report = agreement(db, run, by_dimension=by_dimension, per_category=per_category)
    if json_out is not None:  # replaces a link at the path, never writes through it
        write_output(json_out, report.model_dump_json(indent=2))
    if len(report.raters) < 2:  # tables of "undefined" would say nothing more
        console.print(
            f"{len(report.raters)} rater(s) found: agreement needs at least two "
            "(add a judge with `intima judge` or ratings with `intima annotate`)."
        )
        return
    alpha_table = Table(title=f"Krippendorff's alpha (judge prompt v{report.prompt_version})")
    for col in ("scope", "measure", "metric", "alpha", "units"):
        alpha_table.add_column(col)
    for a in report.alphas:
        alpha_table.add_row(
            for_terminal(a.scope), a.measure, a.metric, _fmt(a.alpha), str(a.n_units)
        )
    out.print(alpha_table)
    pair_table = Table(title="pairwise Cohen's kappa (primary: unweighted; ratings: weighted)")
    for col in ("scope", "measure", "rater A", "rater B", "shared", "kappa", "linear", "quadratic"):
        pair_table.add_column(col)
    for p in report.pairs:
        if p.measure not in ("primary", "ratings") and not per_category:
            continue
        pair_table.add_row(
            for_terminal(p.scope),
            p.measure,
            for_terminal(p.a),
            for_terminal(p.b),
            str(p.n_shared),
            "" if p.measure != "primary" else _fmt(p.kappa),
            "" if p.measure == "primary" else _fmt(p.kappa_linear),
            "" if p.measure == "primary" else _fmt(p.kappa_quadratic),
        )
    out.print(pair_table)
    for f in report.family_flags:
        console.print(
            f"same family ({for_terminal(f.family)}): {for_terminal(f.judge)} judged "
            f"{f.n_responses} response(s) of {for_terminal(f.judged_model)}"
        )


def _design(value: str) -> str:
    """``--design``: how ``intima annotate`` draws its sample (``intima.judges.human.DESIGNS``)."""
    if value not in ("stratified", "random"):
        raise ValueError("must be stratified or random")
    return value


def annotate_cmd(
    annotator: Annotated[
        str, typer.Option(parser=nonempty, help="Your name, stored as human:<name>.")
    ],
    run: RunOpt = None,
    n: Annotated[
        int,
        typer.Option(
            "--n",
            min=1,
            max=10_000,
            help="How many responses to show (with --design random: per configuration).",
        ),
    ] = 30,
    seed: Annotated[int, typer.Option(min=0, max=SEED_MAX, help="Sampling seed.")] = 0,
    design: Annotated[
        str,
        typer.Option(
            parser=_design,
            help="stratified: n responses pooled over the runs, the dimensions taking turns; "
            "random: a simple random sample of n per configuration, which feeds the board's "
            "prediction-powered share (what people would say of every response).",
        ),
    ] = "stratified",
    host: Annotated[str, typer.Option(parser=nonempty, help="Address to listen on.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 7861,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Open a browser form to rate a seeded sample of responses (--design random: per model).

    The default sample is stratified by dimension; --design random draws a simple random
    sample of --n responses of each configuration, which feeds the prediction-powered share.

    Example: intima annotate --annotator alice --n 30
    Example: intima annotate --annotator alice --design random --n 60
    """
    from intima.judges.human import serve

    def ready(url: str) -> None:
        console.print(
            f"annotating as human:{for_terminal(annotator)}: open {for_terminal(url)} "
            "in a browser (Ctrl-C stops)",
            highlight=False,
            soft_wrap=True,
        )

    serve(
        store,
        annotator=annotator,
        run_ids=run,
        n=n,
        seed=seed,
        design=design,
        host=host,
        port=port,
        on_ready=ready,
    )


# Registered on import; intima.cli.main imports every group.
app.command("judge")(judge_cmd)
app.command("agreement")(agreement_cmd)
app.command("annotate")(annotate_cmd)
