"""The provider interface every model backend implements, built-in or plugin."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from intima.core.config import GenerationSettings, ModelConfig


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class Completion(BaseModel):
    text: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    served_by: str | None = None
    #: The form a reply schema was sent in (``json_schema``, ``json_object``, ``off``), when the
    #: backend chose it; ``None`` when no schema was asked for or the backend does not say.
    structured_output: str | None = None


class TransientError(Exception):
    """Worth retrying: rate limits, 5xx, timeouts, dropped connections, malformed bodies."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RequestError(Exception):
    """This request cannot succeed as sent (e.g. prompt too long); record it and move on."""


class Model(ABC):
    """A model backend. ``generate`` is async; blocking backends run in a worker thread.

    Raise :class:`TransientError` for what a retry may fix, :class:`RequestError` for a failure
    specific to one request, and :class:`intima.core.errors.ProviderError` for what stops the run
    (bad key, unknown model, nothing listening).
    """

    #: How many requests to keep in flight when the configuration does not say.
    default_concurrency: int = 8

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        #: What the backend learned that the user should be told once (e.g. that a server
        #: rejected a structured-output form and another is used); the CLI prints them.
        self.notes: list[str] = []

    @abstractmethod
    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion. ``json_schema`` asks for structured output where supported."""

    async def preflight(self) -> None:  # noqa: B027 - optional hook
        """Fail fast with a clear :class:`ProviderError` if the backend cannot be reached."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections or memory."""

    @property
    def concurrency(self) -> int:
        return self.config.concurrency or self.default_concurrency
