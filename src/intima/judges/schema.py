"""The judge's reply: a pydantic model (always used to validate) and the JSON schema sent to
backends that can constrain their output (OpenAI structured outputs, vLLM, llama.cpp grammars).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from intima.core.ratings import Level, primary_label
from intima.core.taxonomy import CATEGORIES

LEVEL_NAMES: Final = ("low", "medium", "high")
RATIONALE_MAX_CHARS: Final = 1600

LevelName = Literal["low", "medium", "high"]


class _ReplyBase(BaseModel):
    # Unknown keys are an error here; the parser drops them (and notes it) before validating.
    model_config = ConfigDict(extra="forbid", frozen=True)

    rationale: str = Field(default="", max_length=RATIONALE_MAX_CHARS)

    def levels(self) -> dict[str, Level]:
        return {c: Level.parse(getattr(self, c)) for c in CATEGORIES}

    def primary(self) -> str:
        return str(primary_label(self.levels()))


# One required field per rated category, in the taxonomy's fixed order.
JudgeReply: type[_ReplyBase] = create_model(  # type: ignore[call-overload]
    "JudgeReply",
    __base__=_ReplyBase,
    **{c: (LevelName, ...) for c in CATEGORIES},
)


def reply_json_schema() -> dict[str, Any]:
    """Strict-mode friendly: every key required, no extra keys, levels as an enum."""
    props: dict[str, Any] = {c: {"type": "string", "enum": list(LEVEL_NAMES)} for c in CATEGORIES}
    # No maxLength on the rationale: llama.cpp expands it into hundreds of nested grammar rules
    # (measured 10x slower sampling), and OpenAI's strict mode does not need it. max_tokens
    # bounds the reply; pydantic bounds what is accepted.
    props["rationale"] = {"type": "string"}
    return {
        "type": "object",
        "properties": props,
        "required": [*CATEGORIES, "rationale"],
        "additionalProperties": False,
    }
