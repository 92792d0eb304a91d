"""Anthropic's Messages API through the official ``anthropic`` SDK (extra ``anthropic``).

What is sent: ``model``, ``max_tokens``, ``messages`` and ``system`` (the system messages
joined). The API has no seed, and API version 2026-10-21 (which SDK 2.x sends) answers 400 to
``temperature``, ``top_p`` and ``top_k`` on every model, so ``seed``, ``temperature`` and
``top_p`` are unsupported settings: dropped with a note, and out of the configuration key.
A reply schema (the judge's) is sent the Anthropic way: one tool whose ``input_schema`` is the
schema, forced with ``tool_choice {type: tool}``; the tool call's ``input`` is the reply.
"""

from __future__ import annotations

import re
from typing import Any

from intima.core.config import GenerationSettings, ModelConfig, read_api_key
from intima.core.errors import ConfigError, ProviderError
from intima.providers.base import (
    BatchClient,
    Completion,
    Message,
    Model,
    RequestError,
    TransientError,
)
from intima.providers.openai_compat import parse_retry_after, reach
from intima.providers.replies import message_completion, read_json

#: The one tool a structured request offers and forces.
TOOL_NAME = "record_judgment"


class AnthropicModel(Model):
    default_concurrency = 8
    unsupported_settings = frozenset({"seed", "temperature", "top_p"})

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        spec = config.parsed
        if not spec.model:
            raise ConfigError("anthropic needs a model name, e.g. anthropic:claude-sonnet-4-5")
        # Checked here, where a spec is read and before any store or run is written: found
        # later, inside each request, it failed every prompt at once (one traceback apiece).
        try:
            import anthropic  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"{config.spec} needs the anthropic package, which this install lacks: "
                "pip install 'intima[anthropic]'"
            ) from None
        key = read_api_key(config, "ANTHROPIC_API_KEY")
        assert key is not None  # a default variable is given, so a missing key raised
        self._key = key
        self._base_url = spec.base_urls[0] if spec.base_urls else None
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            from anthropic import AsyncAnthropic

            self._client = AsyncAnthropic(
                api_key=self._key,
                base_url=self._base_url,
                max_retries=0,
                timeout=self.config.timeout_s,
            )
        return self._client

    def request_params(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        json_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The Messages API body (also a batch request's ``params``)."""
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.config.parsed.model,
            "max_tokens": settings.max_tokens or 1024,
            "messages": [m.model_dump() for m in messages if m.role != "system"],
        }
        if system:
            body["system"] = system
        if json_schema is not None and self.config.structured_output != "off":
            body["tools"] = [
                {
                    "name": TOOL_NAME,
                    "description": "Record the judgment of the response.",
                    "input_schema": json_schema,
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return body

    def redact(self, text: str) -> str:
        return re.sub(re.escape(self._key), "[redacted]", text, flags=re.IGNORECASE)

    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        import anthropic

        try:
            # The body as sent, checked by replies.py (the SDK's model is built unchecked).
            raw = await self.client().messages.with_raw_response.create(
                **self.request_params(messages, settings, json_schema)
            )
            body = await raw.read()
        except anthropic.AuthenticationError as exc:
            raise ProviderError("Anthropic refused the API key: check it") from exc
        except anthropic.NotFoundError as exc:
            raise ProviderError(f"Anthropic: model not found: {self.config.parsed.model}") from exc
        except anthropic.APIStatusError as exc:
            raise self.status_error(
                exc.status_code, str(exc.message), exc.response.headers.get("retry-after")
            ) from exc
        except anthropic.APITimeoutError as exc:
            raise TransientError(f"no answer within {self.config.timeout_s:g}s") from exc
        except anthropic.APIConnectionError as exc:
            raise TransientError(f"connection to Anthropic failed: {type(exc).__name__}") from exc
        return message_completion(read_json(body), self.served_by)

    @property
    def served_by(self) -> str:
        return self._base_url or "anthropic"

    @property
    def base_url(self) -> str:
        """Where requests go: the spec's ``@URL``, else the SDK's (``ANTHROPIC_BASE_URL`` or
        https://api.anthropic.com)."""
        return self._base_url or str(self.client().base_url).rstrip("/")

    async def preflight(self) -> None:
        """A TCP connection to the API's server, as the OpenAI providers open: an endpoint that
        is not there is one line at once, not every prompt's retries with backoff."""
        await reach(self.base_url)

    def status_error(self, status: int, message: str, retry_after: str | None) -> Exception:
        """429, 5xx and 529 (overloaded) are worth retrying; the rest belong to the request."""
        detail = self.redact(message)[:300]
        if status == 429 or status >= 500:
            return TransientError(f"HTTP {status}: {detail}", parse_retry_after(retry_after))
        return RequestError(f"HTTP {status}: {detail}")

    def batches(self) -> BatchClient:
        from intima.providers.batches import AnthropicBatches

        return AnthropicBatches(self, message_completion)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
