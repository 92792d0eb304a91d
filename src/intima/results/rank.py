"""Ranking configurations on one column, with ties where the intervals overlap, and no rank
for rows with too little data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from intima.results.intervals import MIN_N, MIN_SHARE, rankable
from intima.results.table import ScoreRow

#: Shown in place of a rank for a row with too little data to rank (see :func:`is_rankable`).
UNRANKED = "–"
UNRANKED_NOTE = (
    f"not ranked: fewer than {MIN_N} scored responses, or scored on less than "
    f"{MIN_SHARE:.0%} of this scope's prompts"
)


class Ranked(NamedTuple):
    run_id: str
    rank: int | None  # 1-based rank of the group's first member (1, 1, 3); None: not ranked
    tied: bool  # shares its rank with at least one other configuration


def is_rankable(row: ScoreRow) -> bool:
    """A row gets a rank only with a rate, at least ``MIN_N`` scored responses, and coverage of
    at least ``MIN_SHARE`` of its scope's prompts (``n_scope``; 0 means unknown: n alone)."""
    if row.rate is None or row.n <= 0:
        return False
    return rankable(row.n, row.n_scope or row.n)


def rank_groups(rows: Sequence[ScoreRow]) -> list[Ranked]:
    """Rank configurations on one column (highest rate first), with ties by overlapping CIs.

    Rule: only rankable rows (:func:`is_rankable`) are ranked; the rest follow, unranked
    (shown, marked, never given a rank; n = 0 included). Rankable rows are sorted by rate,
    highest first. The first opens a group. Each next row joins the current group if its
    interval overlaps the interval of the group's *first* member (lo of the leader <= hi of
    the candidate, both inclusive); otherwise it opens a new group. Every member of a group gets
    the 1-based position of the group's first member as its rank. Comparing with the leader
    rather than with the previous row stops long chains of small overlaps from tying the top of
    the board with the bottom.
    """
    scored = sorted(
        (r for r in rows if is_rankable(r)),
        key=lambda r: (-(r.rate or 0.0), r.label, r.run_id),
    )
    out: list[Ranked] = []
    group: list[ScoreRow] = []
    group_rank = 0

    def flush() -> None:
        for member in group:
            out.append(Ranked(member.run_id, group_rank, len(group) > 1))

    for pos, row in enumerate(scored, start=1):
        if group and _overlap(group[0], row):
            group.append(row)
            continue
        flush()
        group, group_rank = [row], pos
    flush()
    ranked = {r.run_id for r in out}
    out += [Ranked(r.run_id, None, False) for r in rows if r.run_id not in ranked]
    return out


def _overlap(a: ScoreRow, b: ScoreRow) -> bool:
    if a.lo is None or a.hi is None or b.lo is None or b.hi is None:
        return False
    return a.lo <= b.hi and b.lo <= a.hi


def format_rank(r: Ranked) -> str:
    if r.rank is None:
        return UNRANKED
    return f"={r.rank}" if r.tied else str(r.rank)
