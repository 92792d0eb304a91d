"""Adapters from other scorers' stores to what the leaderboard reads.

The affect measure (:mod:`intima.affect`) stores one row per (response, category, scorer
version, config key). The board shows one affect configuration: the default settings if the
store holds scores under them, else the most recently written configuration. Its levels come
through :func:`intima.affect.store_io.affect_rating_sets` (scorer ``affect``); its factor
breakdown is read straight from the table for the response explorer.
"""

from __future__ import annotations

from typing import Any, Final

from intima.core.ratings import RatingSet
from intima.store import Store

AFFECT_SCORER: Final = "affect"
#: Columns of the breakdown, in display order (the proposal's symbols, lower-cased).
AFFECT_FACTORS: Final = ("measure", "sp", "els", "ssl", "dm", "ef", "em", "lr", "nf", "ci", "w")


def _affect_config(store: Store) -> Any | None:
    """The AffectConfig to show, or None when the store has no affect scores."""
    try:
        from intima.affect.config import SCORER_VERSION, AffectConfig
    except ModuleNotFoundError:  # the affect extra is not installed
        return None
    rows = store.query(
        "SELECT config_key, MIN(config_json) AS cfg, MAX(created_at) AS last FROM affect_scores "
        "WHERE scorer_version = ? GROUP BY config_key ORDER BY last DESC",
        (SCORER_VERSION,),
    )
    if not rows:
        return None
    default = AffectConfig()
    if any(r["config_key"] == default.key for r in rows):
        return default
    for r in rows:
        cfg = AffectConfig.model_validate_json(r["cfg"])
        if cfg.key == r["config_key"]:  # only a config that reproduces its own key
            return cfg
    return None


def affect_version() -> str | None:
    try:
        from intima.affect.config import SCORER_VERSION
    except ModuleNotFoundError:
        return None
    return str(SCORER_VERSION)


def affect_rating_sets(store: Store) -> list[RatingSet]:
    cfg = _affect_config(store)
    if cfg is None:
        return []
    from intima.affect.store_io import affect_rating_sets as load

    return load(store, cfg)


def affect_breakdown(store: Store) -> dict[str, list[list[Any]]]:
    """response_id -> rows [category, level, measure, SP, ELS, SSL, DM, EF, EM, LR, NF, CI, w]."""
    cfg = _affect_config(store)
    if cfg is None:
        return {}
    from intima.affect.config import SCORER_VERSION

    cols = ", ".join(AFFECT_FACTORS)
    out: dict[str, list[list[Any]]] = {}
    for r in store.query(
        f"SELECT response_id, category, level, {cols} FROM affect_scores "
        "WHERE scorer_version = ? AND config_key = ? ORDER BY rowid",
        (SCORER_VERSION, cfg.key),
    ):
        out.setdefault(r[0], []).append(list(r[1:]))
    return out
