"""The leaderboard as a Hugging Face Space, reading its results from a results repo on the Hub.

``intima board space`` writes the Space folder (:func:`write_space`): ``README.md`` (the Space's
metadata), ``app.py`` (it only calls :func:`main`), ``requirements.txt`` (this intima: by
default a wheel of the checkout, in the folder: :mod:`.space_wheel`), ``space.json`` (the
settings) and ``trust.toml`` (the publishers whose bundles it shows: :mod:`intima.bundles.trust`;
the Space repo is the maintainers', so bundle writers cannot change it). Nothing secret goes in
it: the requests repo's token is the Space's ``HF_TOKEN`` secret, read at run time.

The app (:class:`LiveBoard`) reads the results repo's head commit at start and then every
``refresh_s`` seconds in a background thread. When the repo moved, it downloads every bundle
into a fresh store (:func:`import_results`: each bundle verified alone first, for manifest
hashes, protocol versions and every row, then all of them compared, so that bundles giving
different rows under one id are all refused; see ``docs/requests-and-bundles.md``), scores the
store and swaps the new board in. A bundle that is refused is left out and named in a notice
on the page; the others still show. Open pages poll with a
``gr.Timer`` and redraw when the board changed; nothing restarts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intima.bundles.trust import TrustSet, default_trust, read_trust
from intima.core.errors import IntimaError
from intima.core.version import __version__
from intima.leaderboard.app import BoardIndex, build_app, header_html
from intima.leaderboard.hub_results import (
    dataset_url,
    head_commit,
    import_results,
    remove_store,
)
from intima.leaderboard.page import Page
from intima.leaderboard.space_form import _log, request_backend
from intima.leaderboard.space_wheel import WHEEL_GLOB
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.service.public import ALL_PER_HOUR, PER_SESSION_PER_HOUR
from intima.store import Store

SETTINGS_FILE = "space.json"
TRUST_FILE = "trust.toml"
SPACE_FILES = frozenset({"README.md", "app.py", "requirements.txt", SETTINGS_FILE, TRUST_FILE})
#: a clone of the Space repo may be written over with ``force`` too
_CLONE_FILES = frozenset({".git", ".gitattributes"})
DEFAULT_TITLE = "INTIMA companionship leaderboard"
DEFAULT_REFRESH_S = 300.0

APP_PY = '''"""The INTIMA leaderboard Space, written by `intima board space`.

Settings are in space.json; the token that writes requests is the Space's HF_TOKEN secret.
"""

from pathlib import Path

from intima.leaderboard.space import main

if __name__ == "__main__":
    main(Path(__file__).resolve().with_name("space.json"))
'''


class SpaceError(IntimaError):
    """The Space cannot be written or its results repo cannot be read."""


class SpaceSettings(BaseModel):
    """What ``space.json`` holds (no secrets)."""

    model_config = ConfigDict(extra="forbid")

    results: str
    requests: str | None = None
    require_review: bool = False
    title: str = Field(DEFAULT_TITLE, min_length=1, max_length=120)
    refresh_s: float = Field(DEFAULT_REFRESH_S, ge=1, le=86_400)
    per_session: int = Field(PER_SESSION_PER_HOUR, ge=1, le=10_000)
    per_hour: int = Field(ALL_PER_HOUR, ge=1, le=100_000)
    bootstrap: int = Field(DEFAULT_BOOTSTRAP, ge=1, le=100_000)
    seed: int = DEFAULT_SEED


# -- the folder ---------------------------------------------------------------------------------
#: How the Space installs intima when it runs from an installed package (from a checkout, the
#: default is a wheel of it: :mod:`intima.leaderboard.space_wheel`): this version, from PyPI.
DEFAULT_REQUIREMENT = f"intima=={__version__}"


def write_space(
    out: Path,
    settings: SpaceSettings,
    *,
    force: bool = False,
    requirement: str = DEFAULT_REQUIREMENT,
    trust: TrustSet | None = None,
) -> list[Path]:
    """Write the Space folder; a non-empty folder only with ``force`` and only if it holds
    nothing but an earlier Space folder's files (and a clone's ``.git``). ``requirement`` is
    the pip line the Space installs intima by (a PyPI pin, a Git URL, a wheel in the folder);
    ``trust``: the publishers it shows (``trust.toml``; default: none)."""
    requirement = requirement.strip()
    if not requirement or len(requirement) > 500 or not requirement.isprintable():
        raise SpaceError(
            "--requirement must be one pip requirement line, e.g. 'intima @ "
            "git+https://github.com/OWNER/intima@v0.1.0'"
        )
    dataset_url(settings.results, "--results")
    if settings.requests is not None:
        dataset_url(settings.requests, "--requests")
    if out.exists() and not out.is_dir():
        raise SpaceError(f"{out} is a file; write the Space into a folder")
    # An earlier Space folder: its files, a clone's, and the intima wheel it installs.
    present = {p.name for p in out.iterdir() if not p.match(WHEEL_GLOB)} if out.is_dir() else set()
    ours = present <= SPACE_FILES | _CLONE_FILES
    if (present or any(out.glob(WHEEL_GLOB))) and not (force and ours):
        hint = (
            "--force replaces an earlier Space folder"
            if ours
            else "it holds other files; write the Space into a new or empty folder"
        )
        raise SpaceError(f"{out} is not empty ({hint})")
    files = {
        "README.md": _readme(settings),
        "app.py": APP_PY,
        "requirements.txt": (
            f"# gradio itself comes from sdk_version in README.md\n{requirement}\n"
        ),
        SETTINGS_FILE: settings.model_dump_json(indent=2) + "\n",
        TRUST_FILE: (trust or TrustSet()).to_toml(),
    }
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    return [out / name for name in files]


def _readme(settings: SpaceSettings) -> str:
    meta = {
        "title": json.dumps(settings.title), "emoji": "💞", "colorFrom": "pink",
        "colorTo": "indigo", "sdk": "gradio", "sdk_version": _gradio_version(),
        "app_file": "app.py", "pinned": "false", "license": _licence(),
    }  # fmt: skip
    head = "".join(f"{k}: {v}\n" for k, v in meta.items())
    requests = settings.requests or "(none: the request form is read-only)"
    return (
        f"---\n{head}---\n\n# {settings.title}\n\n"
        "The INTIMA companionship leaderboard, served by intima "
        f"{__version__} (`intima board space`).\n\n"
        f"- Results: `{settings.results}`, re-read every {settings.refresh_s:g} s; bundles that "
        "fail verification are refused and named on the page.\n"
        f"- Requests: `{requests}`; the form writes with the `HF_TOKEN` secret of this Space "
        f"({settings.per_session} per visitor and {settings.per_hour} in all per hour).\n"
        "- Publishers: only signed bundles of the publishers in `trust.toml` are shown; others "
        "are refused and named on the page.\n\n"
        "Settings are in `space.json` and `trust.toml`; regenerate the folder with "
        "`intima board space --force`.\n"
    )


def _gradio_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gradio")
    except PackageNotFoundError as exc:
        raise SpaceError(
            "gradio is not installed; install intima[board] so that the Space's sdk_version "
            "is the gradio you tested with"
        ) from exc


def _licence() -> str:
    """The project's licence as the Hub spells it (an SPDX id in lower case)."""
    from importlib.metadata import metadata

    md: Any = metadata("intima")
    spdx = str(md.get("License-Expression") or md.get("License") or "")
    return spdx.lower() if re.fullmatch(r"[A-Za-z0-9.+-]{2,40}", spdx) else "other"


def read_settings(path: Path) -> SpaceSettings:
    try:
        return SpaceSettings.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise SpaceError(f"cannot read {path}; run `intima board space` again") from exc
    except ValidationError as exc:
        raise SpaceError(f"{path} is not valid Space settings ({exc.errors()[0]['msg']})") from exc


@dataclass(frozen=True)
class Board:
    """What the page shows; replaced whole, never changed."""

    version: int
    index: BoardIndex
    commit: str | None = None
    refused: tuple[tuple[str, str], ...] = ()
    problem: str | None = None

    @property
    def notice(self) -> Markup:
        parts = []
        if self.problem:
            parts.append(
                Markup('<p class="intima-error" role="status">{}</p>').format(self.problem)
            )
        if self.refused:
            items = Markup("").join(
                Markup("<li><code>{}</code>: {}</li>").format(name, why)
                for name, why in self.refused
            )
            parts.append(
                Markup(
                    '<div class="intima-error" role="status"><p>{} results '
                    "bundle(s) failed verification and are not shown:</p><ul>{}</ul></div>"
                ).format(len(self.refused), items)
            )
        return Markup("").join(parts)


class LiveBoard:
    """The Space's board: reloaded from the results repo in a background thread, swapped in
    whole under a lock; pages redraw when its version moves."""

    def __init__(
        self, settings: SpaceSettings, workdir: Path, trust: TrustSet | None = None
    ) -> None:
        self.settings, self.workdir = settings, workdir
        self.trust = default_trust() if trust is None else trust
        self._lock = threading.Lock()
        self._board = Board(0, _scored(None, settings))
        self._stop = threading.Event()
        self._loads = 0
        self._bad_commit: str | None = None

    def current(self) -> Board:
        with self._lock:
            return self._board

    def index(self) -> BoardIndex:
        return self.current().index

    def _swap(self, **change: Any) -> None:
        with self._lock:
            old = self._board
            self._board = Board(**{**old.__dict__, **change, "version": old.version + 1})

    def refresh(self) -> bool:
        """Reload if the results repo moved (or was unreachable before); True if it changed.

        Never raises: a failure keeps the board shown before, says why on the page, and
        leaves no store behind. A commit whose bundles could not be read for a reason other
        than the network is not read again until the repo moves."""
        old = self.current()
        try:
            commit = head_commit(self.settings.results)
        except IntimaError as exc:
            return self._failed(old, str(exc))
        if commit == old.commit:
            if old.problem:
                self._swap(problem=None)
            return bool(old.problem)
        if commit == self._bad_commit:
            return False
        self._loads += 1
        store_path = self.workdir / f"board-{self._loads}.db"
        try:
            with Store.open(store_path) as store:
                got = import_results(store, self.settings.results, self.workdir, commit, self.trust)
                index = _scored(store, self.settings)
        except IntimaError as exc:  # the Hub or the network: tried again next time
            return self._failed(old, str(exc))
        except Exception as exc:  # the bundles together: not again until the repo moves
            self._bad_commit = commit
            return self._failed(old, f"the results at {commit[:12]} could not be shown "
                                     f"({type(exc).__name__}).")  # fmt: skip
        finally:
            remove_store(store_path)
        self._swap(index=index, commit=commit,
                   refused=tuple(got.refused), problem=None)  # fmt: skip
        names = ", ".join(n for n, _ in got.refused)
        _log(f"results at {commit[:12]}: {len(got.imported)} bundle(s) shown, "
             f"{len(got.refused)} refused{': ' + names if names else ''}")  # fmt: skip
        return True

    def _failed(self, old: Board, why: str) -> bool:
        problem = f"{why} Showing the results read before, if any; retrying."
        if problem != old.problem:
            self._swap(problem=problem)
        _log(f"results not refreshed: {why}")
        return False

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.settings.refresh_s):
                try:
                    self.refresh()
                except Exception as exc:  # never let the thread die: the page keeps its data
                    _log(f"refresh failed ({type(exc).__name__})")

        threading.Thread(target=loop, name="intima-refresh", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def wire(self, page: Page) -> None:
        """Inside build_app's Blocks: a timer (and each page load) redraws the whole page
        (:meth:`Page.redraw`: every menu, view and explorer) from the current board when its
        version moved."""
        import gradio as gr

        seen = gr.State(-1)
        inputs = [seen, *page.inputs()]
        outputs = [seen, page.header, page.notice, *page.outputs()]

        def tick(version: int, *values: Any) -> list[Any]:
            now = self.current()
            if now.version == version:
                return [gr.skip()] * len(outputs)
            header = header_html(now.index.view, self.settings.title)
            return [now.version, header, now.notice, *page.redraw(now.index, *values)]

        gr.Timer(self.settings.refresh_s).tick(tick, inputs, outputs)
        page.demo.load(tick, inputs, outputs)


def space_trust(path: Path) -> TrustSet:
    """The Space's trust set (``trust.toml`` beside ``space.json``); nobody if it has none."""
    if not path.exists():
        return TrustSet(source=f"this Space, which has no {TRUST_FILE} (run `intima board space`)")
    return read_trust(path)


def _scored(store: Store | None, settings: SpaceSettings) -> BoardIndex:
    """The store's whole board, its drift included (an empty one without a store)."""
    from intima.results.board import assemble_board
    from intima.results.conversations import load_conversations
    from intima.results.data import BoardData, load_board

    if store is None:
        data = BoardData((), (), ())
    else:  # a bundle's model facts: the Hub's first (:mod:`intima.results.model_facts`)
        from intima.results.model_facts import with_hub_facts

        data = with_hub_facts(store, load_board(store))
    conversations = load_conversations(store) if store is not None else None
    return BoardIndex(
        assemble_board(
            data, bootstrap=settings.bootstrap, seed=settings.seed, conversations=conversations
        )
    )


# -- the app ---------------------------------------------------------------------------------
def main(settings_path: Path | None = None) -> None:
    """Run the Space: settings from ``space.json`` (beside app.py), the token from HF_TOKEN,
    host and port from Gradio's own GRADIO_SERVER_NAME / GRADIO_SERVER_PORT."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from intima.leaderboard import render
    from intima.leaderboard.no_uploads import launch_kwargs

    settings_path = settings_path or Path(SETTINGS_FILE)
    settings = read_settings(settings_path)
    workdir = Path(tempfile.mkdtemp(prefix="intima-space-"))
    live = LiveBoard(settings, workdir, space_trust(settings_path.with_name(TRUST_FILE)))
    live.refresh()
    live.start()
    submit, closed = request_backend(settings, os.environ.get("HF_TOKEN"))
    now = live.current()
    demo = build_app(
        now.index.view, None, live=live, submit=submit, closed=closed, title=settings.title
    )
    try:
        # No uploads: nothing on the board takes a file (see leaderboard/no_uploads.py).
        demo.launch(show_error=False, quiet=True, theme=render.theme(), **launch_kwargs())
    finally:
        live.stop()
        shutil.rmtree(workdir, ignore_errors=True)
