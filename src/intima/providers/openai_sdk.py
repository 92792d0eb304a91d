"""OpenAI's hosted API through the official ``openai`` SDK (its own retries off: ours count).

What is sent: the chat-completions body of :class:`EndpointModel` with ``max_completion_tokens``
(OpenAI's name; its reasoning models refuse ``max_tokens``) and a reply schema as
``response_format {type: json_schema, strict: true}``. The reasoning models (o1, o3, o4, gpt-5)
refuse ``temperature`` and ``top_p``: for them those are unsupported settings, dropped with a
note and left out of the configuration key. The reply is checked by :mod:`.replies`.
"""

from __future__ import annotations

import re
from typing import Any

from intima.core.config import GenerationSettings, ModelConfig
from intima.providers.base import BatchClient, Completion, Message, TransientError
from intima.providers.openai_compat import EndpointModel, classify_status
from intima.providers.replies import chat_completion, read_json

#: Model names of OpenAI's reasoning models, which take no sampling settings.
_REASONING = re.compile(r"^(o\d+|gpt-5)\b", re.IGNORECASE)


class OpenAIModel(EndpointModel):
    """Key from ``OPENAI_API_KEY`` unless ``api_key_env`` names another variable."""

    default_concurrency = 16
    default_key_env = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self._clients: dict[int, Any] = {}

    @classmethod
    def unsupported(cls, model: str) -> frozenset[str]:
        name = model.rsplit("/", 1)[-1]
        return frozenset({"temperature", "top_p"}) if _REASONING.match(name) else frozenset()

    def client(self, index: int = 0) -> Any:
        if index not in self._clients:
            from openai import AsyncOpenAI

            self._clients[index] = AsyncOpenAI(
                base_url=self.urls[index],
                api_key=self._key,
                max_retries=0,
                timeout=self.config.timeout_s,
            )
        return self._clients[index]

    def request_body(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        json_schema: dict[str, Any] | None,
        *,
        mode: str | None = None,
    ) -> dict[str, Any]:
        body = super().request_body(messages, settings, json_schema, mode=mode)
        if "max_tokens" in body:
            body["max_completion_tokens"] = body.pop("max_tokens")
        return body

    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        import openai

        with self._server() as index:
            url = self.urls[index]
            try:
                # The body as sent, not the SDK's model of it: the SDK builds its model without
                # checking it (a non-JSON 200 would raise from inside it), and replies.py checks
                # every vendor's reply one way.
                raw = await self.client(index).chat.completions.with_raw_response.create(
                    **self.request_body(messages, settings, json_schema)
                )
            except openai.APIStatusError as exc:
                raise classify_status(
                    exc.status_code,
                    self.redact(str(exc.message))[:300],
                    exc.response.headers.get("retry-after"),
                    url,
                ) from exc
            except openai.APITimeoutError as exc:
                raise TransientError(f"no answer within {self.config.timeout_s:g}s") from exc
            except openai.APIConnectionError as exc:
                raise TransientError(f"connection to {url} failed") from exc
        completion = chat_completion(read_json(raw.content), url)
        if json_schema is not None:
            completion.structured_output = self.structured_form()
        return completion

    def structured_form(self) -> str | None:
        mode = self.config.structured_output
        return None if mode == "off" else "json_schema" if mode == "auto" else mode

    def batches(self) -> BatchClient:
        from intima.providers.batches import OpenAIBatches

        return OpenAIBatches(self, chat_completion)

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients = {}
