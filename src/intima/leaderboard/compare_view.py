"""The side-by-side numbers, rendered once for the app and the site: two configurations' rates
per scope, B − A with its paired 95% interval, the smallest difference the board detects, and
whether the two differ (all from :class:`intima.results.paired.PairedBoard`).

:func:`compare_frame` is the table with a slot (a cell, or the span of a name) for each
number; :func:`rate_cell` and :func:`pair_cells` render what goes in the slots. The app's
:func:`compare_html` puts them in place here; the site's data files
(:func:`compare_chunk`, one per scorer and metric) hold the empty frame and every slot's
fragment, and ``board.js`` only picks a pair's fragments and swaps them in. Every fragment is
a :class:`markupsafe.Markup`: labels go in only as escaped arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np
from markupsafe import Markup
from numpy.typing import NDArray

from intima.leaderboard.render import pct
from intima.results.board import BoardView
from intima.results.headline import HeadlineDifference, headline_difference
from intima.results.paired import Difference
from intima.results.power import MIN_JUDGED_PAIRS
from intima.results.prediction import MIN_LABELLED, PredictionRow
from intima.results.table import OVERALL, ScoreRow

DIFFERENT = "different"
NO_DIFFERENCE = "no detectable difference"
SAME = "the same configuration"
TOO_FEW = "too few judged pairs"
NOTE = (
    "B − A over the judged pairs (the prompts both configurations were scored on), with its "
    "paired 95% interval (the same prompts drawn for both); different only when it excludes "
    "0; the smallest difference detectable with 80% power at alpha 0.05. Under "
    f"{MIN_JUDGED_PAIRS} judged pairs: too few judged pairs, no number. See Methodology."
)
#: What a pair's slots hold where there is no number, and for a configuration and itself.
NONE: tuple[str, str, str, str, str] = ("–", "", "–", "–", "–")
ITSELF: tuple[str, str, str, str, str] = ("–", "", "–", SAME, "–")


def tenth_points(x: NDArray[np.float64]) -> list[int | None]:
    """Shares or differences as whole tenths of a point, half away from zero (None where
    NaN): rounded once, so B − A and A − B read as each other's negation, and the pages and
    ``intima compare`` read the same digits (no second rounding: 0.48949 is 48.9)."""
    scaled = np.asarray(x, dtype=np.float64) * 1000
    nan = np.isnan(scaled)
    whole = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    out = np.where(nan, 0, whole).astype(np.int64).tolist()
    return [None if m else v for v, m in zip(out, nan.tolist(), strict=True)] if nan.any() else out


def tenths(m: int, signed: bool = False) -> str:
    """Tenths of a point as points to one decimal."""
    sign = "-" if m < 0 else ("+" if signed and m > 0 else "")
    return f"{sign}{abs(m) // 10}.{abs(m) % 10}"


def points(x: float | None, signed: bool = True) -> str:
    """A difference in points, as the side-by-side shows it."""
    if x is None:
        return "–"
    n = tenth_points(np.array([x]))[0]
    return "–" if n is None else tenths(n, signed)


def verdict(d: Difference) -> str:
    if d.too_few:
        return TOO_FEW
    return DIFFERENT if d.different else NO_DIFFERENCE


def scope_name(scope: str) -> str:
    return "Overall" if scope == OVERALL else scope


def rate_cell(row: ScoreRow) -> Markup:
    """What one configuration's rate slot holds: the rate and its 95% interval."""
    if row.rate is None:
        return Markup("–")
    return _RATE.format(pct(row.rate), pct(row.lo), pct(row.hi))


#: A rate (or a share) and its 95% interval.
_RATE = Markup('<span class="rate">{}</span><span class="ci"> [{}, {}]</span>')


def _ends(lo: int | None, hi: int | None) -> str:
    return "" if lo is None or hi is None else f" [{tenths(lo, True)}, {tenths(hi, True)}]"


def pair_texts(
    diff: int | None, lo: int | None, hi: int | None, mde: int | None, different: bool, n: int
) -> tuple[str, str, str, str, str]:
    """A pair's numbers (in tenths of a point, :func:`tenth_points`) as the side-by-side
    and ``intima compare`` print them: B − A, its 95% interval, the smallest detectable
    difference (never above 100 points: "over 100"), the verdict and the judged pairs. Under
    :data:`MIN_JUDGED_PAIRS` judged pairs: no number and no verdict, "too few judged
    pairs"."""
    if n < MIN_JUDGED_PAIRS:
        return ("–", "", "–", TOO_FEW, str(n))
    if diff is None:
        return (*NONE[:4], str(n))
    shown = "–" if mde is None else "over 100" if mde >= 1000 else tenths(mde)
    return (tenths(diff, True), _ends(lo, hi), shown,
            DIFFERENT if different else NO_DIFFERENCE, str(n))  # fmt: skip


def difference_texts(d: Difference) -> tuple[str, str, str, str, str]:
    """:func:`pair_texts` of one :class:`~intima.results.paired.Difference`."""
    x, lo, hi, mde = tenth_points(np.array([d.diff, d.lo, d.hi, d.mde], dtype=float))
    return pair_texts(x, lo, hi, mde, d.different, d.n_common)


@cache  # a board of 50 configurations has 2,450 ordered pairs per scope, few verdicts
def _verdict_html(says: str, title: str) -> Markup:
    kind = {DIFFERENT: "different", NO_DIFFERENCE: "same"}.get(says, "none")
    return Markup('<span class="{}" title="{}">{}</span>').format(kind, title, says)


def pair_cells(
    diff: int | None, lo: int | None, hi: int | None, mde: int | None, different: bool, n: int
) -> tuple[str, str, str, Markup, str]:
    """What a pair's slots hold: :func:`pair_texts`, the verdict as a fragment (its tooltip:
    how many judged pairs)."""
    pp, ends, mde_text, says, count = pair_texts(diff, lo, hi, mde, different, n)
    title = f"over {n} judged pairs (prompts both configurations were scored on)"
    return pp, ends, mde_text, _verdict_html(says, title), count


def compare_frame(
    metric: str,
    scopes: Sequence[str],
    label_a: str = "",
    label_b: str = "",
    slots: Mapping[str, tuple[str, ...]] | None = None,
) -> Markup:
    """The table, one row per scope; ``slots``: per scope, A's rate and B's rate
    (:func:`rate_cell`) and the pair's :func:`pair_cells` (empty without)."""
    head = Markup(
        "<th>{} rate</th>"
        '<th>A: <span class="label-a">{}</span></th>'
        '<th>B: <span class="label-b">{}</span></th>'
        '<th title="B − A over the judged pairs, with its paired 95% interval (the same '
        'prompts drawn for both)">B − A [95%], points</th>'
        '<th title="The smallest difference this board detects for this pair with 80% power '
        'at alpha 0.05">smallest detectable, points</th>'
        "<th title=\"'different' only when the paired interval excludes 0\">paired test</th>"
        '<th title="Prompts both configurations answered and were scored on">judged pairs</th>'
    ).format(metric.replace("_", " "), label_a, label_b)
    body = Markup("").join(
        Markup(
            '<tr data-scope="{}"><td>{}</td>'
            '<td class="num rate-a">{}</td><td class="num rate-b">{}</td>'
            '<td class="num diff"><span class="pp">{}</span><span class="ci">{}</span></td>'
            '<td class="num mde">{}</td><td class="verdict">{}</td><td class="num pairs">{}</td>'
            "</tr>"
        ).format(scope, scope_name(scope), *(slots or {}).get(scope, ("",) * 7))
        for scope in scopes
    )
    return Markup(
        '<div class="intima-scroll"><table class="intima-scores intima-compare" '
        'id="cmp-scores-table"><thead><tr>{}</tr></thead><tbody>{}</tbody>'
        '</table></div><p class="intima-note" id="cmp-note">{}</p>'
    ).format(head, body, NOTE)


def compare_html(
    view: BoardView, scorer: str | None, metric: str, a: str, b: str, scopes: Sequence[str] = ()
) -> Markup:
    """The app's side-by-side: one row per scope (``scopes``: overall, then the dimensions),
    then, for a judge on a sample, its headline shares compared (:mod:`.headline_view`)."""
    table = view.table
    if not scorer or scorer not in table.scorers:
        return Markup("<p>No scores yet.</p>")
    labels = dict(table.configs)
    if a not in labels or b not in labels:
        return Markup("<p>Choose two configurations.</p>")
    slots: dict[str, tuple[str, ...]] = {}
    for scope in scopes:
        ra, rb = table.get(scorer, a, scope, metric), table.get(scorer, b, scope, metric)
        if a == b:
            cells = ITSELF
        else:
            d = view.paired.difference(scorer, a, b, scope, metric)
            x, lo, hi, mde = tenth_points(np.array([d.diff, d.lo, d.hi, d.mde], dtype=float))
            cells = pair_cells(x, lo, hi, mde, d.different, d.n_common)
        slots[scope] = (rate_cell(ra), rate_cell(rb), *cells)
    own = [r for r in view.prediction if r.judge == scorer and r.metric == metric]
    return compare_frame(metric, scopes, labels[a], labels[b], slots) + headline_html(
        own, scorer, metric, scopes, (a, labels[a]), (b, labels[b])
    )


def compare_chunk(
    view: BoardView, scorer: str, metric: str, scopes: Sequence[str], columns: Mapping[str, Any]
) -> dict[str, Any]:
    """The site's data file for one scorer and metric: the empty :func:`compare_frame`, per
    scope every configuration's :func:`rate_cell` (``rates``) and every ordered pair's
    :func:`pair_cells` (``pairs``, A = i and B = j at ``i * n + j``; the verdict as an index
    into ``verdicts``, which repeat); for a judge on a sample, its headline shares compared
    (``headline``, :func:`headline_chunk`). ``columns``: per scope,
    ``PairedBoard.pair_matrix``'s ``Pairs`` for ``metric`` (i < j, row-major)."""
    table = view.table
    run_ids = [c for c, _ in table.configs]
    n = len(run_ids)
    verdicts: dict[str, int] = {}
    rates: dict[str, list[str]] = {}
    pairs: dict[str, list[list[Any]]] = {}

    def add(cells: tuple[str, ...]) -> list[Any]:
        return [*cells[:3], verdicts.setdefault(cells[3], len(verdicts)), *cells[4:]]

    for scope in scopes:
        rates[scope] = [rate_cell(table.get(scorer, c, scope, metric)) for c in run_ids]
        p = columns[scope]
        d, lo, hi, mde = (tenth_points(getattr(p, k)) for k in ("diff", "lo", "hi", "mde"))
        diff_, n_common = p.different.tolist(), p.n_common.tolist()
        grid: list[list[Any]] = [add(ITSELF)] * (n * n)
        k = 0
        for i in range(n):
            for j in range(i + 1, n):
                dk, lk, hk = d[k], lo[k], hi[k]
                grid[i * n + j] = add(pair_cells(dk, lk, hk, mde[k], diff_[k], n_common[k]))
                # A and B swapped: the same interval, negated.
                grid[j * n + i] = add(
                    pair_cells(_neg(dk), _neg(hk), _neg(lk), mde[k], diff_[k], n_common[k])
                )
                k += 1
        pairs[scope] = grid
    own = [r for r in view.prediction if r.judge == scorer and r.metric == metric]
    headline = headline_chunk(own, scorer, metric, scopes, run_ids, add)
    return {
        "frame": compare_frame(metric, scopes),
        "rates": rates,
        "pairs": pairs,
        "verdicts": list(verdicts),
        **({"headline": headline} if headline else {}),
    }


def _neg(x: int | None) -> int | None:
    return None if x is None else -x


# -- the headline (prediction-powered) shares compared ----------------------------------------

TOO_FEW_LABELLED = "too few judged responses"


def headline_note(judge: str) -> str:
    return (
        f"The shares as {judge} would label every response (prediction-powered, from its "
        "random sample of each configuration) and B − A with its 95% interval: the two "
        "samples are independent, so the interval combines the two shares' intervals "
        f"(MOVER); different only when it excludes 0. Under {MIN_LABELLED} judged responses "
        "in a configuration: too few judged responses, no number. See Methodology."
    )


def headline_texts(h: HeadlineDifference | None) -> tuple[str, str, str, str]:
    """B − A of two headline shares as text: the difference, its 95% interval, the judged
    responses of A / B, the verdict ("too few judged responses" under the minimum)."""
    if h is None:
        return ("–", "", "–", "–")
    count = f"{h.n_a} / {h.n_b}"
    if h.too_few:
        return ("–", "", count, TOO_FEW_LABELLED)
    if h.diff is None:
        return ("–", "", count, "–")
    x, lo, hi = tenth_points(np.array([h.diff, h.lo, h.hi], dtype=float))
    assert x is not None
    return (tenths(x, True), _ends(lo, hi), count,
            DIFFERENT if h.different else NO_DIFFERENCE)  # fmt: skip


def headline_cells(h: HeadlineDifference | None) -> tuple[str, str, str, Markup]:
    pp, ends, count, says = headline_texts(h)
    return pp, ends, count, _verdict_html(says, f"judged responses of A / B: {count}")


def share_cell(r: PredictionRow | None) -> Markup:
    """One configuration's headline share and its 95% interval, or why there is none."""
    if r is None:
        return Markup("–")
    if r.estimate is None:  # why, as a tooltip: the row's verdict and count say it short
        return Markup('<span class="why" title="{}">–</span>').format(r.note)
    return _RATE.format(pct(r.estimate), pct(r.lo), pct(r.hi))


def headline_pair(
    rows: Mapping[tuple[str, str], PredictionRow], a: str, b: str, scope: str
) -> HeadlineDifference | None:
    ra, rb = rows.get((a, scope)), rows.get((b, scope))
    return None if ra is None or rb is None else headline_difference(ra, rb)


def headline_frame(
    judge: str,
    metric: str,
    scopes: Sequence[str],
    label_a: str = "",
    label_b: str = "",
    slots: Mapping[str, tuple[str, ...]] | None = None,
) -> Markup:
    """The headline shares' table, one row per scope; ``slots``: A's and B's
    :func:`share_cell` and :func:`headline_cells` (empty without)."""
    head = Markup(
        "<th>{} share as {} would label every response</th>"
        '<th>A: <span class="label-a">{}</span></th>'
        '<th>B: <span class="label-b">{}</span></th>'
        "<th>B − A [95%], points</th><th>test</th>"
        '<th title="Responses the judge labelled in A / in B (its random samples)">'
        "judged responses, A / B</th>"
    ).format(metric, judge, label_a, label_b)
    body = Markup("").join(
        Markup(
            '<tr data-scope="{}"><td>{}</td>'
            '<td class="num rate-a">{}</td><td class="num rate-b">{}</td>'
            '<td class="num diff"><span class="pp">{}</span><span class="ci">{}</span></td>'
            '<td class="verdict">{}</td><td class="num pairs">{}</td></tr>'
        ).format(scope, scope_name(scope), *(slots or {}).get(scope, ("",) * 6))
        for scope in scopes
    )
    return Markup(
        '<div class="intima-scroll"><table class="intima-scores intima-compare" '
        'id="cmp-headline-table"><thead><tr>{}</tr></thead><tbody>{}'
        '</tbody></table></div><p class="intima-note">{}</p>'
    ).format(head, body, headline_note(judge))


def _by_config(rows: Sequence[PredictionRow]) -> dict[tuple[str, str], PredictionRow]:
    return {(r.run_id, r.scope): r for r in rows}


def headline_html(
    rows: Sequence[PredictionRow],
    judge: str,
    metric: str,
    scopes: Sequence[str],
    a: tuple[str, str],
    b: tuple[str, str],
) -> Markup:
    """The app's headline comparison of ``a`` and ``b`` (run id, label); "" unless both have
    a share of ``judge``'s (``rows``: its rows of ``metric``)."""
    index = _by_config(rows)
    if not any((a[0], s) in index for s in scopes) or not any((b[0], s) in index for s in scopes):
        return Markup()
    slots: dict[str, tuple[str, ...]] = {}
    for scope in scopes:
        h = headline_pair(index, a[0], b[0], scope) if a[0] != b[0] else None
        cells = headline_cells(h) if a[0] != b[0] else ("–", "", "–", SAME)
        slots[scope] = (share_cell(index.get((a[0], scope))), share_cell(index.get((b[0], scope))),
                        *cells)  # fmt: skip
    return headline_frame(judge, metric, scopes, a[1], b[1], slots)


def headline_chunk(
    rows: Sequence[PredictionRow],
    judge: str,
    metric: str,
    scopes: Sequence[str],
    run_ids: Sequence[str],
    add: Callable[[tuple[str, ...]], list[Any]],
) -> dict[str, Any] | None:
    """The site's headline comparison for ``judge`` (``rows``: its rows of ``metric``): the
    empty :func:`headline_frame`, per scope each configuration's :func:`share_cell` and each
    ordered pair's :func:`headline_cells` (through ``add``, which indexes the verdicts); None
    without a share."""
    if not rows:
        return None
    index = _by_config(rows)
    shares, pairs = {}, {}
    for scope in scopes:
        shares[scope] = [share_cell(index.get((c, scope))) for c in run_ids]
        pairs[scope] = [
            add(headline_cells(headline_pair(index, a, b, scope)) if i != j
                else ("–", "", "–", SAME))
            for i, a in enumerate(run_ids)
            for j, b in enumerate(run_ids)
        ]  # fmt: skip
    return {"frame": headline_frame(judge, metric, scopes), "rates": shares, "pairs": pairs}
