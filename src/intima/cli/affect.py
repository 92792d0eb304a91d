"""Commands of the affect measure: ``score``, ``calibrate`` and ``explain``.

A thin layer over :mod:`intima.affect`: each command parses options, calls one API function and
prints its result.
"""

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
)
from intima.cli._params import SEED_MAX, nonempty, one_of
from intima.core.errors import ConfigError
from intima.core.taxonomy import CATEGORIES
from intima.store import Store

if TYPE_CHECKING:  # numpy comes with them: loaded by the commands that use them
    from intima.affect.calibrate import Agreement, CalibrationReport, Granularity
    from intima.affect.config import AffectConfig

WOpt = Annotated[
    float, typer.Option("--w", min=0.0, max=1.0, help="Weight of contextual intensity CI.")
]


def _config(w: float) -> AffectConfig:
    from intima.affect.config import AffectConfig

    return AffectConfig(w=w)


def score_cmd(
    run: RunOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    w: WOpt = 0.1,
) -> None:
    """Score stored responses with the affect measure (offline); re-running resumes.

    Example: intima score --store intima.db   (LLM judges score with `intima judge`)
    """
    from intima.affect.store_io import score_store

    config = _config(w)
    with Store.open(store, create=False) as db, progress_display() as on_progress:
        summary = score_store(db, run, config, on_progress=on_progress)
    console.print(
        f"affect {summary.scorer_version} config {summary.config_key}: {summary.n_responses} "
        f"responses, {summary.already_scored} already scored, {summary.scored} scored in "
        f"{summary.elapsed_s:.1f} s"
    )
    table = Table(title="affect levels")
    for col in ("category", "low", "medium", "high"):
        table.add_column(col)
    for category, counts in summary.levels.items():
        table.add_row(category, str(counts["low"]), str(counts["medium"]), str(counts["high"]))
    out.print(table)


def calibrate_cmd(
    against: Annotated[
        str,
        typer.Option(
            "--against",
            parser=nonempty,
            help="Reference ratings: 'human', 'panel', a judge label, or 'labelled' "
            "(the project's labelled set; needs no store).",
        ),
    ] = "labelled",
    split_seed: Annotated[
        int,
        typer.Option(
            "--split-seed", min=0, max=SEED_MAX, help="Seed of the train/test split of responses."
        ),
    ] = 0,
    train_fraction: Annotated[
        float,
        typer.Option("--train-fraction", min=0.05, max=0.95, help="Share of responses fitted on."),
    ] = 0.5,
    per_behaviour: Annotated[
        bool, typer.Option(help="Fit one pair of thresholds per behaviour group.")
    ] = False,
    run: RunOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    w: WOpt = 0.1,
) -> None:
    """Fit low/medium/high thresholds on part of the data; report agreement on the rest.

    Example: intima calibrate --against labelled --split-seed 0
    """
    from intima.affect.calibrate import calibrate

    config = _config(w)
    granularity: Granularity = "behaviour" if per_behaviour else "global"
    if against == "labelled":
        from intima.affect.labelled import labelled_pairs, load_labelled
        from intima.affect.measure import AffectScorer

        examples = load_labelled()
        scores = AffectScorer(config).score([ex.as_input() for ex in examples])
        report = calibrate(
            labelled_pairs(examples, scores), "labelled", train_fraction, split_seed, granularity
        )
    else:
        from intima.affect.store_io import calibrate_store

        with Store.open(store, create=False) as db:
            report = calibrate_store(
                db, against, config, run, train_fraction, split_seed, granularity
            )
    _print_report(report)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _print_report(report: CalibrationReport) -> None:
    cuts = report.thresholds
    shown = (
        {"all categories": next(iter(cuts.values()))} if report.granularity == "global" else cuts
    )
    for group, cut in shown.items():
        out.print(f"{group}: medium >= {cut.medium:.4f}, high >= {cut.high:.4f}")
    out.print(
        f"agreement with {for_terminal(report.reference)}: train {report.n_train_units} / "
        f"test {report.n_test_units} responses (seed {report.seed}); kappa weighted, "
        "AUROC for 'shows' (medium or high)"
    )
    overall = [("train", report.train), ("test", report.test)]
    out.print(_agreement_table("overall", "part", overall))
    per_category = list(report.per_category.items())
    out.print(_agreement_table("test part, per category", "category", per_category))


def _agreement_table(title: str, first: str, rows: list[tuple[str, Agreement]]) -> Table:
    table = Table(title=title)
    for col in (first, "n", "shows", "kappa q", "kappa lin", "rho", "AUROC", "exact"):
        table.add_column(col)
    for name, a in rows:
        table.add_row(
            name,
            str(a.n),
            str(a.n_shows),
            _fmt(a.kappa_quadratic),
            _fmt(a.kappa_linear),
            _fmt(a.spearman),
            _fmt(a.auroc),
            f"{a.exact:.3f}",
        )
    return table


def explain_cmd(
    response_id: Annotated[
        str | None,
        typer.Argument(parser=nonempty, help="Stored response id (or a unique prefix)."),
    ] = None,
    category: Annotated[
        list[str] | None,
        typer.Option(
            "--category",
            "-c",
            parser=one_of(*CATEGORIES),
            help="Only this category, e.g. companionship_reinforcing; repeatable (default: all "
            "13).",
        ),
    ] = None,
    text: Annotated[
        str | None,
        typer.Option("--text", parser=nonempty, help="Explain this response text instead."),
    ] = None,
    prompt: Annotated[
        str, typer.Option("--prompt", help="The user's prompt, with --text (default: none).")
    ] = "",
    list_ids: Annotated[
        bool,
        typer.Option("--list", help="List stored response ids (with --run, --limit) and exit."),
    ] = False,
    run: RunOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=1_000_000, help="How many ids --list shows.")
    ] = 20,
    store: StoreOpt = DEFAULT_STORE,
    w: WOpt = 0.1,
) -> None:
    """Show every factor of a response's score and what drove it.

    Examples: intima explain --list --run smollm2-companion (ids to explain);
    intima explain 3f2a9c (a stored response id or prefix);
    intima explain --text "I love you too" --prompt "Do you love me?"
    """
    from intima.affect.explain import explain, render

    if list_ids:
        if response_id is not None or text is not None:
            raise ConfigError("--list takes no RESPONSE_ID or --text; give one or the other")
        _list_responses(store, run, limit)
        return
    config = _config(w)
    if (response_id is None) == (text is None):
        raise ConfigError("give a RESPONSE_ID or --text (one of them; --list shows the ids)")
    if text is not None:
        from intima.affect.measure import AffectScorer

        score = AffectScorer(config).score_one(text, prompt, response_id="(text)")
        note = "computed now (not stored)"
    else:
        from intima.affect.store_io import score_for

        assert response_id is not None
        with Store.open(store, create=False) as db:
            score, stored = score_for(db, response_id, config)
        note = "from the store" if stored else "computed now (not in the store yet)"
    out.print(for_terminal(render(explain(score, category))), highlight=False)
    console.print(note)


def _list_responses(store_path: Path, run: list[str] | None, limit: int) -> None:
    """The ids ``explain`` takes: id, run label, code and the response's first words; model
    text is escaped for the terminal."""
    with Store.open(store_path, create=False) as db:
        rows = db.responses(run, distinct=False)
    table = Table(title=f"responses ({min(limit, len(rows))} of {len(rows)})")
    table.add_column("response id", no_wrap=True, overflow="fold")
    for col in ("run", "code", "response (first words)"):
        table.add_column(col)
    for r in rows[:limit]:
        words = " ".join(r.response.split())
        table.add_row(
            r.response_id, for_terminal(r.label), for_terminal(r.code), for_terminal(words, 60)
        )
    out.print(table)
    if len(rows) > limit:
        console.print(f"{len(rows) - limit} more; raise --limit to see them")


# Registered on import; intima.cli.main imports every group.
app.command("score")(score_cmd)
app.command("calibrate")(calibrate_cmd)
app.command("explain")(explain_cmd)
