"""``intima publisher``: this machine's publisher key, and the line a maintainer trusts it by."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from intima.cli._common import app, console, for_terminal, out

TrustOpt = Annotated[
    Path | None,
    typer.Option(
        "--trust",
        dir_okay=False,
        help="TOML file of the publishers whose bundles are taken (default: this machine's "
        "publisher key alone; see docs/requests-and-bundles.md).",
    ),
]


def publisher_cmd() -> None:
    """Show this machine's publisher (made on first use): the key `intima publish` signs with.

    Send the lines it prints to a board's maintainers: added to their trust file, your bundles
    are shown on their board. Example: intima publisher
    """
    from intima.bundles.signing import key_path, local_publisher
    from intima.bundles.trust import trust_entry

    me = local_publisher(create=True)
    assert me is not None  # (made above when missing)
    console.print(
        f"publisher {for_terminal(me.shown())}, key file {for_terminal(str(key_path()))} "
        "(keep it private; set INTIMA_PUBLISHER_NAME to change the name)",
    )
    out.print(trust_entry(me), markup=False, highlight=False, end="")


# Registered on import; intima.cli.main imports every group.
app.command("publisher")(publisher_cmd)
