"""The static leaderboard: one folder, no server, no CDN (GitHub Pages or a static HF Space).

Layout of the folder::

    index.html        the page; the numbers the side-by-side view needs are embedded as JSON in
                      a <script type="application/json"> tag, every chart as SVG (built by
                      ``charts``), the methodology (``method_view``) and, with a judged
                      sample, the prediction-powered shares per scope (``prediction_view``)
                      in <template>s; the JSON also holds the first data/t file's body (the
                      table the page opens on: in place as the script runs)
    board.js, board.css
    data/t<s>_<k>.js  scorer s's views in scope k (overall, then each dimension): its
                      validation card, and per ranking metric its score table and mean-score
                      table, as HTML fragments
    data/r<i>.js      the responses of configuration i, each with its detail view as an HTML
                      fragment, loaded only when the explorer opens it (keeps the first paint
                      fast with 50 x 368 responses)
    data/p<s>_<m>.js  the side-by-side view for scorer s and metric m: its table's frame and
                      every configuration's and ordered pair's cells (``compare_view``)
    drift.js, data/c<i>.js
                      only when the store has conversation runs: the drift view and the
                      transcripts of conversation configuration i (see ``drift_view``)

Each data file is one ``window.intimaChunk(key, packed)`` call, ``packed`` its JSON gzipped and
in base64 (``chunks.chunk_file``; ``board.js`` inflates it with the browser's
``DecompressionStream``): the fragments repeat their markup on every row, and gzip takes the
response files of 50 configurations x 368 responses from 60 MB to under 5 MB.

Every view of the board is declared once, in :data:`intima.leaderboard.views.VIEWS` (the
score table and its direction note, validation card, mean scores, prediction-powered shares,
charts, models table, drift charts and table, methodology), which says where the site keeps it
(a ``<template>`` per choice, or a data file); the explorers (response detail, side-by-side
numbers, transcripts) are rendered once too (``render``, ``compare_view``, ``drift_render``),
each a :class:`markupsafe.Markup` (store strings go in only as escaped arguments); the app
shows the fragments and the site embeds the very same ones, so the scripts only select, load
chunks and swap fragments in. Other model text (the explorer's list) travels as JSON and goes
in with ``textContent``.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup
from threadpoolctl import threadpool_limits

from intima.core.errors import IntimaError
from intima.core.parallel import Jobs
from intima.core.perf import paused_gc
from intima.core.ratings import RatingSet
from intima.core.version import __version__
from intima.leaderboard import wording
from intima.leaderboard.chunks import chunk_file
from intima.leaderboard.compare_site import compare_chunk
from intima.leaderboard.detail import response_detail
from intima.leaderboard.drift_view import DRIFT_SCRIPT, drift_payload, write_transcripts
from intima.leaderboard.models_view import MODELS_SCRIPT
from intima.leaderboard.prediction_view import PREDICTION_SCRIPT
from intima.leaderboard.render import CSS, snippet
from intima.leaderboard.views import VIEWS, Pick, View, choices
from intima.results.board import BoardView, assemble_board
from intima.results.conversations import ConversationBoard
from intima.results.data import BoardData
from intima.results.table import LABEL_METRICS, METRICS
from intima.store import now

if TYPE_CHECKING:
    from intima.results.paired import Pairs

_STATIC = ("board.js", "board.css", MODELS_SCRIPT)  # models.js: what each model is, search


@dataclass(frozen=True)
class SiteResult:
    out_dir: Path
    index: Path
    n_configs: int
    n_responses: int
    scorers: tuple[str, ...]


def build_site(
    data: BoardData,
    out_dir: Path,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    title: str | None = None,
    conversations: ConversationBoard | None = None,
) -> SiteResult:
    """Score ``data`` and write the site into ``out_dir`` (its old content is replaced).

    ``conversations`` (``results.conversations.load_conversations``): conversation runs to
    show in a drift view; the view is left out when there are none. ``title``: by default it
    names the prompt set (:func:`intima.leaderboard.wording.board_title`)."""
    with paused_gc():
        return _build(data, Path(out_dir), bootstrap, seed, title, conversations)


def _build(
    data: BoardData,
    out_dir: Path,
    bootstrap: int,
    seed: int,
    title: str | None,
    conversations: ConversationBoard | None,
) -> SiteResult:
    ids, coverage = [r.dataset_id for r in data.runs], [r.coverage for r in data.runs]
    title = title or wording.board_title(ids, coverage)
    if out_dir.is_symlink():
        # Clearing a link's target would remove files elsewhere; rmtree refuses a link anyway.
        raise IntimaError(
            f"--out {out_dir} is a symbolic link (to {os.readlink(out_dir)}): give the folder "
            "itself or a new folder"
        )
    if out_dir.exists():
        _clear(out_dir)
    (out_dir / "data").mkdir(parents=True, exist_ok=True)
    # The response files and every scorer's pairs (with their side-by-side files) are jobs of
    # their own, each in a forked process where that is safe (intima.core.parallel), while the
    # views render here: the pairs alone took longer than everything else, and threads of one
    # process slowed each other down. One BLAS thread each: the jobs fill the cores already.
    built = f"{now()} by intima {__version__}"
    with threadpool_limits(1, user_api="blas"), Jobs() as jobs:
        n_chunks = jobs.start("writing the response files", _write_chunks, data, out_dir / "data")
        # The whole board, once; everything below only renders it.
        view = assemble_board(data, bootstrap=bootstrap, seed=seed, per_code=False,
                              conversations=conversations, built=built)  # fmt: skip
        table = view.table
        pairs = [
            jobs.start(f"comparing pairs on {scorer}", _write_pairs, view, s, out_dir / "data")
            for s, scorer in enumerate(table.scorers)
        ]
        payload = _payload(view, title)
        payload["views"], payload["first"] = _write_views(view, out_dir / "data")
        files = {scorer: job.result() for scorer, job in zip(table.scorers, pairs, strict=True)}
        payload["pairs"] = {"files": files}
        payload["chunks"] = [f"data/r{i}.js" for i in range(n_chunks.result())]
    static = resources.files("intima.leaderboard") / "static"
    figures, drift = view_templates(view), None
    prediction = bool(view.prediction)  # its section and script only with a judged sample
    if conversations is not None and conversations.turns:
        chunks = write_transcripts(conversations, out_dir / "data")
        drift = drift_payload(conversations, view.drift, chunks)
    extra = ((DRIFT_SCRIPT,) if drift else ()) + ((PREDICTION_SCRIPT,) if prediction else ())
    for name in (*_STATIC, *extra):
        (out_dir / name).write_text(static.joinpath(name).read_text("utf-8"), encoding="utf-8")
    index = out_dir / "index.html"
    subtitle = wording.board_subtitle(ids, coverage)
    index.write_text(_html(title, subtitle, payload, figures, drift, prediction), encoding="utf-8")
    return SiteResult(
        out_dir=out_dir,
        index=index,
        n_configs=len(data.runs),
        n_responses=len(data.responses),
        scorers=table.scorers,
    )


def _write_chunks(data: BoardData, folder: Path) -> int:
    chunks = _chunks(data)
    for i, chunk in enumerate(chunks):
        chunk_file(folder, f"r{i}", chunk)
    return len(chunks)


def _write_views(
    view: BoardView, folder: Path
) -> tuple[dict[str, list[str]], dict[str, Any] | None]:
    """Per scorer and scope, ``data/t<s>_<k>.js``: every view :data:`~.views.VIEWS` keeps there
    (the validation card, and per ranking metric the score table and the mean-score table),
    rendered by the very functions the app calls. One file per scope keeps what a choice
    loads small (50 configurations: a table is about 50 KB). Also returned: the first file's
    key and body, which the page embeds too, so the table the page opens on is in place as
    the script runs, without waiting for a file (None without a scorer)."""
    kept = [v for v in VIEWS if v.site.key is not None and v.shown(view)]
    once: dict[tuple[str, tuple[str | None, ...]], str] = {}  # a view's render per its choices

    def draw(v: View, pick: Pick) -> str:
        key = (v.name, tuple(getattr(pick, a) for a in v.varies))
        if key not in once:
            once[key] = v.render(view, pick)
        return once[key]

    files: dict[str, list[str]] = {}
    first = None
    for s, scorer in enumerate(view.table.scorers):
        files[scorer] = []
        for k, scope in enumerate(view.scopes):
            body = {
                str(v.site.key): (
                    {m: draw(v, Pick(scorer, scope, m)) for m in LABEL_METRICS}
                    if "sort" in v.varies
                    else draw(v, Pick(scorer, scope))
                )
                for v in kept
            }
            chunk_file(folder, f"t{s}_{k}", body)
            files[scorer].append(f"data/t{s}_{k}.js")
            first = first or {"key": f"t{s}_{k}", "body": body}
    return files, first


def view_templates(view: BoardView) -> Markup:
    """Every view :data:`~.views.VIEWS` keeps in the page, one ``<template>`` per choice the
    site offers (``<template>-<i>-<j>``: the choices' indexes), which the scripts clone in."""
    out = []
    for v in VIEWS:
        if v.site.template is None or not v.shown(view):
            continue
        axes = v.site.vary
        for picked in itertools.product(*(enumerate(choices(view, a)) for a in axes)):
            pick = Pick(**{a: value for a, (_, value) in zip(axes, picked, strict=True)})
            suffix = "".join(f"-{i}" for i, _ in picked)
            out.append(
                Markup('<template id="{}{}">{}</template>\n').format(
                    v.site.template, suffix, v.render(view, pick)
                )
            )
    return Markup("").join(out)


def _write_pairs(view: BoardView, s: int, folder: Path) -> dict[str, str]:
    """The side-by-side view's numbers for the board's ``s``-th scorer, rendered by the app's
    very functions (:func:`intima.leaderboard.compare_site.compare_chunk`): one file per
    metric, ``data/p<s>_<metric>.js``, holding every scope's fragments for every pair, loaded
    when the side-by-side view asks for it (50 configurations make 2,450 ordered pairs).
    Returns metric -> the file's path in the site."""
    scorer = view.table.scorers[s]
    pairs: dict[str, dict[str, Pairs]] = {m: {} for m in METRICS}
    for scope in view.scopes:  # every pair's B - A (PairedBoard.pair_matrix)
        for metric, col in view.paired.pair_matrix(scorer, scope, METRICS).items():
            pairs[metric][scope] = col
    files = {}
    for m, metric in enumerate(METRICS):
        body = compare_chunk(view, scorer, metric, view.scopes, pairs[metric])
        chunk_file(folder, f"p{s}_{m}", body)
        files[metric] = f"data/p{s}_{m}.js"
    return files


def _clear(out_dir: Path) -> None:
    """Remove a previous build, but never a folder that does not look like one."""
    if not out_dir.is_dir():
        raise IntimaError(f"--out {out_dir} exists and is not a folder: choose a new folder")
    entries = {p.name for p in out_dir.iterdir()}
    ours = {"index.html", "data", *_STATIC, DRIFT_SCRIPT, PREDICTION_SCRIPT, ".nojekyll"}
    if entries - ours:
        raise IntimaError(
            f"{out_dir} holds files that are not a leaderboard build ({sorted(entries - ours)[:3]}"
            "); choose an empty or new folder"
        )
    shutil.rmtree(out_dir)


def safe_json(obj: Any) -> Markup:
    """JSON fit to sit inside a <script> element: no '<', '>' or '&' can close or open tags."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    # The one Markup made from a computed string (tests/test_leaderboard_markup.py allows only
    # this one): a script's text is not entity-decoded, and no '<', '>' or '&' is left in it.
    return Markup(text)  # noqa: S704


def _html(
    title: str,
    subtitle: str,
    payload: dict[str, Any],
    figures: Markup,
    drift: dict[str, Any] | None = None,
    prediction: bool = False,
) -> Markup:
    # Store text reaches the markup only inside ``figures``, the fragments (Markup: escaped by
    # construction) and the JSON (no '<', '>' or '&': :func:`safe_json`).
    drift_tags = (
        Markup()
        if drift is None
        else Markup(
            '<script type="application/json" id="drift-data">{}</script>\n'
            '<script src="{}"></script>\n'
        ).format(safe_json(drift), DRIFT_SCRIPT)
    )
    if prediction:  # after board.js: it adds its section to the page board.js made
        drift_tags += Markup('<script src="{}"></script>\n').format(PREDICTION_SCRIPT)
    # After prediction.js (as it was): both add their section just above the score table.
    drift_tags += Markup('<script src="{}"></script>\n').format(MODELS_SCRIPT)
    return Markup(
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>{title}</title>\n"
        # The fragments' own style (the app's very CSS), then the page's.
        "<style>{css}</style>\n"
        '<link rel="stylesheet" href="board.css">\n</head>\n<body>\n'
        "<header><h1>{title}</h1>"
        '<p class="sub" id="subtitle">{subtitle}</p></header>\n'
        '<main id="app"><p id="loading">Loading…</p></main>\n{figures}'
        '<script type="application/json" id="board-data">{payload}</script>\n'
        '<script src="board.js"></script>\n{tags}</body>\n</html>\n'
    ).format(
        title=title, css=CSS, subtitle=subtitle, figures=figures, payload=safe_json(payload),
        tags=drift_tags,
    )  # fmt: skip


def _payload(view: BoardView, title: str) -> dict[str, Any]:
    """The page's JSON."""
    data, table, scopes = view.data, view.table, view.scopes
    runs = {r.run_id: r for r in data.runs}
    return {
        "title": title,
        "generated_at": now(),
        "package_version": __version__,
        "bootstrap": table.bootstrap,
        "seed": table.seed,
        "scorers": list(table.scorers),
        "scopes": scopes,
        "metrics": list(METRICS),
        "label_metrics": list(LABEL_METRICS),
        "configs": [
            {
                "run_id": run_id,
                "label": label,
                "model_spec": runs[run_id].model_spec if run_id in runs else None,
                "system_prompt": runs[run_id].system_prompt if run_id in runs else None,
            }
            for run_id, label in table.configs
        ],
        "affect_version": data.methodology.affect_version,
    }


def _chunks(data: BoardData) -> list[list[dict[str, Any]]]:
    """Per configuration (in table order), its responses: what the explorer's list shows (as
    text) and the detail view, rendered by the app's :func:`detail.response_detail`."""
    by_response: dict[str, list[RatingSet]] = {}
    for rs in data.rating_sets:
        by_response.setdefault(rs.response_id, []).append(rs)
    order = list(dict.fromkeys(r.run_id for r in data.responses))
    chunks: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in order}
    for r in data.responses:
        sets, affect = by_response.get(r.response_id, []), data.affect.get(r.response_id, [])
        chunks[r.run_id].append(
            {
                "id": r.response_id,
                "prompt_id": r.prompt_id,
                "code": r.code,
                "prompt": snippet(r.prompt),
                "html": response_detail(r, sets, affect),
            }
        )
    return [chunks[run_id] for run_id in order]
