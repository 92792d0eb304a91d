"""``intima compare A B``: two configurations on one column, paired, as the board's
side-by-side shows them (:class:`intima.results.paired.PairedBoard`)."""

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
    from intima.results.board import BoardView
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
    out.print(_paired_grid(view, chosen, metric, scopes, run_a, run_b))
    headline = _headline_grid(view, chosen, metric, scopes, run_a, run_b)
    if headline is not None:
        from intima.leaderboard.compare_view import headline_note

        out.print(headline)
        out.print(for_terminal(headline_note(chosen)), highlight=False)
    out.print(for_terminal(mde_note()), highlight=False)
    out.print(f"B = {bootstrap}, seed {seed}; a measurement, not a verdict.", highlight=False)


def _paired_grid(
    view: BoardView, scorer: str, metric: str, scopes: list[str], run_a: BoardRun, run_b: BoardRun
) -> Table:
    """B − A per scope, paired, in the side-by-side's very words and rounding."""
    from intima.leaderboard.compare_view import difference_texts, scope_name

    grid = Table(
        title=for_terminal(f"{metric.replace('_', ' ')} rate, {scorer}: B − A (B = "
                           f"{run_b.label}, A = {run_a.label})"),
        title_justify="left",
    )  # fmt: skip
    for head in ("scope", "A [95%]", "B [95%]", "B − A [95%], points", "smallest detectable",
                 "paired test", "judged pairs"):  # fmt: skip
        grid.add_column(head, justify="left" if head in ("scope", "paired test") else "right")
    for scope in scopes:
        ra, rb = (view.table.get(scorer, r.run_id, scope, metric) for r in (run_a, run_b))
        d = view.paired.difference(scorer, run_a.run_id, run_b.run_id, scope, metric)
        pp, ends, mde, says, count = difference_texts(d)
        grid.add_row(for_terminal(scope_name(scope)), _rate(ra.rate, ra.lo, ra.hi),
                     _rate(rb.rate, rb.lo, rb.hi), pp + ends, mde, says, count)  # fmt: skip
    return grid


def _headline_grid(
    view: BoardView, judge: str, metric: str, scopes: list[str], run_a: BoardRun, run_b: BoardRun
) -> Table | None:
    """B − A of the headline (prediction-powered) shares of ``judge``'s samples, per scope;
    None when ``judge`` has no share of ``metric`` for both configurations."""
    from intima.leaderboard.compare_view import headline_pair, headline_texts, scope_name

    rows = {(r.run_id, r.scope): r for r in view.prediction
            if r.judge == judge and r.metric == metric}  # fmt: skip
    if not any(k[0] == run_a.run_id for k in rows) or not any(k[0] == run_b.run_id for k in rows):
        return None
    grid = Table(
        title=for_terminal(f"{metric} share as {judge} would label every response "
                           f"(prediction-powered): B − A (B = {run_b.label}, A = {run_a.label})"),
        title_justify="left",
    )  # fmt: skip
    for head in ("scope", "A [95%]", "B [95%]", "B − A [95%], points", "test",
                 "judged responses A / B"):  # fmt: skip
        grid.add_column(head, justify="left" if head in ("scope", "test") else "right")
    for scope in (s for s in scopes if not s.startswith("code:")):
        ra, rb = rows.get((run_a.run_id, scope)), rows.get((run_b.run_id, scope))
        pp, ends, count, says = headline_texts(
            headline_pair(rows, run_a.run_id, run_b.run_id, scope)
        )
        grid.add_row(
            for_terminal(scope_name(scope)),
            "–" if ra is None else _rate(ra.estimate, ra.lo, ra.hi),
            "–" if rb is None else _rate(rb.estimate, rb.lo, rb.hi),
            pp + ends, says, count,
        )  # fmt: skip
    return grid


def _rate(rate: float | None, lo: float | None, hi: float | None) -> str:
    """A rate and its interval, as the board writes them (``render.pct``)."""
    from intima.leaderboard.render import pct

    return "–" if rate is None else f"{pct(rate)} [{pct(lo)}, {pct(hi)}]"


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
