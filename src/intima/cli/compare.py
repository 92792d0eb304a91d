"""``intima compare A B``: two configurations on one column, paired, as the board's
side-by-side shows them: the same :class:`~intima.results.board.BoardView` and the same tables
(:func:`intima.leaderboard.compare_view.comparison`), printed instead of drawn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from intima.cli._common import DEFAULT_STORE, StoreOpt, app, for_terminal, out
from intima.cli._params import SEED_MAX, nonempty
from intima.core.errors import IntimaError
from intima.core.escape import quoted
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED

if TYPE_CHECKING:  # numpy comes with them: loaded by the command
    from intima.leaderboard.compare_view import Kind, Row
    from intima.results.data import BoardRun


#: How many configurations an error names when none matched.
_LISTED = 12


class CompareError(IntimaError):
    """Two configurations cannot be compared as asked."""


def compare_cmd(
    a: Annotated[str, typer.Argument(help="Configuration A: its run label, id or id prefix.")],
    b: Annotated[str, typer.Argument(help="Configuration B: its run label, id or id prefix.")],
    scorer: Annotated[
        str | None,
        typer.Option(
            parser=nonempty,
            help="Whose labels: judge:LABEL (or LABEL), panel, human or affect. Default: the "
            "board's first (judges first).",
        ),
    ] = None,
    metric: Annotated[
        str,
        typer.Option(
            parser=nonempty,
            help="Which rate: reinforcing, boundary, neutral, mixed, no_majority or a category.",
        ),
    ] = "reinforcing",
    by_code: Annotated[
        bool, typer.Option("--by-code", help="Add a row for every INTIMA code.")
    ] = False,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of the bootstrap resampling.")
    ] = DEFAULT_SEED,
    bootstrap: Annotated[
        int,
        typer.Option("--bootstrap", min=2, max=100_000, help="Bootstrap replicates (B)."),
    ] = DEFAULT_BOOTSTRAP,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Compare two configurations: B − A with its paired interval, overall and per dimension.

    The board's side-by-side numbers for the same store, B and seed: the difference, its 95%
    interval, the smallest difference the board can detect, and whether the two differ.

    Example: intima compare my-model-v1 my-model-v2 --scorer panel --store intima.db
    """
    from intima.leaderboard.compare_view import PAIRED, comparison
    from intima.results.board import assemble_board
    from intima.results.data import load_board
    from intima.results.power import mde_note
    from intima.results.table import METRICS
    from intima.store import Store

    if metric not in METRICS:
        raise CompareError(
            f"--metric {quoted(metric)} is not a rate; choose one of {', '.join(METRICS)}"
        )
    if not store.is_file():
        raise CompareError(f"no store at {store}; run `intima run` first or pass --store")
    with Store.open(store, create=False) as db:
        data = load_board(db)  # the whole board: the very replicates the board draws
    run_a, run_b = (_config(name, data.runs) for name in (a, b))
    if run_a.run_id == run_b.run_id:
        raise CompareError(
            f"{quoted(a)} and {quoted(b)} are one configuration on the board: name two"
        )
    view = assemble_board(data, bootstrap=bootstrap, seed=seed, per_code=by_code)
    chosen = _scorer(scorer, tuple(view.paired.scorers))
    scopes = [s for s in view.paired.scopes() if by_code or not s.startswith("code:")]
    for kind, rows in comparison(view, chosen, metric, run_a.run_id, run_b.run_id, scopes):
        out.print(_grid(kind, metric, chosen, rows, run_a.label, run_b.label))
        if kind is not PAIRED:
            out.print(for_terminal(kind.note(chosen)), highlight=False)
    out.print(for_terminal(mde_note()), highlight=False)
    out.print(f"B = {bootstrap}, seed {seed}; a measurement, not a verdict.", highlight=False)


def _grid(kind: Kind, metric: str, scorer: str, rows: list[Row], a: str, b: str) -> Table:
    """One side-by-side table (:func:`~intima.leaderboard.compare_view.comparison`) in the
    page's very words and rounding."""
    from intima.leaderboard.compare_view import scope_name

    grid = Table(title=for_terminal(kind.title(metric, scorer, a, b)), title_justify="left")
    grid.add_column("scope")
    for head in ("A [95%]", "B [95%]"):
        grid.add_column(head, justify="right")
    for c in kind.columns:
        grid.add_column(c.head, justify="left" if c.cls == "verdict" else "right")
    for r in rows:
        pp, ends, *rest = r.texts
        sides = ("–" if s is None else s.text() for s in (r.a, r.b))
        grid.add_row(for_terminal(scope_name(r.scope)), *sides, pp + ends, *rest)
    return grid


def _config(name: str, runs: tuple[BoardRun, ...]) -> BoardRun:
    """A configuration by its label, or the whole id or id prefix of any run of it (runs of
    one configuration are one on the board); one clear line when none or several match."""
    exact = [r for r in runs if name in (r.run_id, r.label, *r.runs)]
    found = exact or [r for r in runs if any(i.startswith(name) for i in (r.run_id, *r.runs))]
    every = sorted({r.label for r in runs})
    labels = ", ".join(every[:_LISTED]) or "none"
    if len(every) > _LISTED:
        labels += f" and {len(every) - _LISTED} more"
    if not found:
        raise CompareError(
            f"no configuration {quoted(name)} on the board; its configurations: {labels} "
            "(`intima runs` lists their ids)"
        )
    if len({r.run_id for r in found}) > 1:
        ids = ", ".join(r.run_id[:12] for r in found)
        raise CompareError(f"{quoted(name)} names {len(found)} runs ({ids}); give a run id instead")
    return found[0]


def _scorer(asked: str | None, available: tuple[str, ...]) -> str:
    if not available:
        raise CompareError("no response on this board is rated yet; run `intima judge` first")
    if asked is None:
        return available[0]
    name = asked if asked in {"panel", "human", "affect"} or ":" in asked else f"judge:{asked}"
    if name not in available:
        raise CompareError(f"--scorer {quoted(asked)}: no ratings by {quoted(name)}; available: "
                           f"{', '.join(available)}")  # fmt: skip
    return name


app.command("compare")(compare_cmd)
