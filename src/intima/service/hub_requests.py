"""A request file of the Hub's request queue (:mod:`intima.service.hub_queue`): the record it
holds with its history, how one is read from a downloaded repo (bounded and checked: anyone
may write one), and the record after a move of the lease rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from intima.core.errors import ConfigError
from intima.service.lease import Move
from intima.service.queue import QueueUnavailable, RequestRecord
from intima.store import now

FOLDER = "requests"
MAX_REQUEST_FILE_BYTES = 100_000


class HubQueueError(QueueUnavailable):
    """The requests repo cannot be read or written just now (network, a Hub outage)."""


class HubQueueDenied(ConfigError):
    """The requests repo does not exist or may not be written with this token: retrying will
    not help."""


class RequestEvent(BaseModel):
    at: str
    status: str
    worker_id: str | None = None
    detail: str | None = None


class HubRequest(RequestRecord):
    """A request as stored on the Hub: the record plus its history and where its results went."""

    history: list[RequestEvent] = Field(default_factory=list)
    results: list[str] = Field(default_factory=list)


def parse_request_file(path: Path) -> HubRequest:
    """One request file as read from the repo: bounded, valid text, named by its id; else
    :class:`HubQueueError` saying what to fix (the queue skips it)."""
    if not path.is_file():  # a folder requests/X.json/ matches the pattern too
        raise HubQueueError(f"{FOLDER}/{path.name} is not a file; it is skipped (delete it)")
    if path.stat().st_size > MAX_REQUEST_FILE_BYTES:
        raise HubQueueError(
            f"{FOLDER}/{path.name} is over {MAX_REQUEST_FILE_BYTES:,} bytes; not a request"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        # "\ud800" is valid JSON but no text: the record could never be written back, so
        # every claim of it would fail (and did, stopping every worker).
        json.dumps(data, ensure_ascii=False).encode("utf-8")
        rec = HubRequest.model_validate(data)
    except UnicodeError as exc:
        raise HubQueueError(
            f"{FOLDER}/{path.name} is not a valid request (it holds text that is not valid "
            "Unicode); it is skipped (fix or delete it)"
        ) from exc
    except (OSError, ValueError, ValidationError, RecursionError) as exc:  # 40,000 brackets
        raise HubQueueError(
            f"{FOLDER}/{path.name} is not a valid request; it is skipped (fix or delete it)"
        ) from exc
    if path.name != f"{rec.request_id}.json":
        # Two files with one id made a worker claim and publish the same request for ever.
        raise HubQueueError(
            f"{FOLDER}/{path.name} holds request {rec.request_id}, not the one its name says; "
            "it is skipped (fix or delete it)"
        )
    return rec


def moved(rec: HubRequest, move: Move, **update: Any) -> HubRequest:
    """``rec`` after ``move``, with its event in the history."""
    stamp = now()
    fields: dict[str, Any] = {
        "status": move.status,
        "worker_id": move.worker_id,
        "attempts": move.attempts,
        "lease_expires": move.lease_expires,
        "reason": move.reason,
        "updated_at": stamp,
    }
    if move.starts and rec.started_at is None:
        fields["started_at"] = stamp
    if move.finishes:
        fields["finished_at"] = stamp
    if move.event:
        event = RequestEvent(at=stamp, status=move.status, worker_id=move.by, detail=move.detail)
        fields["history"] = [*rec.history, event]
    return rec.model_copy(update={**fields, **update})
