"""What a request from the public (the leaderboard's form) may ask for, and how often.

A request from outside names a model, never a machine: a Hugging Face Hub repo id served by the
operator's own OpenAI-compatible servers, or a hosted API model from :data:`API_ALLOW_LIST`.
Never a local path (``llamacpp:/etc/passwd``), a ``file://`` URL or a server address. And the
form is rate-limited: :data:`PER_SESSION_PER_HOUR` per browser session and
:data:`ALL_PER_HOUR` in all, per hour (both counted over the last 60 minutes).
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Final

from intima.core.config import GenerationSettings, ModelSpec
from intima.core.errors import ConfigError

#: Hosted API models the public may request (the operator pays for them): a documented list.
API_ALLOW_LIST: Final[dict[str, tuple[str, ...]]] = {
    "openai": ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-5", "gpt-5-mini"),
    "anthropic": ("claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5"),
}
#: The provider that serves Hub models on the operator's GPUs (vLLM, TGI, llama.cpp server).
HUB_PROVIDER: Final = "openai-compat"
#: What a public request may cost per prompt: the form's own answer length (it sets no
#: generation settings: GenerationSettings' 512 tokens) and a short system prompt. A request
#: file written by hand gets the same limits where a worker runs it (request_policy), so nobody
#: can make the operator pay for 131,072-token answers to a 20,000-character prompt.
MAX_TOKENS: Final = 512
MAX_SYSTEM_PROMPT_CHARS: Final = 2_000
PER_SESSION_PER_HOUR: Final = 5
ALL_PER_HOUR: Final = 60
# owner/name, as the Hub allows them: no path, no "..", no scheme.
_HUB_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")


class PublicRequestError(ConfigError):
    """A request from the public form that intima will not queue; the message says why."""


def check_public_spec(spec: ModelSpec) -> None:
    """Refuse anything but a Hub model id or an allow-listed API model."""
    if spec.base_urls:
        raise PublicRequestError("requests name a model, not a server: remove the '@URL' part")
    if spec.provider == HUB_PROVIDER:
        if not _HUB_ID.match(spec.model) or ".." in spec.model:
            raise PublicRequestError(
                f"{spec.model[:80]!r} is not a Hugging Face Hub model id (OWNER/NAME)"
            )
        return
    allowed = API_ALLOW_LIST.get(spec.provider)
    if allowed is None:
        raise PublicRequestError(
            f"a public queue takes Hub models ({HUB_PROVIDER}:OWNER/NAME) or API models "
            f"({', '.join(API_ALLOW_LIST)}), not {spec.provider[:30]!r}"
        )
    if spec.model not in allowed:
        raise PublicRequestError(
            f"{spec.provider}:{spec.model[:60]} is not on the list of API models this "
            f"leaderboard runs ({', '.join(allowed)})"
        )


def check_settings(system_prompt: str | None, generation: GenerationSettings) -> None:
    """Refuse settings beyond the form's limits (:data:`MAX_TOKENS`,
    :data:`MAX_SYSTEM_PROMPT_CHARS`); refused, not clamped, since they make the request's
    identity (its configuration key)."""
    tokens = generation.max_tokens
    if tokens is None or tokens > MAX_TOKENS:
        asked = "the provider's default" if tokens is None else f"{tokens:,}"
        raise PublicRequestError(
            f"max_tokens is {asked}; a public request takes at most {MAX_TOKENS} tokens an answer"
        )
    if system_prompt is not None and len(system_prompt) > MAX_SYSTEM_PROMPT_CHARS:
        raise PublicRequestError(
            f"system prompt is {len(system_prompt):,} characters; a public request takes at "
            f"most {MAX_SYSTEM_PROMPT_CHARS:,}"
        )


def check_on_hub(spec: ModelSpec) -> None:
    """A Hub model id must name a public model repo that exists (asked without a token, so a
    private repo the operator can see still counts as not public)."""
    if spec.provider != HUB_PROVIDER:
        return
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        info = HfApi().model_info(spec.model, token=False)
    except (RepositoryNotFoundError, HfHubHTTPError) as exc:
        if isinstance(exc, RepositoryNotFoundError) or _status(exc) in (401, 403, 404):
            raise PublicRequestError(
                f"{spec.model[:80]} is not a public model on the Hugging Face Hub; check the "
                "spelling (OWNER/NAME)"
            ) from exc
        raise PublicRequestError(
            f"could not check {spec.model[:80]} on the Hub (HTTP {_status(exc)}); try again later"
        ) from exc
    except Exception as exc:  # network errors come through as httpx or OS errors
        raise PublicRequestError(
            f"could not check {spec.model[:80]} on the Hub ({type(exc).__name__}); try again later"
        ) from exc
    if getattr(info, "private", False) or getattr(info, "gated", False):
        raise PublicRequestError(f"{spec.model[:80]} is private or gated on the Hub")


def _status(exc: Exception) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


class RateLimit:
    """Sliding one-hour windows: one per session, and one for everyone."""

    def __init__(
        self,
        per_session: int = PER_SESSION_PER_HOUR,
        overall: int = ALL_PER_HOUR,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_session, self.overall, self._clock = per_session, overall, clock
        self._sessions: dict[str, deque[float]] = defaultdict(deque)
        self._all: deque[float] = deque()
        self._lock = threading.Lock()

    def take(self, session: str) -> None:
        """Count one request from ``session``, or raise if a limit is reached."""
        now = self._clock()
        with self._lock:
            mine = self._sessions[session]
            for window in (mine, self._all):
                while window and window[0] <= now - 3600:
                    window.popleft()
            if len(mine) >= self.per_session:
                raise PublicRequestError(
                    f"this session has made {self.per_session} requests in the last hour; "
                    "try again later"
                )
            if len(self._all) >= self.overall:
                raise PublicRequestError(
                    f"the leaderboard has taken {self.overall} requests in the last hour; "
                    "try again later"
                )
            mine.append(now)
            self._all.append(now)
