"""Local Hugging Face ``transformers`` chat models (extra ``transformers``), run on one thread."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from intima.core.config import GenerationSettings, ModelConfig
from intima.core.errors import ConfigError
from intima.providers.base import Completion, Message, Model


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
        chat = [m.model_dump() for m in messages]
        max_new = settings.max_tokens or 512
        kwargs: dict[str, Any] = {"max_new_tokens": max_new}
        if settings.temperature:
            kwargs.update(do_sample=True, temperature=settings.temperature)
        else:
            kwargs["do_sample"] = False
        if settings.top_p is not None:
            kwargs["top_p"] = settings.top_p
        with self._lock:
            if settings.seed is not None:
                torch.manual_seed(settings.seed)
            out = pipe(chat, **kwargs)
        reply = out[0]["generated_text"][-1]["content"]
        tok = pipe.tokenizer
        encoded = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)
        # transformers 5 returns a BatchEncoding here, 4.x a plain list of ids.
        prompt_ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
        completion_tokens = len(tok(reply, add_special_tokens=False)["input_ids"])
        return Completion(
            text=reply,
            # The pipeline does not report why it stopped; hitting the budget means "length".
            finish_reason="length" if completion_tokens >= max_new else "stop",
            prompt_tokens=len(prompt_ids) if isinstance(prompt_ids, list) else None,
            completion_tokens=completion_tokens,
            served_by=f"transformers:{self.config.parsed.model}",
        )
