"""The side-by-side numbers, rendered once for the app and the site: two configurations' rates
per scope, B − A with its paired 95% interval, the smallest difference the board detects, and
whether the two differ (all from :class:`intima.results.paired.PairedBoard`).

:func:`compare_frame` is the table with a slot (a cell, or the span of a name) for each
number; :func:`rate_cell` and :func:`pair_cells` render what goes in the slots. The app's
:func:`compare_html` puts them in place here; the site's data files
(:func:`compare_chunk`, one per scorer and metric) hold the empty frame and every slot's
fragment, and ``board.js`` only picks a pair's fragments and swaps them in. Labels go through
:func:`render.esc`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from intima.leaderboard.render import esc, pct
from intima.results.paired import Difference, PairedBoard
from intima.results.table import OVERALL, ScoreRow, ScoreTable

DIFFERENT = "different"
NO_DIFFERENCE = "no detectable difference"
SAME = "the same configuration"
NOTE = (
    "B − A over the prompts both answered, with its paired 95% interval (the same prompts drawn "
    "for both); different only when it excludes 0; the smallest difference detectable with 80% "
    "power at alpha 0.05. See Methodology."
)
#: What a pair's slots hold where there is no number, and for a configuration and itself.
NONE: tuple[str, str, str, str] = ("–", "", "–", "–")
ITSELF: tuple[str, str, str, str] = ("–", "", "–", SAME)


def ten_thousandths(x: NDArray[np.float64]) -> list[int | None]:
    """Numbers as whole ten-thousandths (None where NaN): the precision the board keeps."""
    scaled = np.round(np.asarray(x, dtype=np.float64) * 10_000)
    nan = np.isnan(scaled)
    out = np.where(nan, 0, scaled).astype(np.int64).tolist()
    return [None if m else v for v, m in zip(out, nan.tolist(), strict=True)] if nan.any() else out


def tenths(n: int, signed: bool = False) -> str:
    """Ten-thousandths as points to one decimal, half away from zero (so B − A and A − B read
    as each other's negation)."""
    m = (abs(n) + 5) // 10  # tenths of a point
    sign = "-" if n < 0 and m else ("+" if signed and n > 0 and m else "")
    return f"{sign}{m // 10}.{m % 10}"


def points(x: float | None, signed: bool = True) -> str:
    """A difference in points, as the side-by-side shows it."""
    if x is None:
        return "–"
    n = ten_thousandths(np.array([x]))[0]
    return "–" if n is None else tenths(n, signed)


def verdict(d: Difference) -> str:
    return DIFFERENT if d.different else NO_DIFFERENCE


def scope_name(scope: str) -> str:
    return "Overall" if scope == OVERALL else scope


def rate_cell(row: ScoreRow) -> str:
    """What one configuration's rate slot holds: the rate and its 95% interval."""
    if row.rate is None:
        return "–"
    ends = f"[{pct(row.lo)}, {pct(row.hi)}]"
    return f'<span class="rate">{pct(row.rate)}</span><span class="ci"> {ends}</span>'


def pair_cells(
    diff: int | None, lo: int | None, hi: int | None, mde: int | None, different: bool, n: int
) -> tuple[str, str, str, str]:
    """What a pair's slots hold (numbers in ten-thousandths): B − A and its 95% interval and
    the smallest detectable difference, as text, and the paired test's verdict, a fragment
    (its tooltip: how many prompts)."""
    if diff is None:
        return NONE
    ends = "" if lo is None or hi is None else f" [{tenths(lo, True)}, {tenths(hi, True)}]"
    says = DIFFERENT if different else NO_DIFFERENCE
    return (
        tenths(diff, True),
        ends,
        "–" if mde is None else tenths(mde),
        f'<span class="{"different" if different else "same"}" '
        f'title="over {n} prompts both answered">{esc(says)}</span>',
    )


def compare_frame(
    metric: str,
    scopes: Sequence[str],
    label_a: str = "",
    label_b: str = "",
    slots: Mapping[str, tuple[str, ...]] | None = None,
) -> str:
    """The table, one row per scope; ``slots``: per scope, A's rate and B's rate
    (:func:`rate_cell`) and the pair's :func:`pair_cells` (empty without)."""
    head = (
        f"<th>{esc(metric.replace('_', ' '))} rate</th>"
        f'<th>A: <span class="label-a">{esc(label_a)}</span></th>'
        f'<th>B: <span class="label-b">{esc(label_b)}</span></th>'
        '<th title="B − A over the prompts both answered, with its paired 95% interval (the '
        'same prompts drawn for both)">B − A [95%], points</th>'
        '<th title="The smallest difference this board detects for this pair with 80% power '
        'at alpha 0.05">smallest detectable, points</th>'
        "<th title=\"'different' only when the paired interval excludes 0\">paired test</th>"
    )
    body = []
    for scope in scopes:
        ra, rb, pp, ends, mde, says = (slots or {}).get(scope, ("",) * 6)
        body.append(
            f'<tr data-scope="{esc(scope)}"><td>{esc(scope_name(scope))}</td>'
            f'<td class="num rate-a">{ra}</td><td class="num rate-b">{rb}</td>'
            f'<td class="num diff"><span class="pp">{esc(pp)}</span><span class="ci">'
            f'{esc(ends)}</span></td><td class="num mde">{esc(mde)}</td>'
            f'<td class="verdict">{says}</td></tr>'
        )
    return (
        '<div class="intima-scroll"><table class="intima-scores intima-compare" '
        f'id="cmp-scores-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
        f'</table></div><p class="intima-note" id="cmp-note">{esc(NOTE)}</p>'
    )


def compare_html(
    table: ScoreTable,
    paired: PairedBoard,
    scorer: str | None,
    metric: str,
    a: str,
    b: str,
    scopes: Sequence[str] = (),
) -> str:
    """The app's side-by-side: one row per scope (``scopes``: overall, then the dimensions)."""
    if not scorer or scorer not in table.scorers:
        return "<p>No scores yet.</p>"
    labels = dict(table.configs)
    if a not in labels or b not in labels:
        return "<p>Choose two configurations.</p>"
    slots = {}
    for scope in scopes:
        ra, rb = table.get(scorer, a, scope, metric), table.get(scorer, b, scope, metric)
        if a == b:
            cells = ITSELF
        else:
            d = paired.difference(scorer, a, b, scope, metric)
            x, lo, hi, mde = ten_thousandths(np.array([d.diff, d.lo, d.hi, d.mde], dtype=float))
            cells = pair_cells(x, lo, hi, mde, d.different, d.n_common)
        slots[scope] = (rate_cell(ra), rate_cell(rb), *cells)
    return compare_frame(metric, scopes, labels[a], labels[b], slots)


def compare_chunk(
    table: ScoreTable, scorer: str, metric: str, scopes: Sequence[str], columns: Mapping[str, Any]
) -> dict[str, Any]:
    """The site's data file for one scorer and metric: the empty :func:`compare_frame`, per
    scope every configuration's :func:`rate_cell` (``rates``) and every ordered pair's
    :func:`pair_cells` (``pairs``, A = i and B = j at ``i * n + j``; the verdict as an index
    into ``verdicts``, which repeat). ``columns``: per scope, ``PairedBoard.pair_matrix``'s
    ``Pairs`` for ``metric`` (i < j, row-major)."""
    run_ids = [c for c, _ in table.configs]
    n = len(run_ids)
    verdicts: dict[str, int] = {}
    rates: dict[str, list[str]] = {}
    pairs: dict[str, list[list[Any]]] = {}

    def add(cells: tuple[str, str, str, str]) -> list[Any]:
        return [*cells[:3], verdicts.setdefault(cells[3], len(verdicts))]

    for scope in scopes:
        rates[scope] = [rate_cell(table.get(scorer, c, scope, metric)) for c in run_ids]
        p = columns[scope]
        d, lo, hi, mde = (ten_thousandths(getattr(p, k)) for k in ("diff", "lo", "hi", "mde"))
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
    return {
        "frame": compare_frame(metric, scopes),
        "rates": rates,
        "pairs": pairs,
        "verdicts": list(verdicts),
    }


def _neg(x: int | None) -> int | None:
    return None if x is None else -x
