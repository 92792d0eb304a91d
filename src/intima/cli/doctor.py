"""``intima doctor``: find (and with --fix remove) rows a store should not hold."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import typer

from intima.cli._common import DEFAULT_STORE, StoreOpt, app, console, for_terminal, out


def doctor_cmd(
    fix: Annotated[bool, typer.Option(help="Remove the rows found (one transaction).")] = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Check a store: integrity, types, JSON, orphans, claims, samples and publishers.

    SQLite's integrity, value types, JSON columns, orphan rows, foreign claims, random samples
    that are not what their seed and design give, and who published each table's rows (and any
    row its publisher may not speak for).

    Example: intima doctor --store intima.db   (then --fix to remove what it lists)
    """
    from intima.bundles.doctor import examine, publishers, repair
    from intima.store import Store

    with Store.open(store, create=False) as db:
        found = repair(db) if fix else examine(db)
        made_by = publishers(db)
    for table, who, n in made_by:  # who published the rows (a bundle's signer, or this store)
        out.print(
            f"{n} row(s) in {for_terminal(table)} published by {for_terminal(who)}",
            highlight=False,
        )
    if found.integrity != "ok":
        console.print(f"SQLite integrity check: {for_terminal(found.integrity[:500])}")
    counts = Counter((p.table, p.what) for p in found.problems)
    for (table, what), n in sorted(counts.items()):
        out.print(f"{n} row(s) in {for_terminal(table)}: {for_terminal(what)}", highlight=False)
    if not found.problems and found.integrity == "ok":
        out.print(f"{for_terminal(str(store))}: no problems found", highlight=False)
        return
    if fix:
        console.print(f"removed {found.removed} row(s)")
        if found.integrity == "ok":
            return
    else:
        console.print("run again with --fix to remove them")
    raise typer.Exit(1)


app.command("doctor")(doctor_cmd)
