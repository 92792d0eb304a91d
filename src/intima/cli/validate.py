"""``intima validate``: how far each scorer agrees with labels intima did not write."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

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
from intima.cli._params import SEED_MAX, DryRunOpt, PricesOpt, nonempty, one_of
from intima.cli.judge import (
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
    fail_if_any,
    judge_configs,
)
from intima.core.config import GenerationSettings
from intima.store import Store


def validate_cmd(
    labels: Annotated[
        Path,
        typer.Option(
            "--labels",
            exists=True,
            dir_okay=False,
            help="Labelled set: JSONL, CSV or Parquet with messages (or prompt), response, and "
            "label (classes) or score (numeric grades).",
        ),
    ],
    scorer: Annotated[
        list[str] | None,
        typer.Option(
            "--scorer",
            "-s",
            parser=one_of("affect", "keyword"),
            help="affect or keyword; repeatable (default: affect, or none with --judge).",
        ),
    ] = None,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge",
            "-j",
            parser=nonempty,
            help="Also validate this LLM judge spec; repeatable, a panel (default: none).",
        ),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            parser=nonempty,
            help="Report per value of these columns, e.g. model,variant (default: overall only).",
        ),
    ] = None,
    columns: Annotated[
        str | None,
        typer.Option(
            parser=nonempty,
            help="Column names of the set, e.g. response=answer,label=gold or score=grade "
            "(default: the usual names; score is used when there is no label column).",
        ),
    ] = None,
    group: Annotated[
        str | None,
        typer.Option(
            parser=nonempty,
            help="Column naming each row's conversation: its one grade is compared with the "
            "--aggregate of its turns' scores (graded sets; default: each row on its own).",
        ),
    ] = None,
    labels_from: Annotated[
        str | None,
        typer.Option(
            parser=nonempty,
            help="Where the set's labels came from, shown on every card of it, e.g. \"each "
            'model judging its own answers" or "two annotators, adjudicated".',
        ),
    ] = None,
    aggregate: Annotated[
        Literal["mean", "max"],
        typer.Option(help="How --group combines a conversation's turn scores: mean or max."),
    ] = "mean",
    limit: Annotated[
        int | None,
        typer.Option(min=1, help="Only the first N rows: imported, judged, scored (default: all)."),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            file_okay=False,
            help="Folder for report.json and roc.png: new, empty, or an earlier report's "
            "(default: validation/<set>).",
        ),
    ] = None,
    bootstrap: Annotated[
        int, typer.Option(min=1, max=100_000, help="Bootstrap replicates for the AUROC interval.")
    ] = 1000,
    seed: Annotated[int, typer.Option(min=0, max=SEED_MAX, help="Seed of the bootstrap.")] = 0,
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
    from intima.validate import validate
    from intima.validate.output import check_out_dir
    from intima.validate.run import load_set

    judges = judge_configs(
        list(judge or []), None, GenerationSettings(temperature=0.0, max_tokens=max_tokens, seed=0),
        structured_output=structured_output, api_key_env=api_key_env, concurrency=concurrency,
        timeout=timeout, max_retries=max_retries,
    )  # fmt: skip
    by_columns = [c.strip() for c in (by or "").split(",") if c.strip()]
    chosen = scorer if scorer is not None else ([] if judges else ["affect"])
    target = out_dir or Path("validation") / labels.stem
    # The set and the folder are checked before the store is opened: a bad file or folder
    # leaves no store behind and changes none.
    labelled = load_set(labels, columns=columns, group=group, limit=limit, by=by_columns)
    if dry_run and not judges:
        out.print("--dry-run: no --judge, so nothing would be sent (the scorers run offline).")
        return
    if dry_run:  # the judges' requests (the scorers run here, for nothing); nothing sent
        from intima.cli._dry_run import dry_run as show
        from intima.core.config import price_table_for
        from intima.judges.estimate import estimate_judging
        from intima.validate.store_io import judge_targets

        table, targets = price_table_for(prices), judge_targets(labelled)
        show(store, lambda db: estimate_judging(db, judges, targets, table, max_reasks=max_reasks))
        return
    check_out_dir(target)
    with Store.open(store) as db, progress_display() as on_progress:
        result = validate(
            db, labelled, scorers=chosen, judges=judges, by=by_columns,
            aggregate=aggregate, out_dir=target,
            bootstrap=bootstrap, seed=seed, max_reasks=max_reasks, on_progress=on_progress,
            labels_from=labels_from,
        )  # fmt: skip
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
                for_terminal(rep["scorer"]), for_terminal(group), str(g["n"]), _auc(g),
                _num(g["macro_f1_rb"]), _num(g["kappa"]),
                str(rep["report"]["n_unscored"]) if group == "overall" else "",
            )  # fmt: skip
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
                for_terminal(rep["scorer"]), for_terminal(group), str(g["n"]),
                _with_interval(g, "spearman"), _with_interval(g, "kendall"),
                str(rep["report"]["n_unscored"]) if group == "overall" else "",
            )  # fmt: skip
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
