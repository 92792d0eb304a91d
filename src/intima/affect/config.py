"""Settings of the affect measure. Every hand-set number that shapes a score lives here.

The fitted numbers (heads, NF weights, centroids, cut points) live in the package data file read
by :mod:`intima.affect.params`. A config is identified by the hash of the scorer version, the
parameters' digest and its canonical JSON (``AffectConfig.key``); stored scores carry that key,
so scores made under different settings never mix and re-scoring under the same ones is a no-op.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from intima.affect.params import PARAMS_VERSION, default_params
from intima.core.taxonomy import PARENT_BEHAVIOUR, Behaviour, SubBehaviour

if TYPE_CHECKING:
    from intima.affect.params import AffectParams

#: Bump when the computation changes in a way the config does not capture.
SCORER_VERSION: Final = PARAMS_VERSION

Level = Literal["low", "medium", "high"]
LEVELS: Final[tuple[Level, ...]] = ("low", "medium", "high")


def group_of(category: str) -> str:
    """The behaviour a category belongs to (a behaviour belongs to itself)."""
    if category in {str(b) for b in Behaviour}:
        return category
    return str(PARENT_BEHAVIOUR[SubBehaviour(category)])


class Thresholds(BaseModel):
    """A measure below ``medium`` is low, at or above ``high`` is high, medium in between."""

    model_config = ConfigDict(frozen=True)

    medium: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if not self.medium <= self.high:
            raise ValueError(f"thresholds must satisfy medium <= high, got {self}")
        return self

    def level(self, measure: float) -> Level:
        if measure >= self.high:
            return "high"
        if measure >= self.medium:
            return "medium"
        return "low"


class AffectConfig(BaseModel):
    """The hand-set knobs of the measure. Steps and caps keep every amplifier in [1, cap]."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    w: float = Field(default=0.1, ge=0.0, le=1.0, description="weight of contextual intensity CI")
    # SP and ELS are modulators in [floor, 1]; they grade intensity, the SSL head decides.
    sp_floor: float = Field(default=0.6, ge=0.0, le=1.0)
    els_floor: float = Field(default=0.6, ge=0.0, le=1.0)
    els_saturation: float = Field(default=0.10, gt=0.0, description="NRC density giving full ELS")
    els_nrc_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    els_phrase_step: float = Field(default=0.25, ge=0.0, le=1.0)
    # Sub-behaviour shares: cosine to the sub-behaviour's centroid / temperature, plus phrases.
    share_temperature: float = Field(default=0.05, gt=0.0)
    share_phrase_weight: float = Field(default=1.0, ge=0.0)
    dm_step: float = Field(default=0.10, ge=0.0)
    dm_max_count: int = Field(default=3, ge=0)
    ef_step: float = Field(default=0.05, ge=0.0)
    ef_max_count: int = Field(default=3, ge=0)
    em_emoji_step: float = Field(default=0.10, ge=0.0)
    em_emoji_max_count: int = Field(default=2, ge=0)
    em_metaphor_step: float = Field(default=0.05, ge=0.0)
    em_metaphor_max_count: int = Field(default=2, ge=0)
    lr_repeat_step: float = Field(default=0.10, ge=0.0)
    lr_repeat_max_count: int = Field(default=2, ge=0)
    embed_max_tokens: int = Field(
        default=64, ge=8, le=256, description="tokens of the response the encoder reads"
    )
    #: Per behaviour cut points (apply to the behaviour and its sub-behaviours); a behaviour not
    #: listed uses the fitted cut points of the parameters file.
    group_thresholds: dict[str, Thresholds] = Field(default_factory=dict)
    #: Factors are rounded to this many decimals before they are combined, so the stored factors
    #: reproduce the stored measure exactly and float noise from batching cannot change scores.
    decimals: int = Field(default=6, ge=1, le=12)

    def thresholds_for(self, category: str, params: AffectParams | None = None) -> Thresholds:
        group = group_of(category)
        if group in self.group_thresholds:
            return self.group_thresholds[group]
        medium, high = (params or default_params()).thresholds[group]
        return Thresholds(medium=medium, high=high)

    def level(self, category: str, measure: float) -> Level:
        return self.thresholds_for(category).level(measure)

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    def key_for(self, params: AffectParams) -> str:
        """Stable id of these settings with these parameters and the scorer version."""
        payload = f"{SCORER_VERSION}\x00{params.digest}\x00{self.canonical_json()}".encode()
        return hashlib.sha256(payload).hexdigest()[:16]

    @property
    def key(self) -> str:
        """:meth:`key_for` the shipped parameters."""
        return self.key_for(default_params())

    # Caps follow from steps and counts; exposed for docs, tests and explanations.
    @property
    def ef_cap(self) -> float:
        return 1.0 + self.ef_step * self.ef_max_count

    @property
    def em_cap(self) -> float:
        return (
            1.0
            + self.em_emoji_step * self.em_emoji_max_count
            + self.em_metaphor_step * self.em_metaphor_max_count
        )

    @property
    def lr_cap(self) -> float:
        return 1.0 + self.lr_repeat_step * self.lr_repeat_max_count

    @property
    def score_cap(self) -> float:
        """The highest score: SP, ELS, SSL at most 1, every amplifier at its cap, no negation,
        CI 1. Above 1 (the amplifiers are at least 1), so the scale is not 0-1."""
        dm_cap = 1.0 + self.dm_step * self.dm_max_count
        return dm_cap * self.ef_cap * self.em_cap * self.lr_cap + self.w
