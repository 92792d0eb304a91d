"""What a prompt set is: prompts, their dataset's provenance, and content-derived ids."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any, Final, Literal, overload

from pydantic import BaseModel, ConfigDict, model_validator

from intima.core.errors import DatasetError
from intima.core.ids import content_id
from intima.core.taxonomy import Dimension

#: The code and dimension of a prompt from an external set that names no INTIMA code.
UNKNOWN: Final = "unknown"


class Turn(BaseModel):
    """One earlier message of a conversation."""

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class Prompt(BaseModel):
    """What the model answers: ``text``, the (final) user turn, after the earlier turns of the
    conversation in ``context`` (empty for INTIMA's single-turn prompts)."""

    model_config = ConfigDict(frozen=True)

    prompt_id: str
    text: str
    code: str
    dimension: Dimension | Literal["unknown"]
    source_model: str | None = None
    context: tuple[Turn, ...] = ()

    @property
    def context_json(self) -> str | None:
        return context_json(self.context)


def context_json(context: tuple[Turn, ...]) -> str | None:
    """The stored form of a conversation's earlier turns (None for a single turn)."""
    if not context:
        return None
    return json.dumps([t.model_dump() for t in context], ensure_ascii=False)


class DatasetInfo(BaseModel):
    """Provenance of a prompt set, stored with every run."""

    model_config = ConfigDict(frozen=True)

    dataset_id: str
    source: str
    revision: str | None
    sha256: str
    variant: Literal["paper", "full", "cleaned", "cleaned+memory", "demo", "file"]
    n_prompts: int
    #: How many prompts the whole dataset (this variant) holds, kept when a run takes only
    #: some of them (``--limit``), so a board can say "40 of 368 prompts". None: as many as
    #: ``n_prompts`` (a set made whole).
    size: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _whole_by_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("size") is None and "n_prompts" in data:
            return {**data, "size": data["n_prompts"]}
        return data


class PromptSet(BaseModel):
    model_config = ConfigDict(frozen=True)

    info: DatasetInfo
    prompts: tuple[Prompt, ...]

    @property
    def fingerprint(self) -> str:
        """Identifies exactly which prompts, in which order: part of a run's identity."""
        h = hashlib.sha256()
        for p in self.prompts:
            h.update(p.prompt_id.encode())
            h.update(b"\n")
        return h.hexdigest()

    def __len__(self) -> int:
        return len(self.prompts)

    def __iter__(self) -> Iterator[Prompt]:  # type: ignore[override]
        # A prompt set reads as a sequence of prompts; pydantic's own __iter__ (field, value)
        # pairs serve dict(model) only, which nothing here uses.
        return iter(self.prompts)

    @overload
    def __getitem__(self, index: int) -> Prompt: ...
    @overload
    def __getitem__(self, index: slice) -> PromptSet: ...
    def __getitem__(self, index: int | slice) -> Prompt | PromptSet:
        """``prompts[0]`` is a prompt; ``prompts[:5]`` a prompt set, like :meth:`first`."""
        if isinstance(index, slice):
            kept = self.prompts[index]
            return PromptSet(
                info=self.info.model_copy(update={"n_prompts": len(kept)}), prompts=kept
            )
        return self.prompts[index]

    def first(self, n: int | None) -> PromptSet:
        """The first ``n`` prompts (all when ``n`` is None), under the same dataset id."""
        if n is None:
            return self
        if n < 1:
            raise DatasetError(f"the number of prompts to take must be at least 1, not {n}")
        return self[:n]


def prompt_id_for(
    code: str,
    text: str,
    source_model: str | None,
    occurrence: int = 1,
    context: tuple[Turn, ...] = (),
) -> str:
    """Content-derived id over the whole conversation; exact duplicate rows get ``-2``, ``-3``
    … in source order. A single-turn prompt's id is what it always was."""
    parts = [code, source_model or "", text]
    if context:
        parts.append(context_json(context) or "")
    digest = content_id(*parts, length=16)
    return digest if occurrence == 1 else f"{digest}-{occurrence}"
