"""``intima validate``: how far each scorer agrees with labels intima did not write."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

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
from intima.cli._params import SEED_MAX, DryRunOpt, PricesOpt, nonempty, one_of
from intima.cli.judge import fail_if_any
from intima.core.config import GenerationSettings
from intima.store import Store

if TYPE_CHECKING:  # pragma: no cover
    from intima.validate import ValidationSettings
    from intima.validate.labels import LabelledSet


# The options of `intima validate` alone (the judges' are `intima judge`'s), declared apart
# so that the command reads as the list of its options.
LabelsOpt = Annotated[
    Path,
    typer.Option(
        "--labels",
        exists=True,
        dir_okay=False,
        help="Labelled set: JSONL, CSV or Parquet with messages (or prompt), response, and "
        "label (classes) or score (numeric grades).",
    ),
]

ScorerOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--scorer",
        "-s",
        parser=one_of("affect", "keyword"),
        help="affect or keyword; repeatable (default: affect, or none with --judge).",
    ),
]

ValidateJudgeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--judge",
        "-j",
        parser=nonempty,
        help="Also validate this LLM judge spec; repeatable, a panel (default: none).",
    ),
]

ByOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="Report per value of these columns, e.g. model,variant (default: overall only).",
    ),
]

ColumnsOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="Column names of the set, e.g. response=answer,label=gold or score=grade "
        "(default: the usual names; score is used when there is no label column).",
    ),
]

GroupOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="Column naming each row's conversation: its one grade is compared with the "
        "--aggregate of its turns' scores (graded sets; default: each row on its own).",
    ),
]

LabelsFromOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="Where the set's labels came from, shown on every card of it, e.g. \"each "
        'model judging its own answers" or "two annotators, adjudicated".',
    ),
]

AggregateOpt = Annotated[
    Literal["mean", "max"],
    typer.Option(help="How --group combines a conversation's turn scores: mean or max."),
]

RowLimitOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Only the first N rows: imported, judged, scored (default: all)."),
]

OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        file_okay=False,
        help="Folder for report.json and roc.png: new, empty, or an earlier report's "
        "(default: validation/<set>).",
    ),
]

BootstrapOpt = Annotated[
    int, typer.Option(min=1, max=100_000, help="Bootstrap replicates for the AUROC interval.")
]

BootstrapSeedOpt = Annotated[int, typer.Option(min=0, max=SEED_MAX, help="Seed of the bootstrap.")]


def validate_cmd(
    labels: LabelsOpt,
    scorer: ScorerOpt = None,
    judge: ValidateJudgeOpt = None,
    by: ByOpt = None,
    columns: ColumnsOpt = None,
    group: GroupOpt = None,
    labels_from: LabelsFromOpt = None,
    aggregate: AggregateOpt = "mean",
    limit: RowLimitOpt = None,
    out_dir: OutOpt = None,
    bootstrap: BootstrapOpt = 1000,
    seed: BootstrapSeedOpt = 0,
    structured_output: StructuredOutputOpt = DEFAULT_STRUCTURED_OUTPUT,
    max_tokens: JudgeMaxTokensOpt = DEFAULT_JUDGE_MAX_TOKENS,
    max_reasks: MaxReasksOpt = 2,
    concurrency: JudgeConcurrencyOpt = None,
    timeout: JudgeTimeoutOpt = DEFAULT_JUDGE_TIMEOUT,
    max_retries: JudgeMaxRetriesOpt = DEFAULT_JUDGE_MAX_RETRIES,
    api_key_env: ApiKeyEnvOpt = None,
    prices: PricesOpt = None,
    dry_run: DryRunOpt = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Measure scorers against an external labelled set (the keyword baseline beside them).

    Example: intima validate --labels ../shared/validation/companion-responses-dev.jsonl --by model
    """
    from intima.judges.loop import stored_unscored_reasons
    from intima.validate import ValidationSettings, validate
    from intima.validate.output import check_out_dir
    from intima.validate.run import load_set

    judges = judge_configs(
        list(judge or []),
        None,
        GenerationSettings(temperature=0.0, max_tokens=max_tokens, seed=0),
        structured_output=structured_output,
        api_key_env=api_key_env,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
    )
    settings = ValidationSettings(
        scorers=tuple(scorer if scorer is not None else ([] if judges else ["affect"])),
        judges=tuple(judges),
        max_reasks=max_reasks,
        by=tuple(c.strip() for c in (by or "").split(",") if c.strip()),
        aggregate=aggregate,
        bootstrap=bootstrap,
        seed=seed,
        labels_from=labels_from,
    )
    target = out_dir or Path("validation") / labels.stem
    # The set and the folder are checked before the store is opened: a bad file or folder
    # leaves no store behind and changes none.
    labelled = load_set(labels, columns=columns, group=group, limit=limit, by=settings.by)
    if dry_run:
        _dry_run(store, labelled, settings, prices)
        return
    check_out_dir(target)
    with Store.open(store) as db, progress_display() as on_progress:
        result = validate(db, labelled, settings, out_dir=target, on_progress=on_progress)
        unscored = stored_unscored_reasons(db, [j.config_key for j in judges], [result.run_id])
    _print(result.model_dump())
    if result.in_sample:
        out.print(
            "affect: in-sample figures (the shipped parameters were fitted on this file); "
            "held-out ones: docs/affect.md",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"wrote {', '.join(for_terminal(f) for f in result.files)}", highlight=False)
    fail_if_any(
        "judge judgment(s) unscored",
        unscored,
        "Reasons and raw replies are stored; run the same command again to retry them.",
    )


def _dry_run(
    store: Path, labelled: LabelledSet, settings: ValidationSettings, prices: Path | None
) -> None:
    """The judges' requests and their cost (the scorers run offline, for nothing); nothing is
    sent, nothing written."""
    if not settings.judges:
        out.print("--dry-run: no --judge, so nothing would be sent (the scorers run offline).")
        return
    from intima.cli._dry_run import dry_run
    from intima.core.config import price_table_for
    from intima.judges.estimate import estimate_judging
    from intima.judges.loop import DEFAULT_MAX_REASKS
    from intima.validate.store_io import judge_targets

    table, targets = price_table_for(prices), judge_targets(labelled)
    reasks = DEFAULT_MAX_REASKS if settings.max_reasks is None else settings.max_reasks
    judges = list(settings.judges)
    dry_run(store, lambda db: estimate_judging(db, judges, targets, table, max_reasks=reasks))


def _print(result: dict[str, Any]) -> None:
    if result["kind"] == "graded":
        _print_graded(result)
        return
    table = Table(title=f"intima validate: {for_terminal(result['set_name'])}")
    for col in ("scorer", "group", "n", "AUROC [95% CI]", "macro-F1 (R/B)", "kappa", "unscored"):
        table.add_column(col)
    for rep in result["scorers"]:
        for group, g in rep["report"]["groups"].items():
            table.add_row(
                for_terminal(rep["scorer"]),
                for_terminal(group),
                str(g["n"]),
                _auc(g),
                _num(g["macro_f1_rb"]),
                _num(g["kappa"]),
                str(rep["report"]["n_unscored"]) if group == "overall" else "",
            )
    out.print(table)
    from intima.validate.length import length_note

    for rep in result["scorers"]:  # a diagnostic: is the scorer's error tied to length?
        effect = rep["report"].get("length")
        if effect:
            line = f"{rep['scorer']}: error vs response length: {length_note(effect)}"
            out.print(for_terminal(line), highlight=False, soft_wrap=True)


def _print_graded(result: dict[str, Any]) -> None:
    unit = result["scorers"][0]["report"]["unit"] if result["scorers"] else "response"
    how = f" (a grade per {unit})"
    table = Table(title=f"intima validate: {for_terminal(result['set_name'])}{how}")
    for col in ("scorer", "group", "n", "Spearman [95% CI]", "Kendall [95% CI]", "unscored"):
        table.add_column(col)
    for rep in result["scorers"]:
        for group, g in rep["report"]["groups"].items():
            table.add_row(
                for_terminal(rep["scorer"]),
                for_terminal(group),
                str(g["n"]),
                _with_interval(g, "spearman"),
                _with_interval(g, "kendall"),
                str(rep["report"]["n_unscored"]) if group == "overall" else "",
            )
    out.print(table)


def _with_interval(g: dict[str, Any], name: str) -> str:
    if g[name] is None:
        return "–"
    if g[f"{name}_lo"] is None:
        return f"{g[name]:.3f}"
    return f"{g[name]:.3f} [{g[f'{name}_lo']:.3f}, {g[f'{name}_hi']:.3f}]"


def _auc(g: dict[str, Any]) -> str:
    if g["auroc"] is None:
        return "–"
    if g.get("auroc_lo") is None:  # too few of a class for an interval (metrics.auroc_interval)
        return f"{g['auroc']:.3f} (too few rows for an interval)"
    return f"{g['auroc']:.3f} [{g['auroc_lo']:.3f}, {g['auroc_hi']:.3f}]"


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


app.command("validate")(validate_cmd)
