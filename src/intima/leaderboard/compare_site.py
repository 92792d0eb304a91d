"""The side-by-side numbers as the static site keeps them: one data file per scorer and metric
(:func:`compare_chunk`) holding the empty tables (:func:`~.compare_view.frame`) and every
configuration's and ordered pair's fragments, rendered by the app's very functions
(:mod:`.compare_view`); ``board.js`` only picks a pair's fragments and swaps them in (50
configurations make 2,450 ordered pairs, so they are filled in bulk here, from
``PairedBoard.pair_matrix``, not pair by pair)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from intima.leaderboard.compare_view import (
    HEADLINE,
    ITSELF,
    PAIRED,
    SAME,
    by_config,
    frame,
    headline_cells,
    headline_pair,
    pair_cells,
    rate_cell,
    share_cell,
    tenth_points,
)
from intima.results.board import BoardView
from intima.results.prediction import PredictionRow


def compare_chunk(
    view: BoardView, scorer: str, metric: str, scopes: Sequence[str], columns: Mapping[str, Any]
) -> dict[str, Any]:
    """The site's data file for one scorer and metric: the empty :func:`~.compare_view.frame`, per
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
        "frame": frame(PAIRED, metric, scorer, scopes),
        "rates": rates,
        "pairs": pairs,
        "verdicts": list(verdicts),
        **({"headline": headline} if headline else {}),
    }


def _neg(x: int | None) -> int | None:
    return None if x is None else -x


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
