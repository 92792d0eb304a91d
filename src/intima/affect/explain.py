"""Why a response scored as it did: the factors, the evidence behind SSL and NF, the result.

``explain`` turns a :class:`ResponseScore` into plain data (for the leaderboard and notebooks);
``render`` turns that into text for a terminal. Neither recomputes anything.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from intima.affect.config import group_of
from intima.affect.features import ContextualIntensity
from intima.affect.measure import CategoryScore, ResponseScore
from intima.affect.phrases import NF_FAMILIES
from intima.core.taxonomy import CATEGORIES

FACTORS = ("sp", "els", "ssl", "dm", "ef", "em", "lr", "nf", "ci", "w")


class CategoryExplanation(BaseModel):
    model_config = ConfigDict(frozen=True)

    category: str
    measure: float
    level: str
    factors: dict[str, float]
    formula: str  # the formula with this row's numbers filled in
    via: str | None
    logit: float  # the behaviour head's logit z: SSL of the behaviour is sigmoid(z)
    share: float  # the sub-behaviour's share of its behaviour's SSL
    retraction: float  # r: SSL * (1 - NF) = sigmoid(z - r)
    retracting: dict[str, list[str]]  # the phrases behind NF, by family


class Explanation(BaseModel):
    model_config = ConfigDict(frozen=True)

    response_id: str
    scorer_version: str
    config_key: str
    n_words: int
    intensity: ContextualIntensity
    families: dict[str, int]
    categories: list[CategoryExplanation]


def explain_category(row: CategoryScore, phrases: dict[str, list[str]]) -> CategoryExplanation:
    factors = {name: float(getattr(row, name)) for name in FACTORS}
    formula = (
        f"({row.sp:.3f}*{row.els:.3f}*{row.ssl:.3f}) * ({row.dm:.3f}*{row.ef:.3f}*{row.em:.3f}"
        f"*{row.lr:.3f}) * (1-{row.nf:.3f}) + {row.ci:.3f}*{row.w:.3f} = {row.measure:.4f}"
    )
    families = NF_FAMILIES[group_of(row.category)]
    return CategoryExplanation(
        category=row.category,
        measure=row.measure,
        level=row.level,
        factors=factors,
        formula=formula,
        via=row.via,
        logit=row.logit,
        share=row.share,
        retraction=row.retraction,
        retracting={f: phrases[f] for f in families if f in phrases},
    )


def explain(score: ResponseScore, categories: Sequence[str] | None = None) -> Explanation:
    wanted = list(categories) if categories else list(CATEGORIES)
    unknown = set(wanted) - set(score.scores)
    if unknown:
        raise KeyError(f"unknown categories {sorted(unknown)}; choose from {list(CATEGORIES)}")
    return Explanation(
        response_id=score.response_id,
        scorer_version=score.scorer_version,
        config_key=score.config_key,
        n_words=score.n_words,
        intensity=score.intensity,
        families=score.families,
        categories=[explain_category(score.scores[c], score.phrases) for c in wanted],
    )


def render(explanation: Explanation) -> str:
    """Plain text (no markup), one block per category."""
    ci = explanation.intensity
    cues = f"; cues: {', '.join(ci.cues)}" if ci.cues else ""
    found = ", ".join(f"{k} {v}" for k, v in explanation.families.items() if v) or "none"
    lines = [
        f"response {explanation.response_id}  (scorer {explanation.scorer_version}, "
        f"config {explanation.config_key}, {explanation.n_words} words)",
        f"CI = {ci.ci:.3f}  (negativity {ci.negativity:.2f}, negative emotion "
        f"{ci.negative_emotion:.2f}, vulnerability {ci.vulnerability:.2f}{cues})",
        f"phrase families found: {found}",
    ]
    for cat in explanation.categories:
        lines.append("")
        via = f" (from {cat.via})" if cat.via else ""
        lines.append(f"{cat.category}: {cat.measure:.3f} -> {cat.level}{via}")
        lines.append("  " + cat.formula)
        lines.append(
            f"  SSL = sigmoid(head logit {cat.logit:+.2f}) * share {cat.share:.3f}; "
            f"NF from retracting evidence r = {cat.retraction:.2f}"
        )
        for family, hits in cat.retracting.items():
            lines.append(f"    NF phrases ({family}): {', '.join(repr(h) for h in hits)}")
    return "\n".join(lines)
