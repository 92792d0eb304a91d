"""OpenAI-compatible chat endpoints: vLLM, TGI, Ollama, llama.cpp server, OpenRouter, …

This path speaks the chat-completions protocol over a lean ``aiohttp`` client rather than the
``openai`` SDK: with 128 requests in flight the SDK's httpx pool costs ~15 ms of CPU per request
on a 2-core machine (measured in ``benchmarks/bench_harness.py``), which caps a self-served
model far below what its server can do. Hosted OpenAI keeps the official SDK
(:mod:`intima.providers.openai_sdk`); both share the URL, key and error handling here.

**Structured output, ``auto`` mode** (the default). Servers differ in which ``response_format``
they accept: OpenAI, vLLM and Ollama take ``json_schema``; llama-cpp-python's server rejects it
(HTTP 500) but turns ``{type: json_object, schema: ...}`` into a grammar; others accept neither.
So the first request to a URL that carries a schema tries ``json_schema``, then ``json_object``,
then no ``response_format`` at all (the judge prompt asks for JSON and the parser repairs and
validates the reply), moving on only when the server rejected the *form* (see
:func:`format_rejection`). The fallback happens inside one ``generate`` call: it is not a retry
and spends none of the request's retry budget, and a rejection is never a reply. What works is
remembered per URL for the rest of the process; while a URL is still being probed, other
requests to it wait for the answer instead of probing too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from intima.core.config import GenerationSettings, ModelConfig, read_api_key
from intima.core.errors import ConfigError, ProviderError
from intima.providers.base import Completion, Message, Model, RequestError, TransientError
from intima.providers.replies import chat_completion, read_json

#: Servers that need no key still get a placeholder bearer token, as the SDKs send.
_NO_KEY = "not-needed"
#: A reply larger than this is a broken server, not a chat answer.
MAX_BODY_BYTES = 32 * 1024 * 1024

#: The forms of a reply schema, in the order ``auto`` mode tries them.
FALLBACK_ORDER: tuple[str, ...] = ("json_schema", "json_object", "off")
#: What ``auto`` mode learned in this process, per base URL: the form that worked...
_LEARNED: dict[str, str] = {}
#: ...and the forms the server explicitly refused.
_REFUSED: dict[str, set[str]] = {}
_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|schema|grammar", re.IGNORECASE)
#: Statuses servers use for a request body they cannot take (llama-cpp-python: 500).
_BODY_STATUSES = frozenset({400, 415, 422, 500, 501})


def format_rejection(status: int, detail: str) -> Literal["explicit", "implicit"] | None:
    """Whether an error answer to a request that carried a ``response_format`` means the server
    does not take that form (so the next form is tried), and how sure that is.

    * ``explicit``: HTTP 400, 415, 422, 500 or 501 whose error text names ``response_format``,
      ``json_schema``, ``json_object``, ``schema`` or ``grammar``: the server said what it
      refused. Remembered for the URL at once.
    * ``implicit``: HTTP 400 or 422 without those words: the body as sent is invalid and a retry
      cannot fix it, so the next form is tried; nothing is remembered unless that form works,
      and a form already known to work on that server is kept (the request fails as usual).
    * ``None``: anything else (401/403/404, 408/409/425/429, a 5xx without those words): about
      the key, the model or the server's health, handled as for any request.
    """
    if status in _BODY_STATUSES and _FORMAT_WORDS.search(detail):
        return "explicit"
    if status in (400, 422):
        return "implicit"
    return None


def forget_structured_output() -> None:
    """Forget what ``auto`` mode learned about every URL (tests; a server swapped in place)."""
    _LEARNED.clear()
    _REFUSED.clear()


def learned_structured_output(url: str) -> str | None:
    """The form ``auto`` mode uses for ``url``, once a request there has worked."""
    return _LEARNED.get(url.rstrip("/"))


class EndpointModel(Model):
    """Shared by every provider that talks to one or more OpenAI-style base URLs."""

    default_key_env: str | None = None
    default_base_url: str | None = None

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        spec = config.parsed
        if not spec.model:
            raise ConfigError(
                f"model spec {config.spec!r} needs a model name, e.g. {spec.provider}:MODEL"
            )
        urls = spec.base_urls or ((self.default_base_url,) if self.default_base_url else ())
        if not urls:
            raise ConfigError(
                f"model spec {config.spec!r} needs a base URL: "
                f"{spec.provider}:MODEL@http://host:port/v1"
            )
        self.model_name = spec.model
        self.urls: tuple[str, ...] = urls
        self._key = self._api_key()
        self._rr = itertools.cycle(range(len(urls)))
        self._inflight = [0] * len(urls)

    def _api_key(self) -> str:
        key = read_api_key(self.config, self.default_key_env)
        if key is None:
            return os.environ.get("INTIMA_API_KEY") or _NO_KEY
        return key

    def redact(self, text: str) -> str:
        """A server may echo the key in an error body, in any case; it must not reach the store
        or logs. Redact before cutting, so that a cut never leaves part of a key behind."""
        if self._key == _NO_KEY:
            return text
        return re.sub(re.escape(self._key), "[redacted]", text, flags=re.IGNORECASE)

    def _pick(self) -> int:
        """Least-loaded server, round-robin among equals, so load spreads evenly."""
        start = next(self._rr)
        order = [(start + i) % len(self.urls) for i in range(len(self.urls))]
        return min(order, key=lambda i: self._inflight[i])

    @contextmanager
    def _server(self) -> Iterator[int]:
        """Pick a server and count the request as in flight there until it ends."""
        index = self._pick()
        self._inflight[index] += 1
        try:
            yield index
        finally:
            self._inflight[index] -= 1

    async def preflight(self) -> None:
        """Open a TCP connection to every server: an unreachable URL stops the run at once."""
        for url in self.urls:
            await reach(url)
        await self._check_model_listed()

    async def _check_model_listed(self) -> None:
        """After the servers answered: a hook for backends that can list their models."""

    def request_body(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        json_schema: dict[str, Any] | None,
        *,
        mode: str | None = None,
    ) -> dict[str, Any]:
        """The chat-completions body; ``mode`` overrides the configured structured-output form
        (``auto`` sends ``json_schema``: the fallback is :class:`OpenAICompatModel`'s)."""
        mode = mode or self.config.structured_output
        if mode == "auto":
            mode = "json_schema"
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": [m.model_dump() for m in messages],
        }
        for name in ("temperature", "top_p", "max_tokens", "seed"):
            value = getattr(settings, name)
            if value is not None:
                body[name] = value
        if json_schema is not None and mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgment", "schema": json_schema, "strict": True},
            }
        elif json_schema is not None and mode == "json_object":
            # llama-cpp-python's server rejects "json_schema" but turns this form into a grammar.
            body["response_format"] = {"type": "json_object", "schema": json_schema}
        return body


class OpenAICompatModel(EndpointModel):
    default_concurrency = 32

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self._session: Any = None
        self._probing: dict[str, asyncio.Lock] = {}

    async def _check_model_listed(self) -> None:
        """A server that ignores model names (llama.cpp, many proxies) answers a typo with its
        own model, and the answers would be stored under the typo: refuse when the server's
        model list does not name the model (a warning with ``allow_unlisted_model``). Best
        effort: no list, no check."""
        url = self.urls[0]
        try:
            async with self._get_session().get(f"{url}/models") as resp:
                if resp.status != 200:
                    return
                listed = [str(m.get("id")) for m in (await resp.json()).get("data", [])]
        except Exception:
            return
        if listed and self.model_name not in listed:
            shown = ", ".join(listed[:5]) + (" …" if len(listed) > 5 else "")
            said = f"{url} lists no model named {self.model_name!r} (it lists {shown})"
            if not self.config.allow_unlisted_model:
                # Another model's answers would be stored under this name.
                raise ProviderError(
                    f"{said}: a server that ignores names would answer with its own model, "
                    "stored under the name you gave; use a listed name, or "
                    "--allow-unlisted-model if the server does serve it under another name"
                )
            self.notes.append(
                f"warning: {said}; a server that ignores names answers with its own model, "
                "stored under the name you gave (--allow-unlisted-model)"
            )

    def _get_session(self) -> Any:
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=self.config.timeout_s),
                headers={"Authorization": f"Bearer {self._key}"},
            )
        return self._session

    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        with self._server() as index:
            url = self.urls[index]
            mode = self.config.structured_output
            if json_schema is None:
                body = self.request_body(messages, settings, None)
                return self._completion(await self._post(url, body), url, None)
            if mode != "auto":
                body = self.request_body(messages, settings, json_schema, mode=mode)
                return self._completion(await self._post(url, body), url, mode)
            if url not in _LEARNED:
                # One request finds out what the server takes; the others wait for its answer.
                async with self._probing.setdefault(url, asyncio.Lock()):
                    if url not in _LEARNED:
                        return await self._fallback(url, messages, settings, json_schema)
            return await self._fallback(url, messages, settings, json_schema)

    async def _fallback(
        self,
        url: str,
        messages: list[Message],
        settings: GenerationSettings,
        json_schema: dict[str, Any],
    ) -> Completion:
        """Send in the first form the server may take; on a rejection of the form, the next."""
        refused = _REFUSED.get(url, set())
        modes = [m for m in FALLBACK_ORDER if m not in refused]
        learned = _LEARNED.get(url)
        if learned in modes:
            modes = modes[modes.index(learned) :]
        rejected: list[str] = []
        for mode in modes:
            body = self.request_body(messages, settings, json_schema, mode=mode)
            answer = await self._post(url, body)
            status = answer[0]
            if status != 200 and mode != "off":
                detail = " ".join(self.redact(_error_text(answer[1])).split())
                kind = format_rejection(status, detail)
                # A form known to work here is given up only when the server names it: one
                # odd request (say, too long) must not change the form for every other one.
                if kind == "implicit" and mode == learned:
                    kind = None
                if kind is not None:
                    if kind == "explicit":
                        _REFUSED.setdefault(url, set()).add(mode)
                    rejected.append(f"{mode} (HTTP {status}: {_cut(detail, 160)})")
                    continue
            completion = self._completion(answer, url, mode)
            if _LEARNED.get(url) != mode:
                _LEARNED[url] = mode
                if rejected:
                    using = "no response_format (JSON by prompt)" if mode == "off" else mode
                    # Learned per process: each command probes again, so the note says how
                    # to skip the probe rather than promising to remember.
                    skip = f"--structured-output {mode}"
                    self.notes.append(
                        f"structured output: {url} rejected response_format "
                        f"{'; '.join(rejected)}; using {using} with this server for the rest "
                        f"of this command ({skip} skips the probe next time)"
                    )
            return completion
        raise AssertionError("unreachable: the last form, off, is never rejected")

    async def _post(self, url: str, body: dict[str, Any]) -> tuple[int, bytes, Any]:
        """One HTTP request: status, body (capped) and headers, or a TransientError."""
        import aiohttp

        try:
            async with self._get_session().post(f"{url}/chat/completions", json=body) as resp:
                raw = await _read_capped(resp)
                return resp.status, raw, resp.headers
        except TimeoutError as exc:
            raise TransientError(f"no answer within {self.config.timeout_s:g}s") from exc
        except aiohttp.ClientError as exc:
            raise TransientError(f"connection to {url} failed: {type(exc).__name__}") from exc

    def _completion(self, answer: tuple[int, bytes, Any], url: str, mode: str | None) -> Completion:
        status, raw, headers = answer
        if status != 200:
            detail = _cut(self.redact(_error_text(raw)))
            raise classify_status(status, detail, headers.get("Retry-After"), url)
        completion = chat_completion(read_json(raw), url)
        if mode is not None:
            completion.structured_output = mode
        return completion

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def _read_capped(resp: Any) -> bytes:
    """The whole body, up to the cap. (One ``read(n)`` returns only what is buffered, about
    128 KB, so longer replies were read as malformed JSON and retried.)"""
    length = resp.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise TransientError(f"response body of {length} bytes exceeds {MAX_BODY_BYTES}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise TransientError(f"response body exceeds {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _error_text(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        message = data.get("error", {}).get("message") if isinstance(data, dict) else None
        text = str(message or data)
    except (ValueError, UnicodeDecodeError, AttributeError):
        text = raw.decode("utf-8", "replace")
    return text


def _cut(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


async def reach(url: str) -> None:
    """Open (and close) a TCP connection to ``url``'s server, or raise a one-line
    :class:`ProviderError`: a server that is not there stops a command at once, before any run
    is written, instead of after every prompt's retries."""
    host, port = _host_port(url)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
    except (OSError, TimeoutError) as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise ProviderError(
            f"cannot reach {url} ({reason}): is the server running and the URL right?"
        ) from exc
    writer.close()


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return parts.hostname or "localhost", parts.port or default


def classify_status(status: int, detail: str, retry_after: str | None, url: str) -> Exception:
    """Which failures a retry may fix, which stop the run, which belong to one request."""
    if status in (401, 403):
        return ProviderError(f"{url} refused the API key (HTTP {status}): check the key")
    if status == 404:
        # The commonest cause: a base URL without the /v1 that OpenAI-compatible servers use.
        hint = (
            ""
            if urlsplit(url).path.rstrip("/").endswith("/v1")
            else (
                f"; OpenAI-compatible servers serve under /v1: did you mean {url.rstrip('/')}/v1?"
            )
        )
        return ProviderError(f"{url}: model or endpoint not found (HTTP 404): {detail}{hint}")
    if status in (408, 409, 425, 429) or status >= 500:
        return TransientError(
            f"HTTP {status}: {detail}", retry_after=parse_retry_after(retry_after)
        )
    return RequestError(f"HTTP {status}: {detail}")


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After is either seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None
