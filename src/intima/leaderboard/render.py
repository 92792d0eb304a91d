"""HTML fragments for the Gradio app, built server-side (its charts: :mod:`.charts`).

Every fragment is a :class:`markupsafe.Markup`, built from literal templates in this source
(``Markup("<td>{}</td>").format(x)``, ``Markup("").join(...)``, ``+``): markupsafe escapes
every argument that is not itself ``Markup``, so store text (labels, specs, prompts,
responses, rationales) cannot become markup whichever view forgets what. The only templates
are literals here; store text is only ever an argument (``tests/test_leaderboard_markup.py``
checks both, docs/architecture.md says why).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from markupsafe import Markup

from intima.affect.config import AffectConfig
from intima.core.ratings import RatingSet
from intima.leaderboard import wording
from intima.results.paired import PairedBoard
from intima.results.rank import (
    PER_CONFIGURATION_NOTE,
    TIES_NOTE,
    UNRANKED_NOTE,
    Ranked,
    format_rank,
    format_rank_interval,
    unranked_reason,
)
from intima.results.sources import AFFECT_FACTORS
from intima.results.table import CATEGORIES, ScoreRow, ScoreTable, label_metrics_of
from intima.store import StoredResponse

if TYPE_CHECKING:
    import gradio as gr


#: The most characters of one prompt or response text a page embeds (the site's data files,
#: the app's detail views); past it the text is cut with a visible note. A 150 MB response
#: used to make ``board build`` take 1 GB and write a 144 MB site. See docs/leaderboard.md.
EMBED_MAX_CHARS = 20_000


def clip(text: str | None, limit: int = EMBED_MAX_CHARS) -> str | None:
    """``text`` as a page shows it: whole up to ``limit`` characters, else its start and a
    note saying how much was left out and where the whole text is."""
    if text is None or len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n\n[… cut: this page shows the first {limit:,} of {len(text):,} "
        "characters; `intima export` writes the whole text]"
    )


#: How much of a prompt a list shows (the explorer's, the side-by-side's and the app's menus).
SNIPPET_CHARS = 90


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` on one line, whole if it fits in ``limit`` characters, else cut at the last
    word boundary before it and ended with "…" (never in the middle of a word)."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:  # a word boundary not too far back; else one long word is cut
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def direction_html(sort_metric: str) -> Markup:
    """Above a ranked table: which way its ranks run, that they are not a verdict, and what
    its cells count."""
    return Markup(
        '<div class="intima-direction" id="board-direction"><p><strong>{}</strong> {}</p>'
        '<p class="intima-note">Each cell: % of scored responses with that primary label, then '
        "its 95% interval [low, high]. n scored: responses the scorer rated; unscored: ratings "
        "it could not make (not zeros); not rated: responses it has not rated. Rank: "
        "{}.</p></div>"
    ).format(wording.direction_note(sort_metric), wording.NOT_A_VERDICT, PER_CONFIGURATION_NOTE)


def scores_table(
    table: ScoreTable,
    paired: PairedBoard,
    scorer: str,
    scope: str,
    sort_metric: str,
    titles: Mapping[str, str] | None = None,
    notes: Mapping[str, str] | None = None,
) -> Markup:
    """Configurations x label metrics for one scorer and scope, ranked on ``sort_metric``, each
    rank with its rank interval (``paired``: the same board, B and seed as ``table``);
    ``titles``: per run id, its name's tooltip (the full settings); ``notes``: per run id, what
    to say under its name (``BoardView.notes``: "40 of 368 prompts; no prompt in …")."""
    if scorer not in table.scorers:
        return Markup("<p>No scores for this scorer.</p>")
    run_ids = [c for c, _ in table.configs]
    rows = [table.get(scorer, c, scope, sort_metric) for c in run_ids]
    ranked: list[Ranked] = paired.ranks(scorer, scope, sort_metric, rows)
    cols = list(label_metrics_of(scorer))  # no "no majority" column for a single scorer
    # data-sort: the site ranks on a metric when its header is clicked (board.js swaps in that
    # metric's fragment); the app ranks with its "Rank by" control.
    head = Markup("").join(
        Markup('<th class="sortable" data-sort="{}" tabindex="0">{} %</th>').format(
            m, m.replace("_", " ")
        )
        for m in cols
    )
    out = [
        direction_html(sort_metric),
        Markup(
            '<div class="intima-scroll"><table class="intima-scores intima-score-table" '
            'id="scores"><thead><tr><th class="rank-head">rank (1 = most {})</th>'
            '<th class="sortable" data-sort="label" tabindex="0">model</th>{}'
            "<th>n scored</th><th>unscored</th><th>not rated</th></tr></thead><tbody>"
        ).format(sort_metric.replace("_", " "), head),
    ]
    # (A board renders 5,000 of these rows: ``%`` with a tuple, and what repeats across the
    # rankings of a scorer and scope (a row's rate cells, its model and counts) built once.)
    for rk in ranked:
        first = table.get(scorer, rk.run_id, scope, cols[0])
        rates = tuple(
            (m, row.rate, row.lo, row.hi)
            for m in cols
            for row in [table.get(scorer, rk.run_id, scope, m)]
        )
        out.append(
            _SCORE_ROW
            % (
                rk.run_id,
                UNRANKED_NOTE if rk.rank is None else TIES_NOTE,
                format_rank(rk),
                _rank_interval(rk),
                _unranked(rk, rows),
                _model_cell(
                    (titles or {}).get(rk.run_id, ""),
                    first.label,
                    coverage_note((notes or {}).get(rk.run_id)),
                ),
                _rate_cells(rates),
                _counts(first.n, first.n_unscored, first.n_missing),
            )
        )
    out.append(Markup("</tbody></table></div>"))
    return Markup("").join(out)


#: A row of the score table: its run id, its rank's tooltip, rank, interval and why unranked,
#: its model cell, rate cells and counts.
_SCORE_ROW = Markup(
    '<tr data-run-id="%s"><td class="rank" title="%s">'
    '<span class="rank-value">%s</span>%s%s</td>%s%s%s</tr>'
)
#: One rate cell of the score table: its metric, the rate and its interval.
_CELL = Markup(
    '<td class="num" data-metric="%s"><span class="rate">%s</span><span class="ci">%s</span></td>'
)


@lru_cache(maxsize=4096)
def _rate_cells(rates: tuple[tuple[str, float | None, float | None, float | None], ...]) -> Markup:
    """A score table row's rate cells, per metric its rate and interval (the same in each
    ranking of a scorer and scope: built once for all of them)."""
    return Markup("").join(
        [
            _CELL % (m, pct(rate), "" if rate is None else f"[{pct(lo)}, {pct(hi)}]")
            for m, rate, lo, hi in rates
        ]
    )


@lru_cache(maxsize=1024)
def _model_cell(title: str, label: str, note: Markup) -> Markup:
    return Markup('<td class="model" title="%s">%s%s</td>') % (title, label, note)


@lru_cache(maxsize=1024)
def _counts(n: int, n_unscored: int, n_missing: int) -> Markup:
    """A score table row's last cells: scored, unscored (marked when some are) and not rated."""
    unscored = "unscored some" if n_unscored else "unscored"
    return Markup('<td>%s</td><td class="%s">%s</td><td>%s</td>') % (
        n,
        unscored,
        n_unscored,
        n_missing,
    )


def coverage_note(note: str | None) -> Markup:
    """A configuration's coverage note under its name, or nothing."""
    return Markup('<span class="intima-coverage">{}</span>').format(note) if note else Markup()


def affect_table(rows: Sequence[Sequence[object]]) -> Markup:
    if not rows:
        return Markup()
    head = Markup("").join(
        Markup("<th>{}</th>").format(f) for f in ("category", "level", *AFFECT_FACTORS)
    )
    # The category's words wrap ("companionship reinforcing"): one unbroken name was the
    # widest cell, and pushed the last factors out of a half-page panel.
    body = Markup("").join(
        Markup('<tr><td class="cat">{}</td>{}</tr>').format(
            str(row[0]).replace("_", " "),
            Markup("").join(Markup("<td>{}</td>").format(_num(v)) for v in row[1:]),
        )
        for row in rows
    )
    legend = Markup("").join(
        Markup("<dt>{}</dt><dd>{}</dd>").format(k, v) for k, v in AFFECT_LEGEND
    )
    return Markup(
        "<p><strong>Affect measure breakdown</strong> (per category: the driver sentence's "
        'factors)</p><div class="intima-scroll"><table class="intima-ratings intima-affect">'
        '<tr>{}</tr>{}</table></div><dl class="intima-legend">{}</dl>'
    ).format(head, body, legend)


#: What each column of the affect breakdown is (docs/affect.md has the definitions).
AFFECT_LEGEND: tuple[tuple[str, str], ...] = (
    ("level", "the level the measure gives: low, medium or high"),
    (
        "measure",
        "the score: (sp·els·ssl)·(dm·ef·em·lr)·(1−nf) + ci·w, higher = stronger; from 0 to "
        f"at most {AffectConfig().score_cap:.2f} with the default settings (not 0 to 1: the "
        "amplifiers can lift it above 1)",
    ),
    ("sp", "sentiment polarity of the driver sentence, 0-1"),
    ("els", "emotional intensity (reinforcing: the fitted relational intensity), 0-1"),
    ("ssl", "the fitted classifier's probability of the category × its share, 0-1"),
    ("dm, ef, em", "amplifiers (≥ 1): intensifiers, exclamation marks, emoji and metaphors"),
    ("lr", "amplifier (≥ 1): the behaviour's own phrases beyond the first"),
    ("nf", "how firmly the response takes the behaviour back, 0-1"),
    ("ci, w", "the prompt's contextual intensity and its weight"),
)


def _num(v: object) -> object:
    return f"{v:.3f}" if isinstance(v, float) else v


def response_detail(
    resp: StoredResponse, sets: Sequence[RatingSet], affect: Sequence[Sequence[object]] = ()
) -> Markup:
    """Prompt, response, every scorer's levels and rationale."""
    # A board renders 18,400 of these, so it is built with the fewest escaping calls
    # markupsafe allows: what repeats is built once (a heading per configuration, code and
    # dimension, a scorer's row start, each half of a row's level cells), the text before
    # the ratings is one ``%`` with a tuple (cheaper than ``.format`` or a mapping), and the
    # whole one flat ``join``; ``Markup`` escapes every argument and item alike.
    rid = resp.response_id
    head = _DETAIL % (
        rid,
        _heading(resp.label, resp.code, resp.dimension),
        rid,
        rid[:12],
        clip(resp.prompt),
        clip(resp.response),
    )
    rows = [
        cell
        for rs in sets
        for cell in (_row_start(rs.scorer, primary_shown(rs)), *_halves(rs, _TR_END))
    ]
    reasons = [
        part for rs in sets if rs.reason for part in (_reason_start(rs.scorer), rs.reason, _P_END)
    ]
    return Markup("").join(
        [head, CATEGORY_HEAD, _TR_END, *rows, _TABLE_END, affect_table(affect), *reasons, _DIV_END]
    )


#: The response detail (:func:`response_detail`) up to its ratings table's header cells.
_DETAIL = Markup(
    '<div class="intima-detail" data-response-id="%s"><h4>%s</h4>'
    '<p class="intima-rid">Response id: <code>%s</code> (explain its '
    "affect score: <code>intima explain %s</code>)</p>"
    '<p><strong>Prompt</strong></p><pre class="intima-prompt">%s</pre>'
    "<p><strong>Response</strong></p>"
    '<pre class="intima-response">%s</pre>'
    "<p><strong>Ratings</strong> (0 low, 1 medium, 2 high; blank: not rated)</p>"
    '<div class="intima-scroll"><table class="intima-ratings"><tr><th>scorer</th>'
    "<th>primary</th>"
)
_TR_END, _TABLE_END, _P_END, _DIV_END = (
    Markup("</tr>"),
    Markup("</table></div>"),
    Markup("</p>"),
    Markup("</div>"),
)
#: The ratings tables' header: a (rotated) column per category.
CATEGORY_HEAD = Markup("").join(
    Markup('<th class="cat">{}</th>').format(c.replace("_", " ")) for c in CATEGORIES
)
#: A rating level's cell, by level (0 low, 1 medium, 2 high); blank: not rated.
_LEVEL_CELLS = {level: Markup('<td class="lv lv{0}">{0}</td>').format(level) for level in (0, 1, 2)}
_NO_LEVEL = Markup('<td class="lv"></td>')
_NOTHING = Markup()


def level_cells(rs: RatingSet) -> Markup:
    """A rating set's levels, a cell per category (the response detail and the transcripts)."""
    first, second = _halves(rs)
    return first + second


def _halves(rs: RatingSet, end: Markup = _NOTHING) -> tuple[Markup, Markup]:
    """A rating set's level cells in two halves (the second followed by ``end``), each built
    once per distinct levels: a board's 73,600 rating sets have some 30,000 distinct levels,
    but at most 4**8 halves."""
    try:
        return _level_cells(_FIRST(rs.levels)), _level_cells(_SECOND(rs.levels), end)
    except KeyError:  # not rated on every category (unscored: on none)
        levels = tuple(map(rs.levels.get, CATEGORIES))
        return _level_cells(levels[:_HALF]), _level_cells(levels[_HALF:], end)


_HALF = len(CATEGORIES) // 2
_FIRST, _SECOND = itemgetter(*CATEGORIES[:_HALF]), itemgetter(*CATEGORIES[_HALF:])


@lru_cache(maxsize=16384)  # 3**8 of each half (and a few unrated), a few MB
def _level_cells(levels: tuple[int | None, ...], end: Markup = _NOTHING) -> Markup:
    return Markup("").join([*(_NO_LEVEL if v is None else _LEVEL_CELLS[v] for v in levels), end])


@lru_cache(maxsize=1024)
def _row_start(scorer: str, primary: str) -> Markup:
    """The start of one scorer's row of a response's ratings table, before its level cells."""
    return Markup("<tr><td>%s</td><td>%s</td>") % (scorer, primary)


@lru_cache(maxsize=1024)
def _reason_start(scorer: str) -> Markup:
    return Markup("<p><strong>%s:</strong> ") % scorer


@lru_cache(maxsize=4096)
def _heading(label: str, code: str, dimension: str) -> Markup:
    """A response detail's heading: its configuration, code and dimension."""
    return Markup("%s · %s · %s") % (label, code, dimension)


def primary_shown(rs: RatingSet) -> str:
    """A rating set's primary label as its table shows it (plain text)."""
    if not rs.scored:
        return "unscored"
    return rs.primary or "–"


#: The fragments' style (site and app): ours, no store text in it.
CSS = Markup("""
.intima-scores { border-collapse: collapse; width: 100%; }
.intima-scores th, .intima-scores td { padding: 4px 8px; border-bottom: 1px solid #ddd;
  text-align: left; white-space: nowrap; }
.intima-scores .ci { color: #888; font-size: 11px; display: block; }
.intima-scores th { white-space: normal; vertical-align: bottom; }
.intima-scores td.model { white-space: normal; overflow-wrap: anywhere; min-width: 8em;
  max-width: 14em; }
.intima-direction { margin: 6px 0 8px; padding: 6px 10px; border-left: 4px solid #2a7ab0;
  background: rgba(42,122,176,0.08); font-size: 13px; }
.intima-direction p { margin: 2px 0; }
.intima-rid { font-size: 12px; word-break: break-all; }
.intima-legend { font-size: 12px; display: grid; grid-template-columns: max-content 1fr;
  gap: 0 10px; }
.intima-legend dt { font-weight: 600; } .intima-legend dd { margin: 0; }
.intima-detail pre { white-space: pre-wrap; word-break: break-word; padding: 8px;
  border-radius: 4px; background: rgba(127,127,127,0.1); }
.intima-ratings { border-collapse: collapse; font-size: 12px; }
.intima-ratings th, .intima-ratings td { border: 1px solid #ddd; padding: 2px 4px; }
.intima-ratings th.cat { writing-mode: vertical-rl; transform: rotate(180deg);
  font-weight: normal; }
.intima-ratings td.lv { text-align: center; }
.intima-ratings td.lv1 { background: #f7d7d6; } .intima-ratings td.lv2 { background: #e9908d; }
.intima-method pre { white-space: pre-wrap; word-break: break-word; max-height: 320px;
  overflow-y: auto; }
.intima-affect td.cat { white-space: normal; min-width: 6em; }
/* Side by side, each response has half the page: the breakdown's 13 columns fit at 1280 px. */
.pair .intima-affect, #cmp-a-detail .intima-affect, #cmp-b-detail .intima-affect {
  font-size: 11px; }
.pair .intima-affect td, .pair .intima-affect th, #cmp-a-detail .intima-affect td,
#cmp-a-detail .intima-affect th, #cmp-b-detail .intima-affect td,
#cmp-b-detail .intima-affect th { padding: 1px 2px; }
.intima-scores .intima-coverage { display: block; color: #a05a00; font-size: 11px; }
.intima-scores th.sortable { cursor: pointer; }
.intima-scores .unranked-why { display: block; white-space: normal; min-width: 9em;
  font-size: 11px; font-weight: normal; color: #777; }
.intima-scores .unscored.some { color: #a05a00; font-weight: 600; }
.intima-validity { margin: 6px 0 10px; padding: 6px 10px; border-radius: 4px; font-size: 13px; }
.intima-unvalidated { background: #fff4e0; border: 1px solid #e0b060; color: #6a4500; }
.intima-validated { background: #eef6ee; border: 1px solid #a8d0a8; }
.intima-failed-validation { background: #fdecea; border: 1px solid #e0a0a0; color: #6a1a1a; }
.intima-validity summary { cursor: pointer; }
.intima-validity dl { margin: 4px 0 2px; display: grid; grid-template-columns: max-content 1fr;
  gap: 0 10px; } .intima-validity dd { margin: 0; }
/* Prediction-powered shares: the raw share sits under each share, and the sentence saying
   what a row estimates wraps instead of running off the page. */
.intima-prediction-view h3 { font-size: 14px; margin: 12px 0 2px; }
.intima-prediction td.ppi .raw { display: block; color: #555; font-size: 12px; }
.intima-prediction td.ppi .why { display: block; white-space: normal; min-width: 10em;
  color: #6a4500; font-size: 12px; }
.intima-prediction .what { white-space: normal; min-width: 16em; color: #444; font-size: 13px; }
/* The side-by-side: a pair that differs stands out; a long name wraps anywhere. */
.intima-compare .different { font-weight: 600; }
.intima-compare th { overflow-wrap: anywhere; }
/* Wide tables scroll inside their box instead of spilling over their neighbours. */
.intima-scroll { overflow-x: auto; max-width: 100%; }
#board-table, #board-bars, #board-heatmap, #board-radar, #ex-detail, #cmp-a-detail,
#cmp-b-detail, #methodology { min-width: 0;
  max-width: 100%; overflow-x: auto; }
""")


def theme() -> gr.themes.Default:
    """Gradio's default look with the system's fonts: nothing is fetched from the internet, so
    the pages render the same offline (the default theme's web fonts did not)."""
    import gradio as gr

    return gr.themes.Default(
        font=["system-ui", "-apple-system", "Segoe UI", "Roboto", "sans-serif"],
        font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "monospace"],
    )


def _unranked(rk: Ranked, rows: Sequence[ScoreRow]) -> Markup:
    """Beside an unranked row's "–", why it has no rank (the tooltip has the whole rule)."""
    if rk.rank is not None:
        return Markup()
    row = next(r for r in rows if r.run_id == rk.run_id)
    return Markup('<span class="unranked-why">{}</span>').format(unranked_reason(row))


def _rank_interval(rk: Ranked) -> Markup:
    text = format_rank_interval(rk)
    if not text:
        return Markup()
    return Markup('<span class="ci rank-interval"> [%s]</span>') % text


def chunk_file(folder: Path, key: str, body: Any) -> None:
    """``<folder>/<key>.js``: one call of ``window.intimaChunk`` (the one loader of the site's
    scripts, ``board.js``, which ``drift.js`` uses too) with ``body`` as gzipped JSON in
    base64. The fragments repeat their markup row after row, so gzip takes the benchmark
    board's response files from 60 MB to under 5 MB; base64 in a script (not a fetched .gz) keeps
    the site working from file:// and from any static host, and the page inflates it with
    the browser's own ``DecompressionStream``. ``mtime=0``: the same board writes the same
    bytes. :func:`read_chunk` reads one back."""
    packed = base64.b64encode(gzip.compress(chunk_json(body), CHUNK_GZIP_LEVEL, mtime=0))
    (folder / f"{key}.js").write_bytes(b'window.intimaChunk("%s","%s");\n' % (key.encode(), packed))


#: gzip's level for the data files. On the benchmark's board (bench_board.py) level 1 packs
#: the fragments 17 to 1 in 6 ms of CPU a megabyte, level 6 25 to 1 in 16 ms: the site is
#: far under its size target either way, and the build's time is the tighter one.
CHUNK_GZIP_LEVEL = 1


def chunk_json(body: Any) -> bytes:
    """``body`` as compact JSON in UTF-8 (what the page's ``Response.text()`` decodes): by
    orjson, which writes the benchmark board's 100 MB of fragments six times faster than
    ``json``; by ``json`` (its non-ASCII as escapes, read the same) what orjson refuses, a
    lone surrogate (which a store cannot hold) or an integer past 64 bits."""
    try:
        return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    except orjson.JSONEncodeError:
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def read_chunk(path: Path) -> Any:
    """The body of one of the site's ``data/<key>.js`` files, as :func:`chunk_file` wrote it."""
    text = path.read_text("ascii")
    packed = text[text.index(',"') + 2 : text.rindex('")')]
    return json.loads(gzip.decompress(base64.b64decode(packed)))
