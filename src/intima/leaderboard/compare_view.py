"""The side-by-side numbers, rendered once for the app and the site: two configurations' rates
per scope, B − A with its paired 95% interval, the smallest difference the board detects, and
whether the two differ (all from :class:`intima.results.paired.PairedBoard`).

:func:`comparison` is what two configurations' side-by-side holds (the paired rates and, for a
judge on a sample, its headline shares: each a :class:`Kind` of table, declared once), for the
app, the site and ``intima compare`` alike. :func:`frame` is a table with a slot (a cell, or
the span of a name) for each number; :meth:`Side.html`, :func:`pair_columns` and
:func:`paired_verdict` render what goes in the slots. The app's :func:`compare_html` puts
them in place here; the site's data files (:mod:`.compare_site`, one per scorer and metric)
hold the empty frame and every slot's fragment, and ``board.js`` only picks a pair's
fragments and swaps them in. Every fragment is a :class:`markupsafe.Markup`: labels go in
only as escaped arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import numpy as np
from markupsafe import Markup
from numpy.typing import NDArray

from intima.leaderboard.render import pct
from intima.leaderboard.tenths import high_end, low_end, signed_tenths, tenth_points, tenths, texts
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


def verdict(d: Difference) -> str:
    if d.too_few:
        return TOO_FEW
    return DIFFERENT if d.different else NO_DIFFERENCE


def scope_name(scope: str) -> str:
    return "Overall" if scope == OVERALL else scope


def rate_cell(row: ScoreRow) -> Markup:
    """What one configuration's rate slot holds: the rate and its 95% interval."""
    return Side(row.rate, row.lo, row.hi).html()


#: A rate (or a share) and its 95% interval (``%``: the site's side-by-side files hold 18,000).
_RATE = Markup('<span class="rate">%s</span><span class="ci"> [%s, %s]</span>')


def _ends(lo: int | None, hi: int | None) -> str:
    return "" if lo is None or hi is None else f" [{tenths(lo, True)}, {tenths(hi, True)}]"


def pair_texts(
    diff: int | None, lo: int | None, hi: int | None, mde: int | None, different: bool, n: int
) -> tuple[str, str, str, str, str]:
    """A pair's numbers (in tenths of a point, :func:`tenth_points`) as the side-by-side
    and ``intima compare`` print them (:func:`pair_columns` of the one pair)."""
    d, low, high, m = (
        np.array([np.nan if x is None else x], dtype=np.float64) for x in (diff, lo, hi, mde)
    )
    cols = pair_columns(d, low, high, m, np.array([different]), np.array([n]))
    pp, ends, shown, says, count = (c[0] for c in cols)
    return pp, ends, shown, says, count


def pair_columns(
    diff: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    mde: NDArray[np.float64],
    different: NDArray[Any],
    n: NDArray[Any],
) -> tuple[list[str], list[str], list[str], list[str], list[str]]:
    """Pairs' numbers (whole tenths of a point, NaN: none; :func:`tenth_array`) as the
    side-by-side and ``intima compare`` print them, column by column: B − A, its 95%
    interval, the smallest detectable difference (never above 100 points: "over 100"), the
    verdict and the judged pairs. Under :data:`MIN_JUDGED_PAIRS` judged pairs: no number and
    no verdict, "too few judged pairs". Each distinct number is formatted once: the site
    writes 50 x 49 ordered pairs per scope, scorer and metric."""
    pp = texts(diff, signed_tenths)
    ends = texts(lo, low_end) + texts(hi, high_end)  # " [lo, " + "hi]": one addition per pair
    ends[np.isnan(lo) | np.isnan(hi)] = ""
    shown = texts(mde, tenths)
    shown[np.nan_to_num(mde) >= 1000] = "over 100"
    says = np.where(different, DIFFERENT, NO_DIFFERENCE).astype(object)
    few, none = n < MIN_JUDGED_PAIRS, np.isnan(diff)
    for column, blank in ((pp, "–"), (ends, ""), (shown, "–"), (says, "–")):
        column[few | none] = blank
    says[few] = TOO_FEW
    return pp.tolist(), ends.tolist(), shown.tolist(), says.tolist(), texts(n, str).tolist()


def difference_texts(d: Difference) -> tuple[str, str, str, str, str]:
    """:func:`pair_texts` of one :class:`~intima.results.paired.Difference`."""
    x, lo, hi, mde = tenth_points(np.array([d.diff, d.lo, d.hi, d.mde], dtype=float))
    return pair_texts(x, lo, hi, mde, d.different, d.n_common)


def _verdict_html(says: str, title: str) -> Markup:
    kind = {DIFFERENT: "different", NO_DIFFERENCE: "same"}.get(says, "none")
    return Markup('<span class="{}" title="{}">{}</span>').format(kind, title, says)


@lru_cache(maxsize=4096)
def paired_verdict(says: str, count: str) -> Markup:
    """The paired verdict's fragment (its tooltip: how many judged pairs): built once per
    verdict and count (a few hundred on a board), not once per pair."""
    return _verdict_html(says, PAIRED.verdict_tip(count))


@dataclass(frozen=True)
class Column:
    """A column of a side-by-side table after the scope and the two configurations' numbers:
    its head, its tooltip and its cells' class (which ``board.js`` fills by)."""

    head: str
    tip: str
    cls: str


@dataclass(frozen=True)
class Kind:
    """One of the side-by-side's two tables, declared once for the app, the site and
    ``intima compare``: the paired rates (:data:`PAIRED`) and, for a judge on a sample, its
    headline shares (:data:`HEADLINE`)."""

    table_id: str
    first: Callable[[str, str], str]  #: the first column's head, of (metric, scorer)
    columns: tuple[Column, ...]
    note: Callable[[str], str]  #: under the table, of the scorer
    verdict_tip: Callable[[str], str]  #: the verdict's tooltip, of the count
    note_id: str = ""

    def title(self, metric: str, scorer: str, label_a: str, label_b: str) -> str:
        """The table's title in ``intima compare``: what it compares, whose, and who is who."""
        first = self.first(metric, scorer)
        whose = "" if scorer in first else f", {scorer}"
        return f"{first}{whose}: B − A (B = {label_b}, A = {label_a})"


_DIFF = Column("B − A [95%], points", "B − A over the judged pairs, with its paired 95% interval "
               "(the same prompts drawn for both)", "diff")  # fmt: skip
PAIRED: Final = Kind(
    "cmp-scores-table",
    lambda metric, scorer: f"{metric.replace('_', ' ')} rate",
    (
        _DIFF,
        Column("smallest detectable, points", "The smallest difference this board detects for "
               "this pair with 80% power at alpha 0.05", "mde"),
        Column("paired test", "'different' only when the paired interval excludes 0", "verdict"),
        Column("judged pairs", "Prompts both configurations answered and were scored on", "pairs"),
    ),
    lambda scorer: NOTE,
    lambda n: f"over {n} judged pairs (prompts both configurations were scored on)",
    note_id="cmp-note",
)  # fmt: skip


@dataclass(frozen=True)
class Side:
    """One configuration's number in one scope: a share and its 95% interval, or why none."""

    value: float | None
    lo: float | None
    hi: float | None
    why: str = ""

    def html(self) -> Markup:
        if self.value is None:  # why, as a tooltip: the row's verdict and count say it short
            if not self.why:
                return Markup("–")
            return Markup('<span class="why" title="{}">–</span>').format(self.why)
        return _RATE % (pct(self.value), pct(self.lo), pct(self.hi))

    def text(self) -> str:
        """As ``intima compare`` prints it."""
        return "–" if self.value is None else f"{pct(self.value)} [{pct(self.lo)}, {pct(self.hi)}]"


@dataclass(frozen=True)
class Row:
    """One scope of a side-by-side table: A's and B's numbers (None: no row), then the texts
    of the kind's columns (the difference as two: B − A and its interval)."""

    scope: str
    a: Side | None
    b: Side | None
    texts: tuple[str, ...]


def frame(
    kind: Kind,
    metric: str,
    scorer: str,
    scopes: Sequence[str],
    label_a: str = "",
    label_b: str = "",
    slots: Mapping[str, tuple[str, ...]] | None = None,
) -> Markup:
    """A side-by-side table, one row per scope; ``slots``: per scope, A's and B's numbers as
    markup (:meth:`Side.html`), then the texts of ``kind``'s columns, the verdict as markup
    (:func:`paired_verdict`, :func:`headline_cells`); empty without (the site fills them in)."""
    tips = Markup("").join(
        Markup('<th title="{}">{}</th>').format(c.tip, c.head)
        if c.tip
        else Markup("<th>{}</th>").format(c.head)
        for c in kind.columns
    )
    head = Markup(
        '<th>{}</th><th>A: <span class="label-a">{}</span></th>'
        '<th>B: <span class="label-b">{}</span></th>{}'
    ).format(kind.first(metric, scorer), label_a, label_b, tips)
    body = []
    for scope in scopes:
        ra, rb, pp, ends, *rest = (slots or {}).get(scope, ("",) * (len(kind.columns) + 3))
        cells = Markup("").join(
            _VERDICT_CELL.format(text) if c.cls == "verdict" else _NUM_CELL.format(c.cls, text)
            for c, text in zip(kind.columns[1:], rest, strict=True)
        )
        body.append(_ROW.format(scope, scope_name(scope), ra, rb, pp, ends, cells))
    note_id = Markup(' id="{}"').format(kind.note_id) if kind.note_id else Markup()
    return Markup(
        '<div class="intima-scroll"><table class="intima-scores intima-compare" '
        'id="{}"><thead><tr>{}</tr></thead><tbody>{}</tbody>'
        '</table></div><p class="intima-note"{}>{}</p>'
    ).format(kind.table_id, head, Markup("").join(body), note_id, kind.note(scorer))


_VERDICT_CELL = Markup('<td class="verdict">{}</td>')
_NUM_CELL = Markup('<td class="num {}">{}</td>')
#: One scope's row of a side-by-side table: its name, A's and B's numbers, B − A, the rest.
_ROW = Markup(
    '<tr data-scope="{}"><td>{}</td>'
    '<td class="num rate-a">{}</td><td class="num rate-b">{}</td>'
    '<td class="num diff"><span class="pp">{}</span><span class="ci">{}</span></td>{}</tr>'
)


def comparison(
    view: BoardView, scorer: str, metric: str, a: str, b: str, scopes: Sequence[str]
) -> list[tuple[Kind, list[Row]]]:
    """``a`` and ``b`` (run ids) side by side on ``view``'s board: the paired rates per scope,
    then, when ``scorer`` is a judge with a share of both in its sample, its headline shares
    (overall and per dimension); the app, the site's explorer and ``intima compare`` show
    these."""
    table, out = view.table, []
    paired = []
    for scope in scopes:
        ra, rb = (table.get(scorer, c, scope, metric) for c in (a, b))
        d = None if a == b else view.paired.difference(scorer, a, b, scope, metric)
        cells = ITSELF if d is None else difference_texts(d)
        paired.append(Row(scope, Side(ra.rate, ra.lo, ra.hi), Side(rb.rate, rb.lo, rb.hi), cells))
    out.append((PAIRED, paired))
    index = by_config([r for r in view.prediction if r.judge == scorer and r.metric == metric])
    dims = [s for s in scopes if not s.startswith("code:")]
    if any((a, s) in index for s in dims) and any((b, s) in index for s in dims):
        rows = []
        for s in dims:
            pp, ends, count, says = (
                headline_texts(headline_pair(index, a, b, s)) if a != b else ("–", "", "–", SAME)
            )
            texts = (pp, ends, says, count)  # in the table's order of columns
            rows.append(Row(s, _share(index.get((a, s))), _share(index.get((b, s))), texts))
        out.append((HEADLINE, rows))
    return out


def compare_html(
    view: BoardView, scorer: str | None, metric: str, a: str, b: str, scopes: Sequence[str] = ()
) -> Markup:
    """The app's side-by-side (:func:`comparison`): one row per scope (``scopes``: overall,
    then the dimensions), then, for a judge on a sample, its headline shares compared."""
    if not scorer or scorer not in view.table.scorers:
        return Markup("<p>No scores yet.</p>")
    labels = dict(view.table.configs)
    if a not in labels or b not in labels:
        return Markup("<p>Choose two configurations.</p>")
    out = []
    for kind, rows in comparison(view, scorer, metric, a, b, scopes):
        slots = {}
        for r in rows:
            *texts, says, count = r.texts
            verdict = _verdict_html(says, kind.verdict_tip(count))
            cell = [s.html() if s else Markup("–") for s in (r.a, r.b)]
            slots[r.scope] = (*cell, *texts, verdict, count)
        out.append(
            frame(kind, metric, scorer, [r.scope for r in rows], labels[a], labels[b], slots)
        )
    return Markup("").join(out)


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


HEADLINE: Final = Kind(
    "cmp-headline-table",
    lambda metric, judge: f"{metric} share as {judge} would label every response",
    (
        Column(_DIFF.head, "", "diff"),
        Column("test", "", "verdict"),
        Column("judged responses, A / B", "Responses the judge labelled in A / in B (its "
               "random samples)", "pairs"),
    ),
    headline_note,
    lambda count: f"judged responses of A / B: {count}",
)  # fmt: skip


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
    return pp, ends, count, _verdict_html(says, HEADLINE.verdict_tip(count))


def _share(r: PredictionRow | None) -> Side | None:
    if r is None:
        return None
    return Side(r.estimate, r.lo, r.hi, r.note if r.estimate is None else "")


def share_cell(r: PredictionRow | None) -> Markup:
    """One configuration's headline share and its 95% interval, or why there is none."""
    side = _share(r)
    return Markup("–") if side is None else side.html()


def headline_pair(
    rows: Mapping[tuple[str, str], PredictionRow], a: str, b: str, scope: str
) -> HeadlineDifference | None:
    ra, rb = rows.get((a, scope)), rows.get((b, scope))
    return None if ra is None or rb is None else headline_difference(ra, rb)


def by_config(rows: Sequence[PredictionRow]) -> dict[tuple[str, str], PredictionRow]:
    return {(r.run_id, r.scope): r for r in rows}
