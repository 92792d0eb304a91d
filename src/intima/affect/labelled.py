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

from intima.affect.calibrate import LabelledPair
from intima.affect.config import Level
from intima.affect.measure import AffectInput, ResponseScore
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
