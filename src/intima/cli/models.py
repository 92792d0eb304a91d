"""``intima models refresh``: ask the Hub again what each run's model is (its card, size,
type, licence and date; :mod:`intima.providers.model_info`)."""

from __future__ import annotations

import typer

from intima.cli._common import DEFAULT_STORE, StoreOpt, app, for_terminal, out
from intima.cli._params import IntimaGroup
from intima.core.errors import IntimaError

models_app = typer.Typer(
    help="What each run's model is, as the board shows it.\n\n"
    "Example: intima models refresh --store intima.db",
    no_args_is_help=True,
    cls=IntimaGroup,
    rich_markup_mode=None,  # click's plain help: see IntimaGroup
)


@models_app.command("refresh")
def refresh_cmd(store: StoreOpt = DEFAULT_STORE) -> None:
    """Read every run's model info again (size, type, licence, date, card link).

    From the Hub for a Hub id (OWNER/NAME), from the configuration otherwise. A model the Hub
    does not answer for is "unknown", never an error.

    Example: intima models refresh --store intima.db
    """
    from intima.providers.model_info import record
    from intima.store import Store

    if not store.is_file():
        raise IntimaError(f"no store at {store}; run `intima run` first or pass --store")
    with Store.open(store, create=False) as db:
        found = record(db, refresh=True)
    models = {(i.hub_id or i.detail or "", i.source, i.detail) for i in found.values()}
    for name, source, detail in sorted(models, key=lambda m: m[0]):
        why = f" ({detail})" if source == "unknown" and detail else ""
        out.print(for_terminal(f"{name}: {source}{why}"), markup=False)
    out.print(f"model info of {len(found)} run(s) refreshed", markup=False)


app.add_typer(models_app, name="models")
