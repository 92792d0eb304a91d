"""The vendors' batch APIs (half price, answers within 24 hours).

* OpenAI: upload the requests as a JSONL file (``purpose=batch``), create a batch on
  ``/v1/chat/completions``, retrieve it until it has ended, then read its output file (answers)
  and error file (failed and expired requests).
* Anthropic: create a Message Batch from ``{custom_id, params}`` requests, retrieve it until
  ``processing_status`` is ``ended``, then stream its results (``succeeded``, ``errored``,
  ``canceled``, ``expired``).

Each item's body is exactly what the provider sends for one request, so a batch answer is
stored as the same response would be.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, Protocol

from intima.core.config import GenerationSettings
from intima.core.errors import ProviderError
from intima.providers.base import (
    BatchItem,
    BatchResult,
    BatchState,
    Completion,
    Message,
    RequestError,
    TransientError,
)

#: A vendor reply (a dict, as the API sends it) and the server's name, as a completion.
ParseReply = Callable[[dict[str, Any], str], Completion]


class _Vendor(Protocol):
    """What a batch needs of its provider (kept structural: the providers import this module)."""

    def redact(self, text: str) -> str: ...

    def client(self) -> Any: ...


class _OpenAIVendor(_Vendor, Protocol):
    urls: tuple[str, ...]

    def request_body(
        self, messages: list[Message], settings: GenerationSettings, json_schema: Any
    ) -> dict[str, Any]: ...


class _AnthropicVendor(_Vendor, Protocol):
    @property
    def served_by(self) -> str: ...

    def request_params(
        self, messages: list[Message], settings: GenerationSettings, json_schema: Any
    ) -> dict[str, Any]: ...


#: The metadata key of an OpenAI batch that holds intima's submission token.
METADATA_KEY = "intima_batch"
_OPENAI_ENDED = frozenset({"completed", "expired", "failed", "cancelled"})


@asynccontextmanager
async def _sdk_calls(model: _Vendor, sdk: Any, vendor: str) -> AsyncIterator[Any]:
    """The vendor SDK's client, with its errors as ours (both SDKs name them alike): 429, 5xx
    and lost connections may pass (the next poll tries again); anything else stops the command
    with one line."""
    try:
        yield model.client()
    except sdk.APIStatusError as exc:
        detail = model.redact(str(exc.message))[:300]
        if exc.status_code == 429 or exc.status_code >= 500:
            raise TransientError(f"HTTP {exc.status_code}: {detail}") from exc
        raise ProviderError(f"{vendor} batch API: HTTP {exc.status_code}: {detail}") from exc
    except (sdk.APITimeoutError, sdk.APIConnectionError) as exc:
        raise TransientError(f"{vendor} batch API unreachable: {type(exc).__name__}") from exc


class OpenAIBatches:
    def __init__(self, model: _OpenAIVendor, parse: ParseReply) -> None:
        self.model, self.parse = model, parse

    def _calls(self) -> AbstractAsyncContextManager[Any]:
        import openai

        return _sdk_calls(self.model, openai, "OpenAI")

    async def submit(self, items: list[BatchItem], settings: GenerationSettings, token: str) -> str:
        lines = [
            {
                "custom_id": item.custom_id,
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": self.model.request_body(item.messages, settings, item.json_schema),
            }
            for item in items
        ]
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        async with self._calls() as client:
            upload = await client.files.create(file=("intima-batch.jsonl", data), purpose="batch")
            batch = await client.batches.create(
                input_file_id=upload.id, endpoint="/v1/chat/completions",
                completion_window="24h", metadata={METADATA_KEY: token},
            )  # fmt: skip
        return str(batch.id)

    async def find(self, token: str, n_items: int, since: datetime) -> str | None:
        async with self._calls() as client:
            page = await client.batches.list(limit=100)
        for batch in page.data:
            if (batch.metadata or {}).get(METADATA_KEY) == token:
                return str(batch.id)
        return None

    async def poll(self, batch_id: str) -> BatchState:
        async with self._calls() as client:
            batch = await client.batches.retrieve(batch_id)
        counts = batch.request_counts
        total = counts.total if counts else 0
        done = (counts.completed + counts.failed) if counts else 0
        reason = None
        if batch.status == "failed" and batch.errors and batch.errors.data:
            reason = "; ".join(str(e.message) for e in batch.errors.data)[:300]
        return BatchState(status=batch.status, done=done, total=total,
                          ended=batch.status in _OPENAI_ENDED, reason=reason)  # fmt: skip

    async def results(self, batch_id: str) -> list[BatchResult]:
        async with self._calls() as client:
            batch = await client.batches.retrieve(batch_id)
            texts = [
                (await client.files.content(file_id)).text
                for file_id in (batch.output_file_id, batch.error_file_id)
                if file_id
            ]
        out = []
        for text in texts:
            for line in text.splitlines():
                if line.strip():
                    out.append(_openai_line(json.loads(line), self.parse, self.model.urls[0]))
        return out


def _openai_line(line: dict[str, Any], parse: ParseReply, served_by: str) -> BatchResult:
    custom_id = str(line.get("custom_id"))
    response, error = line.get("response") or {}, line.get("error") or {}
    if response.get("status_code") == 200:
        try:
            return BatchResult(custom_id=custom_id, completion=parse(response["body"], served_by))
        except (RequestError, TransientError) as exc:
            return BatchResult(custom_id=custom_id, error=str(exc))
    if error:
        return BatchResult(custom_id=custom_id, error=f"batch: {error.get('code')}: "
                           f"{str(error.get('message'))[:200]}")  # fmt: skip
    body = response.get("body") or {}
    message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
    return BatchResult(
        custom_id=custom_id, error=f"HTTP {response.get('status_code')}: {str(message)[:200]}"
    )


class AnthropicBatches:
    def __init__(self, model: _AnthropicVendor, parse: ParseReply) -> None:
        self.model, self.parse = model, parse

    def _calls(self) -> AbstractAsyncContextManager[Any]:
        import anthropic

        return _sdk_calls(self.model, anthropic, "Anthropic")

    async def submit(self, items: list[BatchItem], settings: GenerationSettings, token: str) -> str:
        requests = [
            {
                "custom_id": item.custom_id,
                "params": self.model.request_params(item.messages, settings, item.json_schema),
            }
            for item in items
        ]
        async with self._calls() as client:
            batch = await client.messages.batches.create(requests=requests)
        return str(batch.id)

    async def find(self, token: str, n_items: int, since: datetime) -> str | None:
        """Message Batches keep no tag: the earliest batch of ``n_items`` requests created
        from a minute before the submission was stored."""
        async with self._calls() as client:
            page = await client.messages.batches.list(limit=100)
        fits = [
            b for b in page.data
            if b.created_at >= since - timedelta(minutes=1) and _total(b.request_counts) == n_items
        ]  # fmt: skip
        return str(min(fits, key=lambda b: b.created_at).id) if fits else None

    async def poll(self, batch_id: str) -> BatchState:
        async with self._calls() as client:
            batch = await client.messages.batches.retrieve(batch_id)
        c = batch.request_counts
        done = c.succeeded + c.errored + c.canceled + c.expired
        return BatchState(status=batch.processing_status, done=done, total=_total(c),
                          ended=batch.processing_status == "ended")  # fmt: skip

    async def results(self, batch_id: str) -> list[BatchResult]:
        out = []
        async with self._calls() as client:
            async for row in await client.messages.batches.results(batch_id):
                result = row.result
                if result.type == "succeeded":
                    try:
                        completion = self.parse(result.message.model_dump(), self.model.served_by)
                        out.append(BatchResult(custom_id=row.custom_id, completion=completion))
                    except RequestError as exc:
                        out.append(BatchResult(custom_id=row.custom_id, error=str(exc)))
                elif result.type == "errored":
                    err = result.error.error
                    text = f"batch: errored: {err.type}: {str(err.message)[:200]}"
                    out.append(BatchResult(custom_id=row.custom_id, error=text))
                else:
                    out.append(BatchResult(custom_id=row.custom_id, error=f"batch: {result.type}"))
        return out


def _total(counts: Any) -> int:
    return int(counts.processing + counts.succeeded + counts.errored + counts.canceled
               + counts.expired)  # fmt: skip
