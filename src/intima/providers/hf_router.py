"""Hugging Face Inference Providers: ``hf:OWNER/NAME[:provider]``.

The Hub's router (https://router.huggingface.co/v1) speaks OpenAI's chat-completions protocol
and routes ``OWNER/NAME:provider`` to that inference provider (``OWNER/NAME`` alone lets the
router choose). The key is ``HF_TOKEN``. ``INTIMA_HF_ROUTER_URL`` (or ``@URL`` in the spec)
points at another router, e.g. a local stand-in in tests. Everything else, including the
structured-output fallback, is :class:`OpenAICompatModel`'s.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from intima.core.config import ModelConfig
from intima.core.errors import ConfigError
from intima.providers.openai_compat import OpenAICompatModel

ROUTER_URL = "https://router.huggingface.co/v1"
ROUTER_ENV = "INTIMA_HF_ROUTER_URL"
_MODEL = re.compile(r"^[\w.-]+/[\w.-]+(:[\w.-]+)?$")


def router_url() -> str:
    """The router's URL. It is printed and stored with each run, so a user name, a password or a
    query string (where keys hide) is refused, and never repeated in the message."""
    url = os.environ.get(ROUTER_ENV, "").strip().rstrip("/") or ROUTER_URL
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{ROUTER_ENV} must be an http(s) URL, e.g. {ROUTER_URL}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as exc:
        raise ConfigError(f"{ROUTER_ENV} is not a valid URL ({exc})") from None
    if "@" in parts.netloc or parts.query or parts.fragment or "?" in url or "#" in url:
        raise ConfigError(
            f"{ROUTER_ENV} carries credentials or a query string; give the server and path "
            f"only (e.g. {ROUTER_URL}): the key goes in HF_TOKEN"
        )
    if not parts.hostname:
        raise ConfigError(f"{ROUTER_ENV} has no host; e.g. {ROUTER_URL}")
    return url


class HFRouterModel(OpenAICompatModel):
    """Key from ``HF_TOKEN`` unless ``api_key_env`` names another variable."""

    default_concurrency = 16
    default_key_env = "HF_TOKEN"

    def __init__(self, config: ModelConfig) -> None:
        name = config.parsed.model
        if not _MODEL.match(name):
            raise ConfigError(
                f"model spec {config.spec!r}: give a Hub model as hf:OWNER/NAME or "
                "hf:OWNER/NAME:PROVIDER, e.g. hf:meta-llama/Llama-3.1-8B-Instruct:novita"
            )
        if not config.parsed.base_urls:
            config = config.model_copy(update={"base_urls": (router_url(),)})
        super().__init__(config)

    async def _check_model_listed(self) -> None:
        """The router lists models without their provider suffix and answers an unknown model
        with a 404 of its own, so there is nothing to check ahead."""
