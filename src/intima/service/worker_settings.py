"""What a worker does, validated once: :class:`WorkerSettings`, which ``intima worker`` builds
from its options and a notebook passes to :func:`intima.service.worker.work`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from intima.core.config import ModelConfig
from intima.core.spending import SpendingSettings
from intima.service.model_server import Route, ServeSettings
from intima.service.queue import DEFAULT_LEASE_S, DEFAULT_MAX_ATTEMPTS

#: Seconds a draining worker keeps trying to reach a queue it cannot read before it stops.
DEFAULT_GIVE_UP_S = 120.0
#: Seconds between looks at an empty queue.
DEFAULT_POLL_S = 2.0

_Seconds = Annotated[float, Field(gt=0, le=86400.0, allow_inf_nan=False)]


class WorkerSettings(BaseModel):
    """How a worker takes requests, and the knobs it lays over each request's configuration.

    ``once``: process at most one request, then return. ``drain``: return when nothing is
    pending or running (otherwise wait for new requests for ever); a draining worker that
    cannot read the queue for ``give_up_s`` seconds in a row stops with the reason (a worker
    that is not draining keeps trying). Between tries at an unreachable queue it waits
    ``poll_s``, then twice as long each time, up to a minute.

    ``judges``: judge every request's responses with these; ``score``: score them with the
    offline affect measure; ``max_reasks``: times an invalid judge reply is asked again.
    ``dataset``: where to read the prompts of requests that ask for ``hub`` (a local copy when
    the Hub is out of reach). ``limit``: a smoke test: run the first N prompts of each request,
    then give it back for a full run (never finished, never published).

    ``base_urls``: servers for requests that name a model but no server. ``concurrency``:
    requests in flight per model on this machine; ``max_retries``: retries per prompt;
    ``timeout_s``: seconds before a request is retried; ``allow_unlisted_model``: run a request
    even if its server does not list the model. None of these changes the answers, so none is
    part of the cache key.

    ``lease_s``: seconds a claim holds a request (renewed while working); ``max_attempts``:
    claims after which a request is given up. ``results``: a folder or
    ``hf://datasets/OWNER/NAME`` that each finished request's bundle is published to before the
    request is marked finished (a failed publish fails the request with the reason).

    ``serve``: start a model server for each request for a Hub model (stopped after it; a model
    that fails to load fails the request with the server's reason); ``route="hf"``: send those
    requests to Inference Providers. Neither changes a configuration key.

    ``spending``: the prices (default: the dated default table) and the USD this worker may
    spend over all its requests (with a cap, a request for a model with no price fails); once
    it is spent, the request in hand goes back to the queue and the worker stops.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    once: bool = False
    drain: bool = False
    judges: tuple[ModelConfig, ...] = ()
    score: bool = False
    max_reasks: Annotated[int, Field(ge=0, le=20)] | None = None
    dataset: str | None = None
    limit: Annotated[int, Field(ge=1)] | None = None
    base_urls: tuple[str, ...] = ()
    concurrency: Annotated[int, Field(ge=1, le=4096)] | None = None
    max_retries: Annotated[int, Field(ge=0, le=50)] | None = None
    timeout_s: _Seconds | None = None
    allow_unlisted_model: bool = False
    lease_s: _Seconds = DEFAULT_LEASE_S
    poll_s: Annotated[float, Field(gt=0, le=3600.0, allow_inf_nan=False)] = DEFAULT_POLL_S
    give_up_s: Annotated[float, Field(ge=0, le=86400.0, allow_inf_nan=False)] = DEFAULT_GIVE_UP_S
    max_attempts: Annotated[int, Field(ge=1, le=100)] = DEFAULT_MAX_ATTEMPTS
    results: str | None = None
    serve: ServeSettings | None = None
    route: Route | None = None
    spending: SpendingSettings = Field(default_factory=SpendingSettings)
