"""The provider interface every model backend implements, built-in or plugin."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Collection
from datetime import datetime
from typing import Annotated, Any, ClassVar, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from intima.core.config import GenerationSettings, ModelConfig


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (half of a UTF-16 pair, as ``"\\ud800"`` in JSON)
    replaced by U+FFFD. JSON allows them, Python's parser keeps them, and SQLite's encoder and a
    bundle's checks refuse them: replaced, not refused, so that an answer that was paid for is
    kept, as a UTF-8 decoder keeps a text with a bad byte. (A server that cuts text as UTF-16,
    as JavaScript does, sends one when it cuts an emoji's pair in two.)"""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


#: More tokens than any one request has: a larger count is a malformed reply, not a number to
#: store (SQLite's integers end at 2**63 - 1, and a bundle's rules refuse more than this).
MAX_TOKEN_COUNT: Final = 10**9
#: A token count as a reply may hold it.
TokenCount = Annotated[int, Field(ge=0, le=MAX_TOKEN_COUNT)]
#: Where a reply's token counts came from: the vendor's ``usage`` (``reported``), intima's count
#: with the model's tokenizer (``counted``), or the most the request allowed (``worst case``).
UsageSource = Literal["reported", "counted", "worst case"]


class Completion(BaseModel):
    """One answer, as stored: whatever a provider builds is checked here, plugins' too."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    #: None until the counts are settled (:func:`intima.generate.usage.settled`)
    usage_source: UsageSource | None = None
    served_by: str | None = None
    #: The form a reply schema was sent in (``json_schema``, ``json_object``, ``off``), when the
    #: backend chose it; ``None`` when no schema was asked for or the backend does not say.
    structured_output: str | None = None

    @field_validator("text", "finish_reason")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        return None if value is None else without_surrogates(value)


class TransientError(Exception):
    """Worth retrying: rate limits, 5xx, timeouts, dropped connections, malformed bodies."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RequestError(Exception):
    """This request cannot succeed as sent (e.g. prompt too long); record it and move on."""


class MalformedReply(RequestError):
    """The server answered, but not in its protocol's form (``choices`` an object, a token
    count of ``"lots"`` or -3): the item fails with the reason and is asked again next run, not
    retried now (see :mod:`intima.providers.replies`)."""


class BatchItem(BaseModel):
    """One request of a vendor batch; ``custom_id`` matches its answer to it."""

    custom_id: str
    messages: list[Message]
    json_schema: dict[str, Any] | None = None


class BatchState(BaseModel):
    """A submitted batch as the vendor reports it."""

    status: str
    done: int
    total: int
    ended: bool
    #: why the whole batch failed, when it did (e.g. the vendor refused the input file)
    reason: str | None = None


class BatchResult(BaseModel):
    """One item's answer, or why there is none (expired, errored, refused)."""

    custom_id: str
    completion: Completion | None = None
    error: str | None = None


class BatchResults(BaseModel):
    """A batch's results as read. A line that is not a well-formed result (not JSON, no custom
    id, no body, usage that is not a number) is a ``problem``; when it names its item, that
    item is also in ``results`` as failed with the reason."""

    results: list[BatchResult]
    problems: list[str] = []


class BatchSearch(BaseModel):
    """What the vendor's listings say of a submission whose batch id was never stored."""

    batch_id: str | None = None
    #: batches that may be it but cannot be told apart yet (Anthropic's show their custom ids
    #: only in their results, once they have ended): ask again later
    undecided: int = 0


class BatchClient(Protocol):
    """A vendor's batch API: submit once, poll, read the results once the batch has ended."""

    async def submit(self, items: list[BatchItem], settings: GenerationSettings, token: str) -> str:
        """Create the batch, tagged with ``token`` where the vendor keeps tags; its id."""

    async def find(
        self, token: str, custom_ids: Collection[str], since: datetime, taken: Collection[str]
    ) -> BatchSearch:
        """The batch a submission created, when its id was never stored (the command was
        killed before): the one tagged ``token``, or whose requests carry ``custom_ids``,
        created since about ``since`` and not one of ``taken`` (the ids stored already)."""

    async def poll(self, batch_id: str) -> BatchState: ...

    async def results(self, batch_id: str) -> BatchResults: ...


class Model(ABC):
    """A model backend. ``generate`` is async; blocking backends run in a worker thread.

    Raise :class:`TransientError` for what a retry may fix, :class:`RequestError` for a failure
    specific to one request, and :class:`intima.core.errors.ProviderError` for what stops the run
    (bad key, unknown model, nothing listening).
    """

    #: How many requests to keep in flight when the configuration does not say.
    default_concurrency: int = 8
    #: Generation settings (names of :class:`GenerationSettings` fields) this provider never
    #: sends. A configuration that sets one has it dropped, with a note, before anything reads
    #: its configuration key: the key and the stored configuration say what was sent.
    unsupported_settings: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, config: ModelConfig) -> None:
        #: What the backend learned that the user should be told once (e.g. that a server
        #: rejected a structured-output form and another is used); the CLI prints them.
        self.notes: list[str] = []
        dropped = self.unsupported(config.parsed.model)
        self.config, notes = without_settings(config, dropped)
        self.notes.extend(notes)

    @classmethod
    def unsupported(cls, model: str) -> frozenset[str]:
        """The settings this provider cannot honour for ``model`` (override when it depends on
        the model, as OpenAI's reasoning models refuse temperature and top_p)."""
        return cls.unsupported_settings

    @abstractmethod
    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion. ``json_schema`` asks for structured output where supported."""

    def batches(self) -> BatchClient | None:
        """The vendor's batch API, for providers that have one (``--batch``)."""
        return None

    def structured_form(self) -> str | None:
        """The reply form a request with a schema is sent in, where the reply itself does not
        say (an OpenAI batch's results): stored with the judgment as live ones are."""
        return None

    async def preflight(self) -> None:  # noqa: B027 - optional hook
        """Fail fast with a clear :class:`ProviderError` if the backend cannot be reached."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections or memory."""

    @property
    def concurrency(self) -> int:
        return self.config.concurrency or self.default_concurrency


def without_settings(config: ModelConfig, names: frozenset[str]) -> tuple[ModelConfig, list[str]]:
    """``config`` with the named generation settings unset, and a note for each one set to
    something other than its default (the default seed 0 is nobody's request). A configuration
    that sets none of them comes back unchanged (the same object)."""
    current = config.generation.model_dump()
    dropped = sorted(n for n in names if current.get(n) is not None)
    if not dropped:
        return config, []
    provider, model = config.parsed.provider, config.parsed.model
    defaults = GenerationSettings().model_dump()
    notes = [
        f"warning: {provider}:{model} cannot take {name} (set to {current[name]!r}); it is not "
        "sent and not part of the configuration key"
        for name in dropped
        if current[name] != defaults.get(name)
    ]
    generation = config.generation.model_copy(update=dict.fromkeys(dropped))
    return config.model_copy(update={"generation": generation}), notes
