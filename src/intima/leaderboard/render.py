"""HTML fragments for the Gradio app, built server-side (its charts: :mod:`.charts`).

Every fragment is a :class:`markupsafe.Markup`, built from literal templates in this source
(``Markup("<td>{}</td>").format(x)``, ``Markup("").join(...)``, ``+``): markupsafe escapes
every argument that is not itself ``Markup``, so store text (labels, specs, prompts,
responses, rationales) cannot become markup whichever view forgets what. The only templates
are literals here; store text is only ever an argument (``tests/test_leaderboard_markup.py``
checks both, docs/architecture.md says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from markupsafe import Markup

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
from intima.results.table import ScoreRow, ScoreTable, label_metrics_of

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
