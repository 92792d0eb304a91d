"""OpenAI-compatible endpoints (vLLM, TGI, Ollama, llama.cpp server, OpenRouter…) and OpenAI.

Both go through the official ``openai`` SDK with its own retries switched off: intima's retry
loop honours Retry-After and records attempts, and a failure must surface here, not be hidden.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from urllib.parse import urlsplit
from typing import Any

from intima.config import GenerationSettings, ModelConfig
from intima.errors import ConfigError, ProviderError
from intima.models.base import Completion, Message, Model, RequestError, TransientError

#: Servers that need no key still require the SDK to have one.
_NO_KEY = "not-needed"


class OpenAICompatModel(Model):
    default_concurrency = 32
    default_key_env: str | None = None
    default_base_url: str | None = None

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        spec = config.parsed
        if not spec.model:
            raise ConfigError(f"model spec {config.spec!r} needs a model name, e.g. {spec.provider}:MODEL")
        urls = spec.base_urls or ((self.default_base_url,) if self.default_base_url else ())
        if not urls:
            raise ConfigError(
                f"model spec {config.spec!r} needs a base URL: {spec.provider}:MODEL@http://host:port/v1"
            )
        self.model_name = spec.model
        self._urls = urls
        self._key = self._api_key()
        self._clients: list[Any] = []
        self._rr = itertools.cycle(range(len(urls)))
        self._inflight = [0] * len(urls)

    def _api_key(self) -> str:
        env = self.config.api_key_env or self.default_key_env
        if env is None:
            return os.environ.get("INTIMA_API_KEY") or _NO_KEY
        key = os.environ.get(env)
        if not key:
            raise ConfigError(f"missing API key: set the environment variable {env}")
        return key

    def _client(self, index: int) -> Any:
        if not self._clients:
            import httpx
            from openai import AsyncOpenAI

            limits = httpx.Limits(max_connections=None, max_keepalive_connections=4096)
            self._clients = [
                AsyncOpenAI(
                    base_url=url,
                    api_key=self._key,
                    max_retries=0,
                    timeout=self.config.timeout_s,
                    http_client=httpx.AsyncClient(limits=limits, timeout=self.config.timeout_s),
                )
                for url in self._urls
            ]
        return self._clients[index]

    def _pick(self) -> int:
        """Least-loaded server, round-robin among equals, so load spreads evenly."""
        start = next(self._rr)
        order = [(start + i) % len(self._urls) for i in range(len(self._urls))]
        return min(order, key=lambda i: self._inflight[i])

    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        import openai

        index = self._pick()
        self._inflight[index] += 1
        try:
            resp = await self._client(index).chat.completions.create(
                **self._request(messages, settings, json_schema)
            )
        except openai.APIStatusError as exc:
            raise _classify_status(exc, self._urls[index]) from exc
        except openai.APITimeoutError as exc:
            raise TransientError(f"timed out after {self.config.timeout_s:g}s") from exc
        except openai.APIConnectionError as exc:
            raise TransientError(f"cannot connect to {self._urls[index]}: {exc.__cause__ or exc}") from exc
        except (ValueError, TypeError) as exc:  # malformed body the SDK could not parse
            raise TransientError(f"malformed response body: {exc}") from exc
        finally:
            self._inflight[index] -= 1
        return _completion(resp, self._urls[index])

    async def preflight(self) -> None:
        """Open a TCP connection to every server: an unreachable URL stops the run at once."""
        for url in self._urls:
            host, port = _host_port(url)
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
            except (OSError, TimeoutError) as exc:
                reason = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
                raise ProviderError(
                    f"cannot reach {url} ({reason}): is the server running and the URL right?"
                ) from exc
            writer.close()

    def _request(
        self, messages: list[Message], settings: GenerationSettings, json_schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": [m.model_dump() for m in messages],
        }
        for name in ("temperature", "top_p", "max_tokens", "seed"):
            value = getattr(settings, name)
            if value is not None:
                body[name] = value
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgment", "schema": json_schema, "strict": True},
            }
        return body

    async def aclose(self) -> None:
        for client in self._clients:
            await client.close()
        self._clients = []


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return parts.hostname or "localhost", parts.port or default


def _classify_status(exc: Any, url: str) -> Exception:
    status = exc.status_code
    detail = _short(exc)
    if status in (401, 403):
        return ProviderError(f"{url} refused the API key (HTTP {status}): check the key")
    if status == 404:
        return ProviderError(f"{url}: model or endpoint not found (HTTP 404): {detail}")
    if status == 429 or status >= 500 or status == 408:
        return TransientError(f"HTTP {status}: {detail}", retry_after=_retry_after(exc))
    return RequestError(f"HTTP {status}: {detail}")


def _retry_after(exc: Any) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            from datetime import UTC, datetime

            return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
        except (TypeError, ValueError):
            return None


def _short(exc: Any) -> str:
    text = str(getattr(exc, "message", exc))
    return text if len(text) <= 300 else text[:300] + "…"


def _completion(resp: Any, url: str) -> Completion:
    choices = getattr(resp, "choices", None)
    if not choices:
        raise TransientError("the server returned no choices")
    choice = choices[0]
    text = choice.message.content if choice.message is not None else None
    if text is None:
        raise TransientError("the server returned an empty message")
    usage = getattr(resp, "usage", None)
    return Completion(
        text=text,
        finish_reason=choice.finish_reason,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        served_by=url,
    )


class OpenAIModel(OpenAICompatModel):
    """OpenAI's own API; the key comes from ``OPENAI_API_KEY`` unless configured otherwise."""

    default_concurrency = 16
    default_key_env = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"
