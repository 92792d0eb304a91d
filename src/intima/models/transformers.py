"""Local Hugging Face ``transformers`` chat models (extra ``transformers``), run on one thread."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from intima.config import GenerationSettings, ModelConfig
from intima.errors import ConfigError
from intima.models.base import Completion, Message, Model


class TransformersModel(Model):
    default_concurrency = 1

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        if not config.parsed.model:
            raise ConfigError("transformers needs a model id or path, e.g. transformers:./my-model")
        self._pipe: Any = None
        self._lock = threading.Lock()

    def _pipeline(self) -> Any:
        if self._pipe is None:
            try:
                from transformers import pipeline
            except ImportError as exc:
                raise ConfigError(
                    "transformers needs the extra: pip install 'intima[transformers]'"
                ) from exc
            self._pipe = pipeline("text-generation", model=self.config.parsed.model, device="cpu")
        return self._pipe

    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        return await asyncio.to_thread(self._generate_sync, messages, settings)

    def _generate_sync(self, messages: list[Message], settings: GenerationSettings) -> Completion:
        import torch

        pipe = self._pipeline()
        kwargs: dict[str, Any] = {"max_new_tokens": settings.max_tokens or 512}
        if settings.temperature:
            kwargs.update(do_sample=True, temperature=settings.temperature)
        else:
            kwargs["do_sample"] = False
        if settings.top_p is not None:
            kwargs["top_p"] = settings.top_p
        with self._lock:
            if settings.seed is not None:
                torch.manual_seed(settings.seed)
            out = pipe([m.model_dump() for m in messages], **kwargs)
        reply = out[0]["generated_text"][-1]["content"]
        tok = pipe.tokenizer
        return Completion(
            text=reply,
            finish_reason=None,
            prompt_tokens=None,
            completion_tokens=len(tok(reply)["input_ids"]),
            served_by=f"transformers:{self.config.parsed.model}",
        )
