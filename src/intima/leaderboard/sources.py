"""Adapters from other scorers' stored tables to RatingSets (scorer ``affect``).

The affect measure is owned by :mod:`intima.affect`; if it exposes ``load_rating_sets`` we use
it, otherwise we read its stored table directly (``level`` per response and category).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from intima.ratings import Level, RatingSet, primary_label
from intima.store import Store
from intima.taxonomy import Behaviour

AFFECT_SCORER = "affect"
_AFFECT_TABLES = ("affect_scores",)


def _affect_api() -> Any | None:
    for name in ("intima.affect.store", "intima.affect.store_io", "intima.affect"):
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        if hasattr(mod, "load_rating_sets"):
            return mod
    return None


def _table(store: Store) -> str | None:
    names = {r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return next((t for t in _AFFECT_TABLES if t in names), None)


def affect_version() -> str | None:
    try:
        from intima.affect.config import SCORER_VERSION
    except ModuleNotFoundError:
        return None
    return str(SCORER_VERSION)


def affect_rating_sets(store: Store, run_ids: Sequence[str]) -> list[RatingSet]:
    api = _affect_api()
    if api is not None:
        sets = api.load_rating_sets(store, list(run_ids))
        return [s for s in sets if s.scorer.startswith(AFFECT_SCORER)]
    table = _table(store)
    if table is None:
        return []
    return _from_table(store, table)


def _from_table(store: Store, table: str) -> list[RatingSet]:
    """One RatingSet per response from rows (response_id, category, level[, status])."""
    cols = {r[1] for r in store.query(f"PRAGMA table_info({table})")}
    status_col = "status" if "status" in cols else "'scored'"
    rows = store.query(f"SELECT response_id, category, level, {status_col} AS st FROM {table}")
    levels: dict[str, dict[str, Level]] = {}
    unscored: set[str] = set()
    for r in rows:
        if r["st"] != "scored" or r["level"] is None:
            unscored.add(r["response_id"])
            continue
        level = r["level"]
        parsed = Level(level) if isinstance(level, int) else Level.parse(str(level))
        levels.setdefault(r["response_id"], {})[r["category"]] = parsed
    out = []
    for rid, lv in levels.items():
        has_top = all(str(b) in lv for b in Behaviour)
        out.append(
            RatingSet(
                scorer=AFFECT_SCORER,
                response_id=rid,
                status="scored",
                levels=lv,
                primary=primary_label(lv) if has_top else None,
            )
        )
    out += [
        RatingSet(scorer=AFFECT_SCORER, response_id=rid, status="unscored", reason="affect failed")
        for rid in sorted(unscored - set(levels))
    ]
    return out
