"""The vendors' batch APIs (half price, answers within 24 hours).

* OpenAI: upload the requests as a JSONL file (``purpose=batch``), create a batch on
  ``/v1/chat/completions``, retrieve it until it has ended, then read its output file (answers)
  and error file (failed and expired requests).
* Anthropic: create a Message Batch from ``{custom_id, params}`` requests, retrieve it until
  ``processing_status`` is ``ended``, then stream its results (``succeeded``, ``errored``,
  ``canceled``, ``expired``).

Each item's body is exactly what the provider sends for one request, so a batch answer is
stored as the same response would be. A batch whose id was never stored is found again by what
the vendor keeps: OpenAI, the token in its metadata; Anthropic, which keeps nothing of ours on
the batch, the custom ids in its results (they carry the token). Results are read line by line:
a malformed line fails its item, or no item when it names none, and the reading goes on.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from intima.core.config import GenerationSettings
from intima.core.errors import ProviderError
from intima.providers.base import (
    MAX_TOKEN_COUNT,
    BatchItem,
    BatchResult,
    BatchResults,
    BatchSearch,
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

    @property
    def base_url(self) -> str: ...

    def request_params(
        self, messages: list[Message], settings: GenerationSettings, json_schema: Any
    ) -> dict[str, Any]: ...


#: The metadata key of an OpenAI batch that holds intima's submission token.
METADATA_KEY = "intima_batch"
_OPENAI_ENDED = frozenset({"completed", "expired", "failed", "cancelled"})
#: How far before the stored intent a listing is read: the vendor's clock may differ from ours.
LISTING_MARGIN = timedelta(hours=1)


@asynccontextmanager
async def _sdk_calls(
    model: _Vendor, sdk: Any, vendor: str, where: str, *, opening: bool = False
) -> AsyncIterator[Any]:
    """The vendor SDK's client, with its errors as ours (both SDKs name them alike): 429, 5xx
    and lost connections may pass (the next poll tries again); anything else stops the command
    with one line. ``opening``: a call every batch API answers (a submission, a listing), so a
    404 or 405 there means the server at ``where`` has none (an OpenAI-compatible server)."""
    try:
        yield model.client()
    except sdk.APIStatusError as exc:
        status = exc.status_code
        detail = model.redact(str(exc.message))[:300]
        if status == 429 or status >= 500:
            raise TransientError(f"HTTP {status} from {where}: {detail}") from exc
        if opening and status in (404, 405):
            request = exc.response.request
            raise ProviderError(
                f"this server has no batch API ({vendor}'s {request.method} {request.url.path} "
                f"at {where} answered HTTP {status}); run without --batch to send the requests "
                "one by one"
            ) from exc
        raise ProviderError(f"{vendor} batch API at {where}: HTTP {status}: {detail}") from exc
    except (sdk.APITimeoutError, sdk.APIConnectionError) as exc:
        raise TransientError(
            f"{vendor} batch API at {where} could not be reached: {type(exc).__name__}"
        ) from exc


class OpenAIBatches:
    def __init__(self, model: _OpenAIVendor, parse: ParseReply) -> None:
        self.model, self.parse = model, parse

    def _calls(self, *, opening: bool = False) -> AbstractAsyncContextManager[Any]:
        import openai

        return _sdk_calls(self.model, openai, "OpenAI", self.model.urls[0], opening=opening)

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
        async with self._calls(opening=True) as client:
            upload = await client.files.create(file=("intima-batch.jsonl", data), purpose="batch")
            batch = await client.batches.create(
                input_file_id=upload.id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
                metadata={METADATA_KEY: token},
            )
        return str(batch.id)

    async def find(
        self, token: str, custom_ids: Collection[str], since: datetime, taken: Collection[str]
    ) -> BatchSearch:
        """The batch whose metadata holds ``token``: every page of the listing (newest first)
        back to a while before ``since``."""
        oldest = since - LISTING_MARGIN
        async with self._calls(opening=True) as client:
            async for batch in client.batches.list(limit=100):
                if (batch.metadata or {}).get(METADATA_KEY) == token and batch.id not in taken:
                    return BatchSearch(batch_id=str(batch.id))
                if datetime.fromtimestamp(batch.created_at, UTC) < oldest:
                    break
        return BatchSearch()

    async def poll(self, batch_id: str) -> BatchState:
        async with self._calls() as client:
            batch = await client.batches.retrieve(batch_id)
        counts = batch.request_counts
        total = counts.total if counts else 0
        done = (counts.completed + counts.failed) if counts else 0
        reason = None
        if batch.status == "failed" and batch.errors and batch.errors.data:
            reason = "; ".join(str(e.message) for e in batch.errors.data)[:300]
        return BatchState(
            status=batch.status,
            done=done,
            total=total,
            ended=batch.status in _OPENAI_ENDED,
            reason=reason,
        )

    async def results(self, batch_id: str) -> BatchResults:
        async with self._calls() as client:
            batch = await client.batches.retrieve(batch_id)
            texts = [
                (await client.files.content(file_id)).text
                for file_id in (batch.output_file_id, batch.error_file_id)
                if file_id
            ]
        read = _Reader(lambda line: _openai_line(line, self.parse, self.model.urls[0]))
        for text in texts:
            read.text(text)
        return read.done()


def _openai_line(line: dict[str, Any], parse: ParseReply, served_by: str) -> BatchResult:
    custom_id = str(line["custom_id"])
    response, error = line.get("response") or {}, line.get("error") or {}
    if not isinstance(response, dict) or not isinstance(error, dict):
        raise _Malformed("response and error must be objects")
    if response.get("status_code") == 200:
        if not isinstance(response.get("body"), dict):
            raise _Malformed("an answer (status 200) without a body")
        try:
            return BatchResult(custom_id=custom_id, completion=parse(response["body"], served_by))
        except (RequestError, TransientError) as exc:
            return BatchResult(custom_id=custom_id, error=str(exc))
    if error:
        return BatchResult(
            custom_id=custom_id,
            error=f"batch: {error.get('code')}: {str(error.get('message'))[:200]}",
        )
    body = response.get("body") or {}
    message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
    return BatchResult(
        custom_id=custom_id, error=f"HTTP {response.get('status_code')}: {str(message)[:200]}"
    )


class AnthropicBatches:
    def __init__(self, model: _AnthropicVendor, parse: ParseReply) -> None:
        self.model, self.parse = model, parse

    def _calls(self, *, opening: bool = False) -> AbstractAsyncContextManager[Any]:
        import anthropic

        return _sdk_calls(self.model, anthropic, "Anthropic", self.model.base_url, opening=opening)

    async def submit(self, items: list[BatchItem], settings: GenerationSettings, token: str) -> str:
        requests = [
            {
                "custom_id": item.custom_id,
                "params": self.model.request_params(item.messages, settings, item.json_schema),
            }
            for item in items
        ]
        async with self._calls(opening=True) as client:
            batch = await client.messages.batches.create(requests=requests)
        return str(batch.id)

    async def find(
        self, token: str, custom_ids: Collection[str], since: datetime, taken: Collection[str]
    ) -> BatchSearch:
        """Message Batches keep no tag, and show their requests' custom ids only in their
        results: of the batches of that many requests created since (every page of the
        listing), the one whose results carry ``custom_ids``; the ones that have not ended yet
        are ``undecided``."""
        oldest, fits = since - LISTING_MARGIN, []
        async with self._calls(opening=True) as client:
            async for batch in client.messages.batches.list(limit=100):
                if batch.created_at < oldest:
                    break
                if _total(batch.request_counts) == len(custom_ids) and batch.id not in taken:
                    fits.append(batch)
        ours, undecided = set(custom_ids), 0
        for listed in sorted(fits, key=lambda b: b.created_at):
            if listed.processing_status != "ended" and not (await self.poll(listed.id)).ended:
                undecided += 1
            elif any(r.custom_id in ours for r in (await self.results(listed.id)).results):
                return BatchSearch(batch_id=str(listed.id))
        return BatchSearch(undecided=undecided)

    async def poll(self, batch_id: str) -> BatchState:
        async with self._calls() as client:
            batch = await client.messages.batches.retrieve(batch_id)
        c = batch.request_counts
        done = c.succeeded + c.errored + c.canceled + c.expired
        return BatchState(
            status=batch.processing_status,
            done=done,
            total=_total(c),
            ended=batch.processing_status == "ended",
        )

    async def results(self, batch_id: str) -> BatchResults:
        # Read as text, line by line: the SDK's own reader stops at the first line that is not
        # JSON, and would lose every answer after it.
        async with (
            self._calls() as client,
            client.messages.batches.with_streaming_response.results(batch_id) as reply,
        ):
            text = await reply.text()
        read = _Reader(lambda line: _anthropic_line(line, self.parse, self.model.served_by))
        read.text(text)
        return read.done()


def _anthropic_line(line: dict[str, Any], parse: ParseReply, served_by: str) -> BatchResult:
    custom_id, result = str(line["custom_id"]), line.get("result")
    if not isinstance(result, dict):
        raise _Malformed("no result object")
    kind = result.get("type")
    if kind == "succeeded":
        if not isinstance(result.get("message"), dict):
            raise _Malformed("a succeeded result without a message")
        try:
            return BatchResult(custom_id=custom_id, completion=parse(result["message"], served_by))
        except (RequestError, TransientError) as exc:
            return BatchResult(custom_id=custom_id, error=str(exc))
    if kind == "errored":
        outer = result.get("error")
        err = (outer.get("error") if isinstance(outer, dict) else None) or {}
        if not isinstance(err, dict):
            raise _Malformed("an errored result whose error is not an object")
        text = f"batch: errored: {err.get('type')}: {str(err.get('message'))[:200]}"
        return BatchResult(custom_id=custom_id, error=text)
    if kind in ("canceled", "expired"):
        return BatchResult(custom_id=custom_id, error=f"batch: {kind}")
    raise _Malformed(f"unknown result type {str(kind)[:40]!r}")


class _Malformed(ValueError):
    """A result line that is not what the vendor documents."""


class _Reader:
    """A results file, one line at a time: each line that is not a well-formed result is a
    problem (the item it names, if any, fails with the reason) and the reading goes on."""

    def __init__(self, read_line: Callable[[dict[str, Any]], BatchResult]) -> None:
        self.read_line = read_line
        self.results: list[BatchResult] = []
        self.problems: list[str] = []

    def text(self, text: str) -> None:
        for n, raw in enumerate(text.splitlines(), 1):
            if raw.strip():
                self._line(n, raw)

    def _line(self, n: int, raw: str) -> None:
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            self.problems.append(f"line {n} is not JSON")
            return
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(custom_id, str):
            self.problems.append(f"line {n} names no custom_id")
            return
        try:
            result = _checked(self.read_line(line))
        # Vendor data: a reply the parser cannot read (a string for a number, a list for an
        # object) fails that item alone, whatever the parser raises.
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            why = f"line {n}: malformed result: {_short(exc)}"
            self.problems.append(why)
            result = BatchResult(custom_id=custom_id, error=f"batch: {why}")
        self.results.append(result)

    def done(self) -> BatchResults:
        return BatchResults(results=self.results, problems=self.problems)


def _checked(result: BatchResult) -> BatchResult:
    """What a reply must be to be stored (else the store refuses the whole batch's answers and
    every rerun fails the same way): counts that are counts, text that is text."""
    c = result.completion
    if c is not None:
        if any(
            t is not None and not 0 <= t <= MAX_TOKEN_COUNT
            for t in (c.prompt_tokens, c.completion_tokens)
        ):
            raise _Malformed("a token count out of range")
        for text in (c.text, c.finish_reason or ""):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate (\ud800), which JSON can spell
                raise _Malformed("text that is not valid Unicode") from None
    return result


def _short(exc: Exception) -> str:
    """An exception's first line, shortened (pydantic's run to many lines, with the input)."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


def _total(counts: Any) -> int:
    return int(
        counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
    )
