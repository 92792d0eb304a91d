"""``intima board build`` (static site) and ``intima board serve`` (Gradio app)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from intima.cli._common import DEFAULT_STORE, StoreOpt, app, console, for_terminal
from intima.core.errors import IntimaError
from intima.results.table import DEFAULT_BOOTSTRAP, DEFAULT_SEED

board_app = typer.Typer(
    help="The leaderboard: a static site or an interactive app.", no_args_is_help=True
)

SeedOpt = Annotated[int, typer.Option(min=0, help="Seed of the bootstrap resampling.")]
BootOpt = Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates (B).")]


class BoardError(IntimaError):
    """The leaderboard cannot be built or served as asked."""


def _check(bootstrap: int, store: Path) -> None:
    """What build and serve both need before any work: a sane B and an existing store."""
    if not 1 <= bootstrap <= 100_000:
        raise BoardError("--bootstrap must be between 1 and 100000 (1000 is the default)")
    if not store.is_file():
        raise BoardError(f"no store at {store}; run `intima run` first or pass --store")


@board_app.command("build")
def build_cmd(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the site into.")] = Path(
        "leaderboard"
    ),
    seed: SeedOpt = DEFAULT_SEED,
    bootstrap: BootOpt = DEFAULT_BOOTSTRAP,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Write a self-contained static site (open index.html, or publish the folder).

    Example: intima board build --out site/ --store intima.db
    """
    from intima.leaderboard.site import build_site
    from intima.results.data import load_board
    from intima.store import Store

    _check(bootstrap, store)
    with Store.open(store, create=False) as db:
        data = load_board(db)
    if not data.responses:
        raise BoardError(f"{store} has no responses yet; run `intima run` first")
    result = build_site(data, out, bootstrap=bootstrap, seed=seed)
    scorers = ", ".join(result.scorers) or "none (score with a judge or the affect measure)"
    console.print(
        f"leaderboard: {result.n_configs} configuration(s), {result.n_responses} responses, "
        f"scorers: {for_terminal(scorers)}"
    )
    console.print(f"open {for_terminal(str(result.index.resolve().as_uri()))}")


@board_app.command("serve")
def serve_cmd(
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 7860,
    host: Annotated[str, typer.Option(help="Interface; 0.0.0.0 exposes it to the network.")] = (
        "127.0.0.1"
    ),
    seed: SeedOpt = DEFAULT_SEED,
    bootstrap: BootOpt = DEFAULT_BOOTSTRAP,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Serve the interactive leaderboard (Gradio) with a form to request models.

    Example: intima board serve --port 7860 --store intima.db
    """
    from intima.leaderboard.app import serve

    _check(bootstrap, store)
    console.print(f"serving the leaderboard on http://{for_terminal(host)}:{port}")
    serve(store, host=host, port=port, bootstrap=bootstrap, seed=seed)


# Registered on import; intima.cli.main imports every group.
app.add_typer(board_app, name="board")
