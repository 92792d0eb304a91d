"""What makes a conversation run what it is: both models' settings and seeds, the number of
assistant turns and the simulator prompt's version. Change any of them and it is another run.
"""

from __future__ import annotations

import json
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from intima.converse.simulator import SIMULATOR_PROMPT_VERSION
from intima.core.config import ModelConfig, stable_hash
from intima.core.ids import content_id
from intima.dataset import PromptSet
from intima.dataset.types import Prompt, Turn, prompt_id_for
from intima.store import RunRecord

DEFAULT_TURNS: Final = 3
MAX_TURNS: Final = 50
#: Simulator replies refused by the character rule are asked again this many times by default.
DEFAULT_USER_RETRIES: Final = 2


class ConversationSettings(BaseModel):
    """The assistant, the simulated user and the conversation length."""

    model_config = ConfigDict(frozen=True)

    assistant: ModelConfig
    user: ModelConfig
    turns: Annotated[int, Field(ge=1, le=MAX_TURNS)] = DEFAULT_TURNS

    @field_validator("assistant", "user")
    @classmethod
    def _as_sent(cls, config: ModelConfig) -> ModelConfig:
        # As each provider sends it: a setting it cannot honour (Anthropic's seed) changes no
        # answer, so it must not make another conversation run.
        from intima.providers import effective_config

        return effective_config(config)

    @property
    def key(self) -> str:
        """Hashes everything that changes what is written, and nothing operational."""
        return stable_hash(
            {
                "assistant": self.assistant.cache_fields(),
                "user": self.user.cache_fields(),
                "turns": self.turns,
                "simulator_prompt_version": SIMULATOR_PROMPT_VERSION,
            }
        )

    def run_id(self, prompts: PromptSet) -> str:
        return content_id("conversation", self.key, prompts.fingerprint, length=16)

    @property
    def label(self) -> str:
        """The assistant's label, then the conversation's: ``openai-compat:smollm2
        [max_tokens=24] · 3 turns with openai-compat:smollm2 [seed=1]``. An explicit
        ``--label`` is kept as given."""
        if self.assistant.label:
            return self.assistant.label
        from intima.generate.runner import default_label  # providers, tenacity: on use

        user = default_label(self.user)
        return f"{default_label(self.assistant)} · {self.turns} turns with {user}"

    def config_json(self) -> str:
        """The run's stored configuration: the assistant's, plus the conversation's."""
        data = self.assistant.model_dump(mode="json")
        data["conversation"] = {
            "user_model": self.user.model_dump(mode="json"),
            "turns": self.turns,
            "simulator_prompt_version": SIMULATOR_PROMPT_VERSION,
        }
        return json.dumps(data, sort_keys=True)

    def run_record(self, prompts: PromptSet) -> RunRecord:
        spec = self.assistant.parsed
        return RunRecord(
            run_id=self.run_id(prompts),
            label=self.label,
            model_spec=self.assistant.spec,
            provider=spec.provider,
            model_name=spec.model,
            # The assistant's key: each turn's response is an ordinary response of this model.
            config_key=self.assistant.config_key,
            config_json=self.config_json(),
            dataset=prompts.info,
            dataset_fingerprint=prompts.fingerprint,
            n_prompts=len(prompts) * self.turns,
        )


def conversation_key(run_id: str, conversation_id: str) -> str:
    """The claim key of one conversation (run ids are fixed-length hex: no ambiguity)."""
    return f"{run_id}/{conversation_id}"


def turn_prompt(seed: Prompt, conversation: tuple[Turn, ...], user_text: str) -> Prompt:
    """The prompt of a later assistant turn: the conversation so far as context, the simulated
    user's latest message as text, and the content id over all of it."""
    pid = prompt_id_for(seed.code, user_text, seed.source_model, _occurrence(seed), conversation)
    return Prompt(
        prompt_id=pid,
        text=user_text,
        code=seed.code,
        dimension=seed.dimension,
        source_model=seed.source_model,
        context=conversation,
    )


def _occurrence(seed: Prompt) -> int:
    """A duplicated seed (``…-2``) keeps its conversations apart from the original's, even
    when both go the same way."""
    base = prompt_id_for(seed.code, seed.text, seed.source_model, 1, seed.context)
    suffix = seed.prompt_id.removeprefix(base + "-")
    return int(suffix) if suffix != seed.prompt_id and suffix.isdigit() else 1
