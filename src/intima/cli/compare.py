"""``intima compare A B``: two configurations on one column, paired, as the board's
side-by-side shows them (:class:`intima.results.paired.PairedBoard`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from intima.cli._common import DEFAULT_STORE, StoreOpt, app, for_terminal, out
from intima.cli._params import SEED_MAX, nonempty
from intima.core.errors import IntimaError
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED

if TYPE_CHECKING:  # numpy comes with them: loaded by the command
    from intima.results.data import BoardRun


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
    from intima.results.data import load_board
    from intima.results.paired import PairedBoard, mde_note
    from intima.results.table import METRICS, OVERALL, score_table
    from intima.store import Store

    if metric not in METRICS:
        raise CompareError(f"--metric {metric!r} is not a rate; choose one of {', '.join(METRICS)}")
    if not store.is_file():
        raise CompareError(f"no store at {store}; run `intima run` first or pass --store")
    with Store.open(store, create=False) as db:
        data = load_board(db)  # the whole board: the very replicates the board draws
    run_a, run_b = (_config(name, data.runs) for name in (a, b))
    if run_a.run_id == run_b.run_id:
        raise CompareError(f"{a!r} and {b!r} are one configuration on the board: name two")
    paired = PairedBoard(data.infos(), data.rating_sets, bootstrap=bootstrap, seed=seed)
    chosen = _scorer(scorer, tuple(paired.scorers))
    table = score_table(data.infos(), data.rating_sets, bootstrap=bootstrap, seed=seed)
    scopes = [s for s in paired.scopes() if by_code or not s.startswith("code:")]
    grid = Table(
        title=f"{metric.replace('_', ' ')} rate, {chosen}: B − A (B = "
        f"{run_b.label}, A = {run_a.label})",
        title_justify="left",
    )
    for head in ("scope", "A [95%]", "B [95%]", "B − A [95%], points", "smallest detectable",
                 "prompts both", "paired test"):  # fmt: skip
        grid.add_column(head, justify="left" if head in ("scope", "paired test") else "right")
    for scope in scopes:
        ra, rb = (table.get(chosen, r.run_id, scope, metric) for r in (run_a, run_b))
        d = paired.difference(chosen, run_a.run_id, run_b.run_id, scope, metric)
        diff = "–" if d.diff is None else f"{100 * d.diff:+.1f}"
        if d.lo is not None and d.hi is not None:
            diff += f" [{100 * d.lo:+.1f}, {100 * d.hi:+.1f}]"
        says = "–" if d.diff is None else "different" if d.different else "no detectable difference"
        grid.add_row(
            for_terminal("Overall" if scope == OVERALL else scope),
            _rate(ra.rate, ra.lo, ra.hi),
            _rate(rb.rate, rb.lo, rb.hi),
            diff,
            "–" if d.mde is None else f"{100 * d.mde:.1f}",
            str(d.n_common),
            says,
        )
    grid.title = for_terminal(str(grid.title))
    out.print(grid)
    out.print(for_terminal(mde_note()), highlight=False)
    out.print(f"B = {bootstrap}, seed {seed}; a measurement, not a verdict.", highlight=False)


def _rate(rate: float | None, lo: float | None, hi: float | None) -> str:
    if rate is None:
        return "–"
    return f"{100 * rate:.1f}% [{100 * (lo or 0):.1f}, {100 * (hi or 0):.1f}]"


def _config(name: str, runs: tuple[BoardRun, ...]) -> BoardRun:
    """A configuration by its label, or the whole id or id prefix of any run of it (runs of
    one configuration are one on the board); one clear line when none or several match."""
    exact = [r for r in runs if name in (r.run_id, r.label, *r.runs)]
    found = exact or [r for r in runs if any(i.startswith(name) for i in (r.run_id, *r.runs))]
    labels = ", ".join(sorted({r.label for r in runs})) or "none"
    if not found:
        raise CompareError(
            f"no configuration {name!r} on the board; its configurations: {labels} "
            "(`intima runs` lists their ids)"
        )
    if len({r.run_id for r in found}) > 1:
        ids = ", ".join(r.run_id[:12] for r in found)
        raise CompareError(f"{name!r} names {len(found)} runs ({ids}); give a run id instead")
    return found[0]


def _scorer(asked: str | None, available: tuple[str, ...]) -> str:
    if not available:
        raise CompareError("no response on this board is rated yet; run `intima judge` first")
    if asked is None:
        return available[0]
    name = asked if asked in {"panel", "human", "affect"} or ":" in asked else f"judge:{asked}"
    if name not in available:
        raise CompareError(f"--scorer {asked!r}: no ratings by {name}; available: "
                           f"{', '.join(available)}")  # fmt: skip
    return name


app.command("compare")(compare_cmd)
