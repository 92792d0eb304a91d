"""The affect measure: intima's second, offline scorer (no LLM, no network, deterministic).

    measure = (SP * ELS * SSL) * (DM * EF * EM * LR) * (1 - NF) + CI * w

per response and category, every factor stored and explained. See ``docs/affect.md``.
Importing this package is cheap: the lexicons and the embedding model load on first use.
"""

from intima.affect.config import LEVELS, SCORER_VERSION, AffectConfig, Level, Thresholds
from intima.affect.measure import (
    AffectInput,
    AffectScorer,
    CategoryScore,
    ResponseScore,
    score_texts,
)

__all__ = [
    "LEVELS",
    "SCORER_VERSION",
    "AffectConfig",
    "AffectInput",
    "AffectScorer",
    "CategoryScore",
    "Level",
    "ResponseScore",
    "Thresholds",
    "score_texts",
]
