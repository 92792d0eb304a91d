"""``intima board build`` (static site), ``serve`` (Gradio app) and ``space`` (a Hub Space)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from intima.cli._common import DEFAULT_STORE, StoreOpt, app, console, for_terminal
from intima.cli._params import SEED_MAX, IntimaGroup, nonempty
from intima.cli.publisher import TrustOpt
from intima.core.errors import IntimaError

if TYPE_CHECKING:
    from intima.bundles.trust import TrustSet
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.service.public import ALL_PER_HOUR, PER_SESSION_PER_HOUR

if TYPE_CHECKING:
    from intima.leaderboard.space import SpaceSettings

board_app = typer.Typer(
    help="The leaderboard: a static site or an interactive app.\n\n"
    "Example: intima board build --out site/ --store intima.db",
    no_args_is_help=True,
    cls=IntimaGroup,
    rich_markup_mode=None,  # click's plain help: see IntimaGroup
)

SeedOpt = Annotated[
    int, typer.Option(min=0, max=SEED_MAX, help="Seed of the bootstrap resampling.")
]
BootOpt = Annotated[
    int,
    typer.Option("--bootstrap", min=1, max=100_000, help="Bootstrap replicates (B) per interval."),
]


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
    out: Annotated[
        Path, typer.Option("--out", file_okay=False, help="Folder to write the site into.")
    ] = Path("leaderboard"),
    seed: SeedOpt = DEFAULT_SEED,
    bootstrap: BootOpt = DEFAULT_BOOTSTRAP,
    store: StoreOpt = DEFAULT_STORE,
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            parser=nonempty,
            help="Build from a results repo (hf://datasets/OWNER/NAME) instead of --store.",
        ),
    ] = None,
    trust: TrustOpt = None,
) -> None:
    """Write a self-contained static site (open index.html, or publish the folder).

    Example: intima board build --out site/ --store intima.db
    """
    from intima.bundles.trust import trust_from
    from intima.leaderboard.site import build_site
    from intima.leaderboard.stored import load_stored
    from intima.results.configurations import board_coverage

    taken = trust_from(trust)  # (a bad --trust file is named before any work)
    if source is not None:
        from intima.leaderboard.hub_results import dataset_url

        dataset_url(source, "--from")
        store = _from_hub(source, taken)
    try:
        _check(bootstrap, store)
        board = load_stored(store, taken)  # conversation runs too: the drift view
    finally:  # the temporary store of --from goes, however loading ended
        if source is not None:
            shutil.rmtree(store.parent, ignore_errors=True)
    _say_left_out(board.notes())
    data, conversations = board.data, board.conversations
    if not data.responses and not conversations.turns:
        if board.left_out:  # (said above, publisher by publisher)
            raise BoardError(f"{source or store} has no responses of a publisher in {taken.source}")
        raise BoardError(_nothing_to_show(source, store))
    result = build_site(data, out, bootstrap=bootstrap, seed=seed, conversations=conversations)
    scorers = ", ".join(result.scorers) or "none (score with a judge or the affect measure)"
    console.print(
        f"leaderboard: {result.n_configs} configuration(s), {result.n_responses} responses, "
        f"scorers: {for_terminal(scorers)}"
    )
    if part := board_coverage([r.coverage for r in data.runs]):
        console.print(f"partial: {part} (the board says so beside each configuration)")
    console.print(f"open {for_terminal(str(result.index.resolve().as_uri()))}")


def _nothing_to_show(source: str | None, store: Path) -> str:
    if source is None:
        return f"{store} has no responses yet; run `intima run` first"
    return (
        f"{source} has nothing to show: no bundle taken from it holds responses (any refused "
        "is named above; a publisher outside the trust set is taken with --trust FILE, "
        "docs/hub-service.md section 5)"
    )


def _say_left_out(notes: list[str]) -> None:
    for line in notes:  # rows of publishers outside the trust set (issue 37)
        console.print(for_terminal(line), markup=False)


def _from_hub(url: str, trust: TrustSet) -> Path:
    """A temporary store holding every bundle of the results repo that passes verification
    and whose publisher is trusted; refused bundles are named (and left out)."""
    from intima.leaderboard.hub_results import import_results
    from intima.store import Store

    tmp = Path(tempfile.mkdtemp(prefix="intima-board-"))
    try:
        with Store.open(tmp / "results.db") as db:
            got = import_results(db, url, tmp, trust=trust)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for name, why in got.refused:
        console.print(f"refused bundle {for_terminal(name)}: {for_terminal(why)}", markup=False)
    console.print(
        f"{for_terminal(url)} at {got.commit[:12]}: {len(got.imported)} bundle(s) imported, "
        f"{len(got.refused)} refused",
        markup=False,
    )
    return tmp / "results.db"


@board_app.command("space")
def space_cmd(
    out: Annotated[
        Path, typer.Option("--out", file_okay=False, help="Folder to write the Space into.")
    ],
    results: Annotated[
        str, typer.Option(parser=nonempty, help="Results repo: hf://datasets/OWNER/NAME.")
    ],
    requests: Annotated[
        str | None,
        typer.Option(parser=nonempty, help="Requests repo the form writes to (none: read-only)."),
    ] = None,
    require_review: Annotated[
        bool, typer.Option(help="New requests wait for `intima requests approve ID`.")
    ] = False,
    title: Annotated[str, typer.Option(parser=nonempty, help="The Space's title.")] = (
        "INTIMA companionship leaderboard"
    ),
    refresh: Annotated[
        float, typer.Option(min=1, max=86_400, help="Seconds between re-reads of the results.")
    ] = 300.0,
    per_session: Annotated[
        int, typer.Option(min=1, max=10_000, help="Requests per visitor per hour.")
    ] = PER_SESSION_PER_HOUR,
    per_hour: Annotated[
        int, typer.Option(min=1, max=100_000, help="Requests per hour from everyone.")
    ] = ALL_PER_HOUR,
    force: Annotated[
        bool, typer.Option(help="Replace an earlier Space folder (and nothing else) at --out.")
    ] = False,
    seed: SeedOpt = DEFAULT_SEED,
    bootstrap: BootOpt = DEFAULT_BOOTSTRAP,
    requirement: Annotated[
        str | None,
        typer.Option(
            parser=nonempty,
            help="The pip line the Space installs intima by, e.g. a pinned Git URL 'intima @ "
            "git+https://github.com/OWNER/intima@TAG' (default: a wheel of this checkout, "
            "built into the folder; intima==THIS_VERSION when intima is installed, not a "
            "checkout).",
        ),
    ] = None,
    trust: TrustOpt = None,
) -> None:
    """Write a Hugging Face Space folder that serves the leaderboard from a results repo.

    Example: intima board space --out space/ --results hf://datasets/OWNER/results
    --requests hf://datasets/OWNER/requests
    """
    from pydantic import ValidationError

    from intima.leaderboard.space import SpaceSettings

    try:
        settings = SpaceSettings(
            results=results,
            requests=requests,
            require_review=require_review,
            title=title,
            refresh_s=refresh,
            per_session=per_session,
            per_hour=per_hour,
            bootstrap=bootstrap,
            seed=seed,
        )
    except ValidationError as exc:
        raise BoardError(f"invalid Space settings ({exc.errors()[0]['msg']})") from exc
    shown = _space_trust(trust)
    files = _write_space(out, settings, force, requirement, shown)
    console.print(
        f"trust.toml: {len(shown.publishers)} publisher(s) from {for_terminal(shown.source)}: "
        + for_terminal(", ".join(p.shown() for p in shown.publishers.values())),
    )
    console.print(
        f"Space folder {for_terminal(str(out))}: {', '.join(f.name for f in files)}", markup=False
    )
    console.print(
        f"deploy: hf repos create OWNER/SPACE --repo-type space --space-sdk gradio; "
        f"hf upload OWNER/SPACE {for_terminal(str(out))} . --repo-type space; "
        "hf spaces secrets add OWNER/SPACE -s HF_TOKEN",
        markup=False,
    )


def _space_trust(path: Path | None) -> TrustSet:
    """The Space's publishers: the --trust file's, else this machine's (its key made if
    missing: the maintainer who deploys the Space publishes under it)."""
    from intima.bundles.signing import local_publisher
    from intima.bundles.trust import TrustSet, read_trust

    if path is not None:
        return read_trust(path)
    me = local_publisher(create=True)
    assert me is not None  # (made above when missing)
    return TrustSet(publishers={me.fingerprint: me}, source="this machine's publisher key")


def _write_space(
    out: Path, settings: SpaceSettings, force: bool, requirement: str | None, trust: TrustSet
) -> list[Path]:
    """The folder, installing intima by ``requirement``; by default from a wheel of this
    checkout built into it, or (an installed intima) by the version pin, said so."""
    from intima.leaderboard import space_wheel
    from intima.leaderboard.space import DEFAULT_REQUIREMENT, write_space

    root = space_wheel.checkout() if requirement is None else None
    if root is None:
        line = requirement or DEFAULT_REQUIREMENT
        files = write_space(out, settings, force=force, requirement=line, trust=trust)
        if requirement is None:
            console.print(
                f"note: requirements.txt installs {DEFAULT_REQUIREMENT} from PyPI (this intima "
                "is an installed package, not a checkout to build a wheel of); if that version "
                "is not published, pass --requirement with a Git URL (docs/hub-service.md)",
                markup=False,
            )
        return files
    # The folder first: its checks refuse a bad --out or --results before the build's wait.
    name = space_wheel.wheel_name()
    files = write_space(out, settings, force=force, requirement=f"./{name}", trust=trust)
    console.print(f"building a wheel of {for_terminal(str(root))} for the Space...", markup=False)
    with tempfile.TemporaryDirectory(prefix="intima-space-") as tmp:
        files.append(space_wheel.place_wheel(space_wheel.build_wheel(root, Path(tmp)), out))
    return files


def _need_gradio() -> None:
    """Say which extra to install before claiming to serve (the demo install has no Gradio)."""
    from importlib.util import find_spec

    if find_spec("gradio") is None:
        raise BoardError(
            "the interactive board needs Gradio, which this install lacks: "
            "pip install 'intima[board]' (or `make venv`); `intima board build` needs no extra"
        )


@board_app.command("serve")
def serve_cmd(
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 7860,
    host: Annotated[
        str,
        typer.Option(parser=nonempty, help="Interface; 0.0.0.0 exposes it to the network."),
    ] = "127.0.0.1",
    seed: SeedOpt = DEFAULT_SEED,
    bootstrap: BootOpt = DEFAULT_BOOTSTRAP,
    store: StoreOpt = DEFAULT_STORE,
    trust: TrustOpt = None,
) -> None:
    """Serve the interactive leaderboard (Gradio) with a form to request models.

    Example: intima board serve --port 7860 --store intima.db
    """
    from intima.bundles.trust import trust_from

    taken = trust_from(trust)
    _check(bootstrap, store)
    _need_gradio()
    from intima.leaderboard.app import serve
    from intima.leaderboard.stored import load_stored

    board = load_stored(store, taken)
    _say_left_out(board.notes())
    console.print(f"serving the leaderboard on http://{for_terminal(host)}:{port}")
    serve(store, board, host=host, port=port, bootstrap=bootstrap, seed=seed)


# Registered on import; intima.cli.main imports every group.
app.add_typer(board_app, name="board")
