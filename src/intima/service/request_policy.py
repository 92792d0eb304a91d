"""What a worker will run: the rules a request must pass where it is executed.

A request file on the Hub is written by whoever holds a write token (the Space holds one), so
the checks made where a request is *written* (the form, ``intima request``) prove nothing about
the file a worker reads. A worker therefore checks every request it claims, and fails (with the
reason) any that:

* carries an **operational field**: a server URL, a key source (``api_key_env``,
  ``api_key_file``), a label, limits, timeouts or retries. A request names a model and the
  settings that shape its answers (system prompt, generation settings), nothing else; the
  worker takes servers, keys and limits from its own command line;
* names anything the public form would refuse (when the queue is public: a Hub model id or an
  allow-listed API model, never a local path or a server; a Hub model that is public and not
  gated, asked of the Hub without a token as the form asks, so the worker's token never lends
  a private model; answers and a system prompt within the form's limits,
  :data:`~intima.service.public.MAX_TOKENS` and
  :data:`~intima.service.public.MAX_SYSTEM_PROMPT_CHARS`), a dataset other than
  :data:`~intima.service.request_rules.REQUEST_DATASETS`, a model id starting with ``-`` (in any
  queue: a server's command line would take it for an option), or a spec or system prompt
  over the limits;
* disagrees with itself (the listed spec or configuration key is not the configuration's).
"""

from __future__ import annotations

import re
from typing import Final

from intima.core.config import ModelConfig
from intima.service.queue import REQUEST_ID_PATTERN, RequestRecord
from intima.service.request_rules import QueueError, check_request

REQUEST_ID: Final = re.compile(REQUEST_ID_PATTERN)
#: The fields of a configuration a request may set; every other field is operational.
CONTENT_FIELDS: Final = frozenset({"spec", "system_prompt", "generation"})


class RequestRefused(QueueError):
    """A request the worker will not run; the message (the request's failure reason) says why."""


def check_request_id(request_id: str) -> str:
    if not isinstance(request_id, str) or not REQUEST_ID.match(request_id):
        raise QueueError(
            f"{str(request_id)[:40]!r} is not a request id (16 hex digits); see `intima requests`"
        )
    return request_id


def runnable_config(req: RequestRecord, *, public: bool) -> ModelConfig:
    """The configuration to run (content fields only), or :class:`RequestRefused`.

    ``public``: the request came from a queue anyone with a write token can fill (the Hub), so
    it must name what the public form accepts: a Hub model id or an allow-listed API model.
    """
    config = req.config
    operational = sorted(
        name
        for name, field in ModelConfig.model_fields.items()
        if name not in CONTENT_FIELDS and getattr(config, name) != field.default
    )
    if operational:
        raise RequestRefused(
            f"refused: the request sets {', '.join(operational)}; a request names a model and "
            "its generation settings only (servers, keys and limits come from the worker)"
        )
    try:
        clean, _ = check_request(
            config.spec,
            req.requester,
            req.dataset,
            config.system_prompt,
            config.generation,
            allow_urls=not public,
        )
    except QueueError as exc:
        raise RequestRefused(f"refused: {exc}") from exc
    if req.spec != clean.spec or req.config_key != clean.config_key:
        raise RequestRefused(
            "refused: the request's spec or configuration key does not match its configuration"
        )
    if public:  # last: the one check that asks the Hub
        from intima.service.public import PublicRequestError, check_on_hub

        try:
            check_on_hub(clean.parsed)
        except PublicRequestError as exc:
            raise RequestRefused(f"refused: {exc}") from exc
    return clean
