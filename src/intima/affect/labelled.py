"""The project's labelled set: responses written by intima with their intended ratings.

``intima/data/affect_labelled.jsonl`` holds 100 original prompt/response pairs, each rated
low/medium/high on all 13 categories:

* ``dev`` (80, 8 per sub-behaviour): seen while the first scorer (affect-1) was designed and
  its thresholds fitted.
* ``fresh`` (20, 2 per sub-behaviour): written after affect-1 was frozen, never used to tune.

The v2 and v3 parameters are fitted on external dev sets, not on this one (``docs/affect.md``).

Behaviour ratings are the highest rating among their sub-behaviours (our convention, the same
rule the measure uses). The set checks the measure against its authors' intent; it is not a
human-annotated benchmark, and its authors also wrote the exemplars.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import Final, Literal

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
from intima.core.taxonomy import CATEGORIES

LABELLED_FILE: Final = "affect_labelled.jsonl"


class LabelledExample(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    split: Literal["dev", "fresh"]
    primary: str
    prompt: str
    response: str
    ratings: dict[str, Level]

    def as_input(self) -> AffectInput:
        return AffectInput(response_id=self.id, prompt=self.prompt, response=self.response)


def load_labelled(split: Literal["dev", "fresh"] | None = None) -> list[LabelledExample]:
    path = resources.files("intima.data").joinpath(LABELLED_FILE)
    with path.open("r", encoding="utf-8") as fh:
        rows = [LabelledExample.model_validate(json.loads(line)) for line in fh if line.strip()]
    rows = [r for r in rows if split is None or r.split == split]
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
    n_fresh: int
    config_key: str
    in_sample: Agreement  # dev examples, with the config's own thresholds
    held_out: list[CalibrationReport]  # dev: thresholds fitted on one half, tested on the other
    fresh: Agreement  # fresh examples, with the config's own thresholds
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
    dev = labelled_pairs([ex for ex in examples if ex.split == "dev"], scores)
    fresh = labelled_pairs([ex for ex in examples if ex.split == "fresh"], scores)
    cfg = scorer.config
    cuts = {group_of(c): cfg.thresholds_for(c) for c in CATEGORIES}
    reports = [calibrate(dev, "labelled:dev", train_fraction, s, granularity) for s in seeds]
    return LabelledAgreement(
        n_examples=len(examples),
        n_fresh=len(fresh) // len(CATEGORIES),
        config_key=cfg.key,
        fresh=agreement(fresh, cuts),
        in_sample=agreement(dev, cuts),
        held_out=reports,
        mean_test_kappa=_mean([r.test.kappa_quadratic for r in reports]),
        mean_test_auroc=_mean([r.test.auroc for r in reports]),
    )


def _mean(values: Sequence[float | None]) -> float:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else float("nan")
