"""Why a response scored as it did: the factors, the sentences behind SSL and NF, the result.

``explain`` turns a :class:`ResponseScore` into plain data (for the leaderboard and notebooks);
``render`` turns that into text for a terminal. Neither recomputes anything.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from intima.affect.factors import ContextualIntensity
from intima.affect.measure import CategoryScore, NegatedSentence, ResponseScore
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
    ssl_sentence: str | None  # the driver sentence: it set SSL (and SP, ELS, DM, EF, EM)
    ssl_exemplar: str | None  # its nearest exemplar
    cosine: float
    compound: float
    supporting: list[str]  # sentences counted by LR
    negated: list[NegatedSentence]  # sentences whose cues went against the category (NF)


class Explanation(BaseModel):
    model_config = ConfigDict(frozen=True)

    response_id: str
    scorer_version: str
    config_key: str
    intensity: ContextualIntensity
    categories: list[CategoryExplanation]


def explain_category(row: CategoryScore, sentences: Sequence[str]) -> CategoryExplanation:
    factors = {name: float(getattr(row, name)) for name in FACTORS}
    formula = (
        f"({row.sp:.3f}*{row.els:.3f}*{row.ssl:.3f}) * ({row.dm:.3f}*{row.ef:.3f}*{row.em:.3f}"
        f"*{row.lr:.3f}) * (1-{row.nf}) + {row.ci:.3f}*{row.w:.3f} = {row.measure:.4f}"
    )
    return CategoryExplanation(
        category=row.category,
        measure=row.measure,
        level=row.level,
        factors=factors,
        formula=formula,
        via=row.via,
        ssl_sentence=row.sentence_text,
        ssl_exemplar=row.exemplar,
        cosine=row.cosine,
        compound=row.compound,
        supporting=[sentences[i] for i in row.supporting if i < len(sentences)],
        negated=list(row.negated),
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
        intensity=score.intensity,
        categories=[explain_category(score.scores[c], score.sentences) for c in wanted],
    )


def render(explanation: Explanation) -> str:
    """Plain text (no markup), one block per category."""
    ci = explanation.intensity
    cues = f"; cues: {', '.join(ci.cues)}" if ci.cues else ""
    lines = [
        f"response {explanation.response_id}  (scorer {explanation.scorer_version}, "
        f"config {explanation.config_key})",
        f"CI = {ci.ci:.3f}  (negativity {ci.negativity:.2f}, negative emotion "
        f"{ci.negative_emotion:.2f}, vulnerability {ci.vulnerability:.2f}{cues})",
    ]
    for cat in explanation.categories:
        lines.append("")
        via = f" (from {cat.via})" if cat.via else ""
        lines.append(f"{cat.category}: {cat.measure:.3f} -> {cat.level}{via}")
        lines.append("  " + cat.formula)
        if cat.ssl_sentence:
            lines.append(f"  SSL sentence: {cat.ssl_sentence!r}")
            lines.append(f"    nearest exemplar (cos {cat.cosine:.2f}): {cat.ssl_exemplar!r}")
            lines.append(f"    VADER compound {cat.compound:+.2f}")
        if cat.supporting:
            lines.append(f"  LR counts {len(cat.supporting)} supporting sentence(s)")
        for neg in cat.negated:
            lines.append(f"  NF sentence [{neg.index}] (cues against: {', '.join(neg.cues)}):")
            lines.append(f"    {neg.text!r}")
    return "\n".join(lines)
