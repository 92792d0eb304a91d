"""The static leaderboard: one folder, no server, no CDN (GitHub Pages or a static HF Space).

Layout of the folder::

    index.html        the page; the numbers the side-by-side view needs are embedded as JSON in
                      a <script type="application/json"> tag, every chart as SVG (built by
                      ``charts``), the methodology (``method_view``) and, with a judged
                      sample, the prediction-powered shares per scope (``prediction_view``)
                      in <template>s
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
in base64 (``render.chunk_file``; ``board.js`` inflates it with the browser's
``DecompressionStream``): the fragments repeat their markup on every row, and gzip takes the
response files of 50 configurations x 368 responses from 60 MB to under 5 MB.

Every view the app also shows (score table and direction note, validation card, mean scores,
prediction-powered shares, side-by-side numbers, models table, response detail, methodology,
the drift view's table and transcripts, the charts) is rendered once, in Python (``render``,
``validity_view``, ``prediction_view``, ``compare_view``, ``models_view``, ``method_view``,
``drift_render``, ``charts``),
with every store string escaped; the app shows the fragments and the site embeds the very same
ones, so the scripts only select, load chunks and swap fragments in. Other model text (the
explorer's list) travels as JSON and goes in with ``textContent``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from intima.core.errors import IntimaError
from intima.core.perf import paused_gc
from intima.core.ratings import RatingSet
from intima.core.version import __version__
from intima.leaderboard import charts, wording
from intima.leaderboard.compare_view import compare_chunk
from intima.leaderboard.drift_view import (
    DRIFT_SCRIPT,
    drift_payload,
    drift_templates,
    write_transcripts,
)
from intima.leaderboard.method_view import methodology_html
from intima.leaderboard.models_view import MODELS_SCRIPT, model_rows, with_models
from intima.leaderboard.prediction_view import PREDICTION_SCRIPT, prediction_templates
from intima.leaderboard.render import CSS, chunk_file, response_detail, scores_table, snippet
from intima.leaderboard.validity_view import means_html, validity_html
from intima.results.board import BoardView, assemble_board
from intima.results.conversations import ConversationBoard, drift_tables
from intima.results.data import BoardData
from intima.results.table import (
    LABEL_METRICS,
    METRICS,
    OVERALL,
    ScoreTable,
    dims_in,
)
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
    # The response files do not depend on the scores: write them in a thread while the
    # bootstrap runs (numpy releases the GIL in its matrix products and sorts).
    with ThreadPoolExecutor(max_workers=1) as pool:
        n_chunks = pool.submit(_write_chunks, data, out_dir / "data")
        # The whole board, once; everything below only renders it.
        view = assemble_board(data, bootstrap=bootstrap, seed=seed, per_code=False)
        table = view.table
        pairs: dict[str, dict[str, dict[str, Pairs]]] = {}
        payload = _payload(view, title, pairs)
        payload["pairs"] = _write_pairs(view, pairs, out_dir / "data")
        payload["views"] = _write_views(view, out_dir / "data")
        payload["chunks"] = [f"data/r{i}.js" for i in range(n_chunks.result())]
    static = resources.files("intima.leaderboard") / "static"
    drift, figures = None, chart_templates(table, view.notes)
    # Prediction-powered shares where a judge labelled a random sample ("" otherwise).
    prediction = prediction_templates(view)
    figures += prediction
    built = f"{now()} by intima {__version__}"
    figures += (
        '<template id="methodology">'
        + methodology_html(data.methodology, view.bootstrap, view.seed, built)
        + "</template>\n"
    )
    if conversations is not None and conversations.turns:
        chunks = write_transcripts(conversations, out_dir / "data")
        tables = drift_tables(conversations, bootstrap=bootstrap, seed=seed)
        drift = drift_payload(
            conversations, bootstrap=bootstrap, seed=seed, chunks=chunks, tables=tables
        )
        figures += drift_templates(conversations, tables, drift["scopes"])
    extra = ((DRIFT_SCRIPT,) if drift else ()) + ((PREDICTION_SCRIPT,) if prediction else ())
    for name in (*_STATIC, *extra):
        (out_dir / name).write_text(static.joinpath(name).read_text("utf-8"), encoding="utf-8")
    index = out_dir / "index.html"
    subtitle = wording.board_subtitle(ids, coverage)
    page = _html(title, subtitle, payload, figures, drift, prediction)
    index.write_text(with_models(page, model_rows(data, table.configs)), encoding="utf-8")
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


def _write_views(view: BoardView, folder: Path) -> dict[str, list[str]]:
    """Per scorer and scope, ``data/t<s>_<k>.js``: the scorer's validation card and, per ranking
    metric, the score table and the mean-score table, rendered by the very functions the app
    calls. One file per scope keeps what the first paint loads small (50 configurations: a
    table is about 50 KB)."""
    table, paired, titles, means = view.table, view.paired, view.titles, view.means
    files: dict[str, list[str]] = {}
    for s, scorer in enumerate(table.scorers):
        card = validity_html(view.cards, scorer)
        files[scorer] = []
        for k, scope in enumerate(view.scopes):
            body = {
                "card": card,
                "table": {m: scores_table(table, paired, scorer, scope, m, titles, view.notes)
                          for m in LABEL_METRICS},
                "means": {m: means_html(table, means, scorer, scope, m) for m in LABEL_METRICS},
            }  # fmt: skip
            chunk_file(folder, f"t{s}_{k}", body)
            files[scorer].append(f"data/t{s}_{k}.js")
    return files


def _write_pairs(
    view: BoardView, pairs: dict[str, dict[str, dict[str, Pairs]]], folder: Path
) -> dict[str, Any]:
    """The side-by-side view's numbers, rendered by the app's very functions
    (:func:`intima.leaderboard.compare_view.compare_chunk`): one file per (scorer, metric),
    ``data/p<scorer>_<metric>.js``, holding every scope's fragments for every pair, loaded
    when the side-by-side view asks for it (50 configurations make 2,450 ordered pairs)."""
    files: dict[str, dict[str, str]] = {}
    for s, scorer in enumerate(view.table.scorers):
        files[scorer] = {}
        for m, metric in enumerate(METRICS):
            body = compare_chunk(view, scorer, metric, view.scopes, pairs[scorer][metric])
            chunk_file(folder, f"p{s}_{m}", body)
            files[scorer][metric] = f"data/p{s}_{m}.js"
    return {"files": files}


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


def chart_templates(table: ScoreTable, notes: Mapping[str, str] | None = None) -> str:
    """Every scorer's bars, heatmap and radars (overall), each in a ``<template>`` that
    ``board.js`` clones when the scorer is chosen: ``chart-<kind>-<scorer's index>``;
    ``notes``: each configuration's coverage note, under its radar."""
    dims = dims_in({r.scope for r in table.rows})
    out = []
    for i, scorer in enumerate(table.scorers):
        for kind, svg in (
            ("bars", charts.stacked_bars(table, scorer, OVERALL)),
            ("heatmap", charts.heatmap(table, scorer, OVERALL)),
            ("radar", charts.radars(table, scorer, dims, notes)),
        ):
            out.append(f'<template id="chart-{kind}-{i}">{svg}</template>\n')
    return "".join(out)


def safe_json(obj: Any) -> str:
    """JSON fit to sit inside a <script> element: no '<', '>' or '&' can close or open tags."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _html(
    title: str,
    subtitle: str,
    payload: dict[str, Any],
    figures: str,
    drift: dict[str, Any] | None = None,
    prediction: str = "",
) -> str:
    # Store text reaches the markup only inside ``figures``, escaped by ``charts`` and
    # ``method_view``; the rest of it is in the JSON (the fragments there escaped by ``render``).
    drift_tags = (
        ""
        if drift is None
        else '<script type="application/json" id="drift-data">' + safe_json(drift) + "</script>\n"
        f'<script src="{DRIFT_SCRIPT}"></script>\n'
    )
    if prediction:  # after board.js: it adds its section to the page board.js made
        drift_tags += f'<script src="{PREDICTION_SCRIPT}"></script>\n'
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>" + _escape(title) + "</title>\n"
        # The fragments' own style (the app's very CSS), then the page's.
        "<style>" + CSS + "</style>\n"
        '<link rel="stylesheet" href="board.css">\n</head>\n<body>\n'
        "<header><h1>" + _escape(title) + "</h1>"
        '<p class="sub" id="subtitle">' + _escape(subtitle) + "</p></header>\n"
        '<main id="app"><p id="loading">Loading…</p></main>\n'
        + figures
        + '<script type="application/json" id="board-data">'
        + safe_json(payload)
        + "</script>\n"
        '<script src="board.js"></script>\n' + drift_tags + "</body>\n</html>\n"
    )


def _escape(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _payload(
    view: BoardView, title: str, pairs: dict[str, dict[str, dict[str, Pairs]]]
) -> dict[str, Any]:
    """The page's JSON; fills ``pairs`` (scorer -> metric -> scope -> every pair's B - A,
    ``PairedBoard.pair_matrix``) in the same pass, so each scope's replicates are multiplied
    out once for ranks and pairs."""
    data, table, paired, scopes = view.data, view.table, view.paired, view.scopes
    config_ids = [run_id for run_id, _ in table.configs]
    scores: dict[str, Any] = {}
    for scorer in table.scorers:
        scores[scorer] = {}
        pairs[scorer] = {m: {} for m in METRICS}
        for scope in scopes:
            for metric, col in paired.pair_matrix(scorer, scope, METRICS).items():
                pairs[scorer][metric][scope] = col
            scores[scorer][scope] = {}
            for metric in METRICS:
                rows = [table.get(scorer, c, scope, metric) for c in config_ids]
                scores[scorer][scope][metric] = [
                    [_r(r.rate), _r(r.lo), _r(r.hi), r.n, r.n_unscored, r.n_missing] for r in rows
                ]
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
        # The side-by-side view's rates (its B - A is in the pairs files).
        "scores": scores,
        "affect_version": data.methodology.affect_version,
    }


def _chunks(data: BoardData) -> list[list[dict[str, Any]]]:
    """Per configuration (in table order), its responses: what the explorer's list shows (as
    text) and the detail view, rendered by the app's :func:`render.response_detail`."""
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
