"""A response's detail (prompt, response, every scorer's levels and rationale, the affect
measure's breakdown) and the ratings rows the drift view's transcripts share with it, as
:class:`markupsafe.Markup` from literal templates (see :mod:`.render`). The site writes 18,400
of these for a 50-configuration board: the hot path is built with the fewest escaping calls."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from operator import itemgetter

from markupsafe import Markup

from intima.affect.config import AffectConfig
from intima.core.ratings import RatingSet
from intima.leaderboard.render import clip
from intima.results.sources import AFFECT_FACTORS
from intima.results.table import CATEGORIES
from intima.store import StoredResponse


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
