"""Ranking configurations on one column, with ties from rank intervals, and no rank for rows
with too little data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from intima.results.intervals import MIN_N, MIN_SHARE, rankable
from intima.results.table import ScoreRow

#: Shown in place of a rank for a row with too little data to rank (see :func:`is_rankable`).
UNRANKED = "–"
UNRANKED_NOTE = (
    f"not ranked: fewer than {MIN_N} scored responses, or scored on less than "
    f"{MIN_SHARE:.0%} of this scope's prompts"
)
#: How ties are made, in one sentence (the pages' headers and methodology).
TIES_NOTE = (
    "'=' marks a tie: the configuration's rank interval (2.5–97.5% of its rank over the "
    "bootstrap replicates) reaches the rank of its group's leader"
)


#: What a rank interval promises, said beside the ranks (``benchmarks/bench_paired.py``).
PER_CONFIGURATION_NOTE = (
    "a rank's [low–high] is its 95% rank interval for that configuration alone: each holds "
    "its own true rank at least 95% of the time, but on a board of many close configurations "
    "not every rank at once"
)


class Ranked(NamedTuple):
    run_id: str
    rank: int | None  # 1-based rank of the group's first member (1, 1, 3); None: not ranked
    tied: bool  # shares its rank with at least one other configuration
    lo: int | None = None  # rank interval (see intima.results.paired.rank_intervals)
    hi: int | None = None


def is_rankable(row: ScoreRow) -> bool:
    """A row gets a rank only with a rate, at least ``MIN_N`` scored responses, and coverage of
    at least ``MIN_SHARE`` of its scope's prompts (``n_scope``; 0 means unknown: n alone)."""
    if row.rate is None or row.n <= 0:
        return False
    return rankable(row.n, row.n_scope or row.n)


def rank_groups(rows: Sequence[ScoreRow], intervals: Mapping[str, tuple[int, int]]) -> list[Ranked]:
    """Rank configurations on one column (highest rate first), with ties from rank intervals.

    Rule: only rankable rows (:func:`is_rankable`) are ranked; the rest follow, unranked
    (shown, marked, never given a rank; n = 0 included). Rankable rows are sorted by rate,
    highest first. The first opens a group. Each next row joins the current group if its rank
    interval (``intervals[run_id]``: low and high rank over the bootstrap replicates, which
    always holds the row's own position) reaches the position of the group's *first* member;
    otherwise it opens a new group. Every member of a group gets the 1-based position of the
    group's first member as its rank, which therefore always lies in its rank interval.
    Comparing with the leader rather than with the previous row stops long chains from tying
    the top of the board with the bottom. A row without an interval is never tied.
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
            lo, hi = intervals.get(member.run_id, (None, None))
            out.append(Ranked(member.run_id, group_rank, len(group) > 1, lo, hi))

    for pos, row in enumerate(scored, start=1):
        interval = intervals.get(row.run_id)
        if group and interval is not None and interval[0] <= group_rank:
            group.append(row)
            continue
        flush()
        group, group_rank = [row], pos
    flush()
    ranked = {r.run_id for r in out}
    out += [Ranked(r.run_id, None, False) for r in rows if r.run_id not in ranked]
    return out


def unranked_reason(row: ScoreRow) -> str:
    """Why ``row`` has no rank, in a few words for beside its "–" (:func:`is_rankable`'s rule,
    row by row: the page's note says the rule, this says which part the row misses)."""
    if row.rate is None or row.n <= 0:
        return "not ranked: no scored responses"
    if row.n < MIN_N:
        return f"not ranked: {row.n} scored, under {MIN_N}"
    return f"not ranked: scored on {row.n} of {row.n_scope} prompts, under {MIN_SHARE:.0%}"


def format_rank(r: Ranked) -> str:
    if r.rank is None:
        return UNRANKED
    return f"={r.rank}" if r.tied else str(r.rank)


def format_rank_interval(r: Ranked) -> str:
    """ "1–3" (or "2" when it is one rank); "" without an interval."""
    if r.lo is None or r.hi is None:
        return ""
    return str(r.lo) if r.lo == r.hi else f"{r.lo}–{r.hi}"
