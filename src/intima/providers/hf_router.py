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

from intima.core.config import ModelConfig
from intima.core.errors import ConfigError
from intima.providers.openai_compat import OpenAICompatModel

ROUTER_URL = "https://router.huggingface.co/v1"
ROUTER_ENV = "INTIMA_HF_ROUTER_URL"
_MODEL = re.compile(r"^[\w.-]+/[\w.-]+(:[\w.-]+)?$")


def router_url() -> str:
    url = os.environ.get(ROUTER_ENV, "").strip().rstrip("/") or ROUTER_URL
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{ROUTER_ENV} must be an http(s) URL, e.g. {ROUTER_URL}")
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
