"""The app's side-by-side numbers: two configurations' rates per scope, B − A with its paired
95% interval, the smallest difference the board detects, and whether the two differ.

The same rows and the same formatting as the static site's side-by-side (``board.js``
``compareTable``, which shows the numbers ``site._write_pairs`` precomputed); both come from
:class:`intima.results.paired.PairedBoard`. Labels go through :func:`render.esc`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from intima.leaderboard.render import esc, pct
from intima.results.paired import Difference, PairedBoard
from intima.results.table import OVERALL, ScoreRow, ScoreTable, dims_in

DIFFERENT = "different"
NO_DIFFERENCE = "no detectable difference"


def ten_thousandths(x: NDArray[np.float64]) -> list[int | None]:
    """Numbers as the site's data files hold them: whole ten-thousandths (None where NaN)."""
    scaled = np.round(np.asarray(x, dtype=np.float64) * 10_000)
    nan = np.isnan(scaled)
    out = np.where(nan, 0, scaled).astype(np.int64).tolist()
    return [None if m else v for v, m in zip(out, nan.tolist(), strict=True)] if nan.any() else out


def tenths(n: int, signed: bool = False) -> str:
    """Ten-thousandths as points to one decimal, half away from zero, in integers so that
    ``board.js`` (its ``tenths``) writes the very same text."""
    m = (abs(n) + 5) // 10  # tenths of a point
    sign = "-" if n < 0 and m else ("+" if signed and n > 0 and m else "")
    return f"{sign}{m // 10}.{m % 10}"


def points(x: float | None, signed: bool = True) -> str:
    """A difference in points, as the site shows it."""
    if x is None:
        return "–"
    n = ten_thousandths(np.array([x]))[0]
    return "–" if n is None else tenths(n, signed)


def verdict(d: Difference) -> str:
    return DIFFERENT if d.different else NO_DIFFERENCE


def compare_html(
    table: ScoreTable, paired: PairedBoard, scorer: str | None, metric: str, a: str, b: str
) -> str:
    """One row per scope (overall, then the dimensions, as on the site)."""
    if not scorer or scorer not in table.scorers:
        return "<p>No scores yet.</p>"
    labels = dict(table.configs)
    if a not in labels or b not in labels:
        return "<p>Choose two configurations.</p>"
    head = "".join(
        f"<th>{esc(h)}</th>"
        for h in (
            f"{metric.replace('_', ' ')} rate",
            f"A: {labels[a]}",
            f"B: {labels[b]}",
            "B − A [95%], points",
            "smallest detectable, points",
            "paired test",
        )
    )
    body = []
    dims = dims_in({r.scope for r in table.rows if not r.scope.startswith("code:")})
    for scope in [OVERALL, *dims]:
        ra, rb = table.get(scorer, a, scope, metric), table.get(scorer, b, scope, metric)
        if a == b:
            diff, mde, says, title = "–", "–", "the same configuration", ""
        else:
            d = paired.difference(scorer, a, b, scope, metric)
            if d.diff is None:
                diff, mde, says, title = "–", "–", "–", ""
            else:
                ends = "" if d.lo is None else f" [{points(d.lo)}, {points(d.hi)}]"
                diff = f'{points(d.diff)}<span class="ci">{esc(ends)}</span>'
                mde = points(d.mde, signed=False)
                says, title = verdict(d), f"over {d.n_common} prompts both answered"
        body.append(
            f'<tr data-scope="{esc(scope)}"><td>{esc("Overall" if scope == OVERALL else scope)}'
            f'</td>{_rate(ra)}{_rate(rb)}<td class="diff">{diff}</td><td class="mde">{mde}'
            f'</td><td class="verdict" title="{esc(title)}">{esc(says)}</td></tr>'
        )
    return (
        '<div class="intima-scroll"><table class="intima-scores" id="cmp-scores-table">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        '<p class="intima-note">B − A over the prompts both answered, with its paired 95% '
        "interval (the same prompts drawn for both); different only when it excludes 0; the "
        "smallest difference detectable with 80% power at alpha 0.05. See Methodology.</p>"
    )


def _rate(row: ScoreRow) -> str:
    if row.rate is None:
        return "<td>–</td>"
    return f'<td>{pct(row.rate)}<span class="ci"> [{pct(row.lo)}, {pct(row.hi)}]</span></td>'
