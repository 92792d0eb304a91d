"""The app's side-by-side numbers: two configurations' rates per scope, B − A with its paired
95% interval, the smallest difference the board detects, and whether the two differ.

The same rows and the same formatting as the static site's side-by-side (``board.js``
``compareTable``, which shows the numbers ``site._write_pairs`` precomputed); both come from
:class:`intima.results.paired.PairedBoard`. Labels go through :func:`render.esc`.
"""

from __future__ import annotations

from intima.leaderboard.render import esc, pct
from intima.results.paired import Difference, PairedBoard
from intima.results.table import OVERALL, ScoreRow, ScoreTable, dims_in

DIFFERENT = "different"
NO_DIFFERENCE = "no detectable difference"


def points(x: float | None) -> str:
    """A difference in points, signed, as the site shows it (rounded as its data files are)."""
    if x is None:
        return "–"
    v = 100 * round(x, 4)
    return ("+" if v > 0 else "") + f"{v:.1f}"


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
                mde = "–" if d.mde is None else f"{100 * round(d.mde, 4):.1f}"
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
