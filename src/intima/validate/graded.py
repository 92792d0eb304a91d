"""From scores and reference grades to a graded report: Spearman and Kendall of each scorer's
continuous reinforcing score against the grades, with bootstrap intervals, overall and per
group; for conversations, one grade per conversation against the mean (or max) of its turns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from intima.validate import correlation
from intima.validate.scorers import Scored
from intima.validate.store_io import Reference

Aggregate = Literal["mean", "max"]
AGGREGATES: Final[tuple[Aggregate, ...]] = ("mean", "max")


@dataclass(frozen=True, slots=True)
class Unit:
    """What one grade is compared with: a response, or a whole conversation."""

    grade: float
    score: float | None  # None: the scorer scored none of it
    groups: Mapping[str, str]


def evaluate_graded(
    refs: Sequence[Reference],
    scored: Mapping[str, Scored],
    by: Sequence[str] = (),
    *,
    aggregate: Aggregate = "mean",
    b: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """``{"kind": "graded", "unit", "n", "n_rows", "n_unscored", "groups": {...}}``; each
    group holds ``n``, ``n_scored``, ``spearman``/``kendall`` and their ``_lo``/``_hi``."""
    conversations = any(r.conversation is not None for r in refs)
    units = _conversations(refs, scored, aggregate) if conversations else _responses(refs, scored)
    groups: dict[str, list[Unit]] = {"overall": units}
    for column in by:
        for unit in units:
            value = unit.groups.get(column)
            if value is not None:
                groups.setdefault(f"{column}={value}", []).append(unit)
    return {
        "kind": "graded",
        "unit": "conversation" if conversations else "response",
        "aggregate": aggregate if conversations else None,
        "n": len(units),
        "n_rows": len(refs),
        "n_unscored": sum(1 for u in units if u.score is None),
        "groups": {name: _figures(items, b, seed) for name, items in groups.items()},
    }


def _responses(refs: Sequence[Reference], scored: Mapping[str, Scored]) -> list[Unit]:
    return [Unit(float(r.grade or 0.0), scored[r.response_id].reinforcing, r.groups) for r in refs]


def _conversations(
    refs: Sequence[Reference], scored: Mapping[str, Scored], aggregate: Aggregate
) -> list[Unit]:
    """One unit per conversation, in the order they first appear; its turns' scores are
    combined, leaving out the turns the scorer could not score."""
    turns: dict[str, list[Reference]] = {}
    for r in refs:
        turns.setdefault(str(r.conversation), []).append(r)
    units = []
    for rows in turns.values():
        values = [s for r in rows if (s := scored[r.response_id].reinforcing) is not None]
        score = None
        if values:
            score = max(values) if aggregate == "max" else sum(values) / len(values)
        units.append(Unit(float(rows[0].grade or 0.0), score, rows[0].groups))
    return units


def _figures(units: Sequence[Unit], b: int, seed: int) -> dict[str, Any]:
    pairs = [(u.score, u.grade) for u in units if u.score is not None]
    x = [p[0] for p in pairs]
    y = [p[1] for p in pairs]
    intervals = correlation.rank_intervals(x, y, b=b, seed=seed)
    out: dict[str, Any] = {"n": len(units), "n_scored": len(pairs)}
    for name, point in (
        ("spearman", correlation.spearman(x, y) if len(pairs) > 1 else None),
        ("kendall", correlation.kendall(x, y) if len(pairs) > 1 else None),
    ):
        interval = intervals[name] if point is not None else None
        out[name] = point
        out[f"{name}_lo"] = None if interval is None else interval[0]
        out[f"{name}_hi"] = None if interval is None else interval[1]
    return out
