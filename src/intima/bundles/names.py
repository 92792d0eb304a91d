"""How long a published name may be: every label and name the readers show (a run's label, its
model, a judge, a scorer, a validation set) has a limit, held by :mod:`intima.bundles.rules`
on import and by ``intima doctor``.

The board wraps each name in tables and charts, in time that grows about as the square of its
length: a bundle's 100,000-character label made ``board build --from`` spend minutes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from intima.core.labels import MAX_NAME_CHARS

#: (table, column) -> the most characters it may hold.
LENGTHS: Final[Mapping[tuple[str, str], int]] = {
    (table, column): MAX_NAME_CHARS
    for table, columns in {
        "runs": ("label", "model_spec", "provider", "model_name"),
        "judgments": ("judge_label", "judge_model", "judge_key"),
        "validation_reports": ("set_name", "scorer", "scorer_version"),
        "affect_scores": ("scorer_version",),
        "run_models": ("hub_id", "kind", "license"),
    }.items()
    for column in columns
}


def name_problem(table: str, column: str, value: Any) -> str | None:
    """Why ``value`` is too long for ``table.column``, or None (values of other types are the
    type checks' to name)."""
    longest = LENGTHS.get((table, column))
    if longest is None or not isinstance(value, str) or len(value) <= longest:
        return None
    return f"{column} is {len(value):,} characters; a name holds at most {longest:,}"
