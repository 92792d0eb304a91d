"""The project's labelled set: responses written by intima with their intended ratings.

``intima/data/affect_labelled.jsonl`` holds 80 original prompt/response pairs, 8 per
sub-behaviour, each rated low/medium/high on all 13 categories. Behaviour ratings are the
highest rating among their sub-behaviours (our convention, the same rule the measure uses).
It checks the measure against its authors' intent; it is not a human-annotated benchmark.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import Final

from pydantic import BaseModel, ConfigDict

from intima.affect.calibrate import (
    Agreement,
    CalibrationReport,
    Granularity,
    LabelledPair,
    agreement,
    calibrate,
)
from intima.affect.config import Level, group_of
from intima.affect.measure import AffectInput, AffectScorer, ResponseScore
from intima.taxonomy import CATEGORIES

LABELLED_FILE: Final = "affect_labelled.jsonl"


class LabelledExample(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    primary: str
    prompt: str
    response: str
    ratings: dict[str, Level]

    def as_input(self) -> AffectInput:
        return AffectInput(response_id=self.id, prompt=self.prompt, response=self.response)


def load_labelled() -> list[LabelledExample]:
    path = resources.files("intima.data").joinpath(LABELLED_FILE)
    with path.open("r", encoding="utf-8") as fh:
        rows = [LabelledExample.model_validate(json.loads(line)) for line in fh if line.strip()]
    for row in rows:
        if set(row.ratings) != set(CATEGORIES):
            raise ValueError(f"{row.id}: ratings must cover exactly {CATEGORIES}")
    return rows


def labelled_pairs(
    examples: Sequence[LabelledExample], scores: Sequence[ResponseScore]
) -> list[LabelledPair]:
    """(measure, intended rating) for every example and category."""
    by_id = {s.response_id: s for s in scores}
    return [
        LabelledPair(
            unit=ex.id,
            category=category,
            measure=by_id[ex.id].scores[category].measure,
            reference=ex.ratings[category],
        )
        for ex in examples
        for category in CATEGORIES
    ]


class LabelledAgreement(BaseModel):
    """Agreement of the measure with the labelled set: in-sample and over random half splits."""

    model_config = ConfigDict(frozen=True)

    n_examples: int
    config_key: str
    in_sample: Agreement  # with the config's own thresholds on all examples
    held_out: list[CalibrationReport]  # thresholds fitted on one half, tested on the other
    mean_test_kappa: float
    mean_test_auroc: float


def evaluate_labelled(
    scorer: AffectScorer,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    train_fraction: float = 0.5,
    granularity: Granularity = "global",
) -> LabelledAgreement:
    examples = load_labelled()
    scores = scorer.score([ex.as_input() for ex in examples])
    pairs = labelled_pairs(examples, scores)
    cfg = scorer.config
    cuts = {group_of(c): cfg.thresholds_for(c) for c in CATEGORIES}
    reports = [calibrate(pairs, "labelled", train_fraction, s, granularity) for s in seeds]
    return LabelledAgreement(
        n_examples=len(examples),
        config_key=cfg.key,
        in_sample=agreement(pairs, cuts),
        held_out=reports,
        mean_test_kappa=_mean([r.test.kappa_quadratic for r in reports]),
        mean_test_auroc=_mean([r.test.auroc for r in reports]),
    )


def _mean(values: Sequence[float | None]) -> float:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else float("nan")
