"""``intima drift``: how each configuration's behaviour changes over a conversation."""

from __future__ import annotations

import json
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
    write_output,
)
from intima.cli._params import nonempty
from intima.core.errors import IntimaError
from intima.core.escape import quoted
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED

if TYPE_CHECKING:  # numpy comes with them: loaded by the command
    from intima.results.drift import DriftTable, Estimate


class DriftError(IntimaError):
    """The drift table cannot be made as asked."""


def drift_cmd(
    run: Annotated[
        list[str] | None,
        typer.Option(
            "--run",
            parser=nonempty,
            help="Conversation run id or label; repeatable. Default: every one.",
        ),
    ] = None,
    scorer: Annotated[
        str | None,
        typer.Option(
            "--scorer",
            parser=nonempty,
            help="Whose labels: judge:LABEL (or just LABEL), panel, human or affect. Default: "
            "the panel if two or more judges rated the turns, else the first judge, then "
            "human, then affect.",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option(min=0, help="Seed of the cluster bootstrap of the slopes (>= 0).")
    ] = DEFAULT_SEED,
    bootstrap: Annotated[
        int,
        typer.Option(
            "--bootstrap",
            min=1,
            max=100_000,
            help="Bootstrap replicates (B) for the slopes' intervals, 1-100000.",
        ),
    ] = DEFAULT_BOOTSTRAP,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json",
            dir_okay=False,
            help="Also write the whole table (every number) to this JSON file.",
        ),
    ] = None,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """How behaviour drifts over a conversation: rates by turn, slope, dropped boundaries.

    Example: intima drift --scorer panel --store intima.db
    """
    from intima.results.conversations import drift_tables, load_conversations
    from intima.store import Store

    if not store.is_file():
        raise DriftError(f"no store at {store}; run `intima converse` first or pass --store")
    with Store.open(store, create=False) as db:
        board = load_conversations(db, run)
    if not board.turns:
        raise DriftError(
            f"{store} has no conversation runs{' among --run' if run else ''}; "
            "run `intima converse` first"
        )
    chosen = _scorer(scorer, board.scorers)
    if scorer is None:
        console.print(_why(chosen, board.scorers), markup=False, highlight=False)
    (table,) = drift_tables(board, [chosen], bootstrap=bootstrap, seed=seed).values()
    out.print(render(table))
    for line in footnotes(table):
        out.print(line, highlight=False)
    if json_path is not None:
        write_output(json_path, json.dumps(table.model_dump(mode="json"), indent=2) + "\n")
        console.print(f"wrote {for_terminal(str(json_path))}", highlight=False)


def _scorer(asked: str | None, available: tuple[str, ...]) -> str:
    from intima.results.conversations import default_scorer

    if not available:
        raise DriftError(
            "no turn of these conversations is rated yet; run `intima judge` or "
            "`intima score` first"
        )
    if asked is None:
        return str(default_scorer(available))
    name = asked if asked in {"panel", "human", "affect"} or ":" in asked else f"judge:{asked}"
    if name not in available:
        raise DriftError(
            f"--scorer {quoted(asked)}: no rating of these conversations by {name}; "
            f"available: {', '.join(available)}"
        )
    return name


def _why(chosen: str, available: tuple[str, ...]) -> str:
    """Which labels the default took and why: a judge that has not rated the turns yet leaves
    the affect measure, which a reader expecting "the panel, else the first judge" must see."""
    if chosen == "panel":
        reason = "two or more judges rated these turns, so their panel"
    elif chosen.startswith("judge:"):
        reason = "the first judge that rated these turns"
    else:
        reason = (
            "no judge has rated these conversations' turns (`intima judge` rates them; "
            "then the panel or the first judge is used)"
        )
    others = [a for a in available if a != chosen]
    also = f"; --scorer also takes {', '.join(others)}" if others else ""
    return f"labels: {for_terminal(chosen)}: {reason}{for_terminal(also)}"


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def rate_cell(est: Estimate, n_usual: int | None = None) -> str:
    """``rate [lo, hi]`` in percent, then ``n=N`` unless N is ``n_usual`` (the row's number of
    conversations); ``– n=0`` when there is no rate."""
    n = "" if est.n == n_usual else f" n={est.n}"
    if est.value is None:
        return "–" + n
    return f"{pct(est.value)} [{pct(est.lo)}, {pct(est.hi)}]{n}"


def signed(x: float) -> str:
    """Points with their sign; a value that rounds to zero reads 0.0, never -0.0."""
    v = round(x, 1)
    return "0.0" if v == 0 else f"{v:+.1f}"


def slope_cell(est: Estimate) -> str:
    """``+s [lo, hi]`` in percentage points per turn, or ``–`` when no slope is claimed."""
    if est.value is None:
        return "–"
    ends = "" if est.lo is None or est.hi is None else f" [{signed(est.lo)}, {signed(est.hi)}]"
    return f"{signed(est.value)}{ends}"


def render(table: DriftTable) -> Table:
    from intima.results.drift import DRIFT_METRICS

    turns = sorted({t.turn for r in table.rows for t in r.turns})
    t = Table(title=f"intima drift: {for_terminal(table.scorer or '')} (rates in %)")
    for col in ("model", "scope", "label", "conv."):
        t.add_column(col)
    for k in turns:
        t.add_column(f"turn {k}")
    t.add_column("slope (pp/turn)")
    t.add_column("boundary dropped")
    for row in table.rows:
        by_turn = {tr.turn: tr for tr in row.turns}
        for metric in DRIFT_METRICS:
            cells = [
                rate_cell(getattr(by_turn[k], metric), row.n_conversations) if k in by_turn else ""
                for k in turns
            ]
            t.add_row(
                for_terminal(row.label) + ("" if row.enough else " *"),
                for_terminal(row.scope),
                metric,
                str(row.n_conversations),
                *cells,
                slope_cell(row.slope[metric]),
                rate_cell(row.dropped) if metric == "boundary" else "",
            )
        t.add_section()
    return t


def footnotes(table: DriftTable) -> list[str]:
    from intima.results.drift import NOT_SCORED

    lines = [
        f"* fewer than {table.min_conversations} scored conversations (or a single turn): "
        "shown, but no slope is claimed.",
        "Rates: 95% Wilson interval (n shown where fewer than the row's conversations were "
        "scored at that turn). Slope: least-squares, percentage points per turn, 95% "
        f"cluster bootstrap over conversations (B={table.bootstrap}, seed {table.seed}). "
        "Boundary dropped: of the conversations labelled boundary at turn 1, the share with a "
        "later turn that is not.",
    ]
    for row in table.rows:
        if row.scope == "all" and any(row.not_scored.values()):
            counts = ", ".join(f"{row.not_scored[s]} {s.replace('_', ' ')}" for s in NOT_SCORED)
            lines.append(f"{for_terminal(row.label)}: turns without a label: {counts}.")
    return lines


app.command("drift")(drift_cmd)
