"""``--dry-run``: what a command would send and what it may cost, printed and nothing else.

The figures come from the Python API (``intima.generate.estimate`` and the estimates of
judging and conversations built on it); this module only opens the store, if there is one,
and prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rich.table import Table

from intima.cli._common import for_terminal, out
from intima.generate.estimate import CHARS_PER_TOKEN, Estimate
from intima.store import Store


def dry_run(
    store: Path, estimates: Callable[[Store | None], Sequence[Estimate]], batch: bool = False
) -> None:
    """Estimate against the store if it exists (a store that does not exist lacks everything,
    and none is created), then print (``batch``: at the batch APIs' prices)."""
    if store.exists():
        with Store.open(store, create=False) as db:
            found = list(estimates(db))
    else:
        found = list(estimates(None))
    print_estimates(found, batch=batch)


def store_note(store: Path) -> str:
    """What a dry run does with ``--store``: it reads one that exists and creates none."""
    where = for_terminal(str(store))
    if store.exists():
        return f"store {where}, read only (a dry run writes nothing)"
    return f"no store at {where} yet (a dry run creates none)"


def _cost(e: Estimate) -> str:
    low, high = e.cost_low, e.cost_high
    if low is None:
        return "unpriced"
    if high is None:
        return f"${low:.4f} or more"
    return f"${low:.4f} to ${high:.4f}"


def print_estimates(estimates: Sequence[Estimate], *, batch: bool = False) -> None:
    """The table of what each configuration would send; ``batch``: priced as the vendors'
    batch APIs charge (``generate.batch.batch_price``), and said so."""
    if batch:
        from intima.generate.batch import batch_price

        estimates = [e.model_copy(update={"price": batch_price(e.price)}) for e in estimates]
    title = "dry run: nothing sent" + (" (batch prices: half the list prices)" if batch else "")
    table = Table(title=title)
    cols = ("configuration", "requests", "input tokens (est.)", "output tokens (worst)",
            "cost (est.)")  # fmt: skip
    for col in cols:
        table.add_column(col, overflow="fold")
    for e in estimates:
        worst_in = (
            f" (up to {e.input_tokens_worst})" if e.input_tokens_worst != e.input_tokens else ""
        )
        output = (
            "the provider's default per request"
            if e.output_tokens_worst is None
            else f"{e.output_tokens_worst} ({e.requests} x {e.max_tokens})"
        )
        table.add_row(
            for_terminal(e.label),
            str(e.requests),
            f"{e.input_tokens}{worst_in}",
            output,
            _cost(e),
        )
    out.print(table)
    total = sum(e.requests for e in estimates)
    lows = [e.cost_low for e in estimates if e.requests]
    highs = [e.cost_high for e in estimates if e.requests]
    if total and None not in lows and None not in highs:
        out.print(
            f"in all: {total} requests, ${sum(c or 0.0 for c in lows):.4f} to "
            f"${sum(c or 0.0 for c in highs):.4f}",
            highlight=False,
        )
    by_table: dict[str, list[str]] = {}
    for e in estimates:
        by_table.setdefault(e.priced_by or "", []).append(e.model)
    for source, models in by_table.items():
        names = ", ".join(for_terminal(m) for m in dict.fromkeys(models))
        if source:
            out.print(f"priced by {for_terminal(source)}: {names}", highlight=False)
        else:
            out.print(f"unpriced (no price table entry): {names}", highlight=False)
    for note in dict.fromkeys(e.note for e in estimates if e.note and e.requests):
        out.print(f"not counted: {for_terminal(note)}", highlight=False)
    out.print(
        f"Input tokens are estimated at {CHARS_PER_TOKEN} characters a token; the low cost is "
        "the input alone, the high one every reply at its max_tokens. Prices are list prices"
        f"{' halved, as a batch is charged' if batch else ''}: check them (--prices FILE "
        "overrides). Nothing was sent and no store was written.",
        highlight=False,
        soft_wrap=True,
    )
