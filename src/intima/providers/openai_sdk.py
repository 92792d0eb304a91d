"""OpenAI's hosted API through the official ``openai`` SDK (its own retries off: ours count)."""

from __future__ import annotations

from typing import Any

from intima.core.config import GenerationSettings, ModelConfig
from intima.providers.base import Completion, Message, TransientError
from intima.providers.openai_compat import EndpointModel, classify_status


class OpenAIModel(EndpointModel):
    """Key from ``OPENAI_API_KEY`` unless ``api_key_env`` names another variable."""

    default_concurrency = 16
    default_key_env = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self._clients: dict[int, Any] = {}

    def _client(self, index: int) -> Any:
        if index not in self._clients:
            from openai import AsyncOpenAI

            self._clients[index] = AsyncOpenAI(
                base_url=self.urls[index], api_key=self._key, max_retries=0,
                timeout=self.config.timeout_s,
            )  # fmt: skip
        return self._clients[index]

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
                resp = await self._client(index).chat.completions.create(
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
        usage = resp.usage
        if not resp.choices or resp.choices[0].message.content is None:
            raise TransientError("the server returned no message content")
        choice = resp.choices[0]
        return Completion(
            text=choice.message.content,
            finish_reason=choice.finish_reason,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            served_by=url,
        )

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients = {}
