"""The side-by-side numbers as the static site keeps them: one data file per scorer and metric
(:func:`compare_chunk`) holding the empty tables (:func:`~.compare_view.frame`) and every
configuration's and ordered pair's fragments, rendered by the app's very functions
(:mod:`.compare_view`); ``board.js`` only picks a pair's fragments and swaps them in (50
configurations make 2,450 ordered pairs, so they are filled in bulk here, from
``PairedBoard.pair_matrix``, not pair by pair)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from intima.leaderboard.compare_view import (
    HEADLINE,
    ITSELF,
    PAIRED,
    SAME,
    by_config,
    frame,
    headline_cells,
    headline_pair,
    pair_columns,
    paired_verdict,
    rate_cell,
    share_cell,
)
from intima.leaderboard.tenths import tenth_array
from intima.results.board import BoardView
from intima.results.prediction import PredictionRow

if TYPE_CHECKING:
    from intima.results.paired import Pairs


def compare_chunk(
    view: BoardView, scorer: str, metric: str, scopes: Sequence[str], columns: Mapping[str, Any]
) -> dict[str, Any]:
    """The site's data file for one scorer and metric: the empty :func:`~.compare_view.frame`, per
    scope every configuration's :func:`rate_cell` (``rates``) and every ordered pair's
    :func:`~.compare_view.pair_columns` (``pairs``, A = i and B = j at ``i * n + j``; the
    verdict, :func:`~.compare_view.paired_verdict`, as an index into ``verdicts``, which
    repeat); for a judge on a sample, its headline shares compared
    (``headline``, :func:`headline_chunk`). ``columns``: per scope,
    ``PairedBoard.pair_matrix``'s ``Pairs`` for ``metric`` (i < j, row-major)."""
    table = view.table
    run_ids = [c for c, _ in table.configs]
    n = len(run_ids)
    verdicts: dict[str, int] = {}
    rates: dict[str, list[str]] = {}
    pairs: dict[str, list[tuple[Any, ...]]] = {}

    def add(cells: tuple[str, ...]) -> list[Any]:
        return [*cells[:3], verdicts.setdefault(cells[3], len(verdicts)), *cells[4:]]

    add(ITSELF)  # the same configuration's verdict first, as it always was
    for scope in scopes:
        rates[scope] = [rate_cell(table.get(scorer, c, scope, metric)) for c in run_ids]
        pp, ends, mde, says, count = pair_columns(*ordered_pairs(columns[scope], n))
        says[:: n + 1] = [SAME] * n  # a configuration and itself (ITSELF)
        keys = list(zip(says, count, strict=True))
        verdict = {
            key: verdicts.setdefault(
                SAME if key[0] == SAME else paired_verdict(*key), len(verdicts)
            )
            for key in dict.fromkeys(keys)  # in order of first appearance
        }
        pairs[scope] = list(zip(pp, ends, mde, map(verdict.__getitem__, keys), count, strict=True))
    own = [r for r in view.prediction if r.judge == scorer and r.metric == metric]
    headline = headline_chunk(own, scorer, metric, scopes, run_ids, add)
    return {
        "frame": frame(PAIRED, metric, scorer, scopes),
        "rates": rates,
        "pairs": pairs,
        "verdicts": list(verdicts),
        **({"headline": headline} if headline else {}),
    }


def ordered_pairs(p: Pairs, n: int) -> tuple[NDArray[np.float64], ...]:
    """Every ordered pair's numbers in whole tenths (:func:`pair_columns`' arguments), A = i
    and B = j at ``i * n + j``, from ``p``'s pairs i < j (row-major): A and B swapped, the
    same interval negated (rounded once, so the two read as each other's negation); NaN on
    the diagonal."""
    upper = np.triu_indices(n, 1)

    def square(there: NDArray[Any], back: NDArray[Any]) -> NDArray[np.float64]:
        out = np.full((n, n), np.nan)
        out[upper], out[upper[::-1]] = there, back
        return out.ravel()

    d, lo, hi, mde = (tenth_array(getattr(p, k)) for k in ("diff", "lo", "hi", "mde"))
    return (square(d, -d), square(lo, -hi), square(hi, -lo), square(mde, mde),
            square(p.different, p.different), square(p.n_common, p.n_common))  # fmt: skip


def headline_chunk(
    rows: Sequence[PredictionRow],
    judge: str,
    metric: str,
    scopes: Sequence[str],
    run_ids: Sequence[str],
    add: Callable[[tuple[str, ...]], list[Any]],
) -> dict[str, Any] | None:
    """The site's headline comparison for ``judge`` (``rows``: its rows of ``metric``): the
    empty :func:`~.compare_view.frame`, per scope each configuration's :func:`share_cell` and each
    ordered pair's :func:`headline_cells` (through ``add``, which indexes the verdicts); None
    without a share."""
    if not rows:
        return None
    index = by_config(rows)
    shares, pairs = {}, {}
    for scope in scopes:
        shares[scope] = [share_cell(index.get((c, scope))) for c in run_ids]
        pairs[scope] = [
            add(headline_cells(headline_pair(index, a, b, scope)) if i != j
                else ("–", "", "–", SAME))
            for i, a in enumerate(run_ids)
            for j, b in enumerate(run_ids)
        ]  # fmt: skip
    return {"frame": frame(HEADLINE, metric, judge, scopes), "rates": shares, "pairs": pairs}
