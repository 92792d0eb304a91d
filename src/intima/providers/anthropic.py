"""Anthropic's API through the official ``anthropic`` SDK (extra ``anthropic``)."""

from __future__ import annotations

from typing import Any

from intima.core.config import GenerationSettings, ModelConfig, read_api_key
from intima.core.errors import ConfigError, ProviderError
from intima.providers.base import Completion, Message, Model, RequestError, TransientError


class AnthropicModel(Model):
    default_concurrency = 8

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        spec = config.parsed
        if not spec.model:
            raise ConfigError("anthropic needs a model name, e.g. anthropic:claude-sonnet-4-5")
        key = read_api_key(config, "ANTHROPIC_API_KEY")
        assert key is not None  # a default variable is given, so a missing key raised
        self._key = key
        self._base_url = spec.base_urls[0] if spec.base_urls else None
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                from anthropic import AsyncAnthropic
            except ImportError as exc:
                raise ConfigError(
                    "anthropic needs the extra: pip install 'intima[anthropic]'"
                ) from exc
            self._client = AsyncAnthropic(
                api_key=self._key, base_url=self._base_url, max_retries=0,
                timeout=self.config.timeout_s,
            )  # fmt: skip
        return self._client

    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        import anthropic

        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.config.parsed.model,
            "max_tokens": settings.max_tokens or 1024,
            "messages": [m.model_dump() for m in messages if m.role != "system"],
        }
        if system:
            body["system"] = system
        for name in ("temperature", "top_p"):
            if (value := getattr(settings, name)) is not None:
                body[name] = value
        try:
            resp = await self._get_client().messages.create(**body)
        except anthropic.AuthenticationError as exc:
            raise ProviderError("Anthropic refused the API key: check it") from exc
        except anthropic.NotFoundError as exc:
            raise ProviderError(f"Anthropic: model not found: {self.config.parsed.model}") from exc
        except anthropic.APIStatusError as exc:
            if exc.status_code == 429 or exc.status_code >= 500:
                after = exc.response.headers.get("retry-after")
                raise TransientError(
                    f"HTTP {exc.status_code}", retry_after=float(after) if after else None
                ) from exc
            raise RequestError(f"HTTP {exc.status_code}: {exc.message}") from exc
        except (anthropic.APITimeoutError, anthropic.APIConnectionError) as exc:
            raise TransientError(str(exc)) from exc
        text = "".join(getattr(block, "text", "") for block in resp.content)
        return Completion(
            text=text,
            finish_reason=resp.stop_reason,
            prompt_tokens=resp.usage.input_tokens,
            completion_tokens=resp.usage.output_tokens,
            served_by="anthropic",
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
