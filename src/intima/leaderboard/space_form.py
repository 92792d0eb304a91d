"""The Space's request form: its backend writes to the requests repo, rate-limited, and
shows every field back as escaped text (:mod:`intima.leaderboard.space`)."""

from __future__ import annotations

import sys
from typing import Protocol

from markupsafe import Markup

from intima.core.errors import IntimaError
from intima.service.public import RateLimit


class SpaceSettings(Protocol):
    """What the form reads of the Space's settings (``space.SpaceSettings``)."""

    @property
    def requests(self) -> str | None: ...
    @property
    def require_review(self) -> bool: ...
    @property
    def per_session(self) -> int: ...
    @property
    def per_hour(self) -> int: ...


def _log(message: str) -> None:
    print(f"intima space: {message}", file=sys.stderr, flush=True)


class HubRequests:
    """The form's backend: the requests repo, rate-limited; every field shown back as text."""

    def __init__(self, settings: SpaceSettings, token: str) -> None:
        from intima.service.hub_queue import HubQueue

        assert settings.requests is not None
        self.queue = HubQueue(settings.requests, token, require_review=settings.require_review)
        self.limit = RateLimit(settings.per_session, settings.per_hour)

    def __call__(self, spec: str, requester: str, session: str) -> Markup:
        asked = _fields([("Model spec", spec), ("Requested by", requester.strip() or "anonymous")])
        try:
            self.limit.take(session or "anonymous")
            rec = self.queue.add(spec, requester.strip() or None)
        except IntimaError as exc:
            return Markup(
                '<div class="intima-error" role="alert"><p>Rejected: {}</p>{}</div>'
            ).format(exc, asked)
        except Exception as exc:  # never show a traceback (or a token) to the public
            _log(f"request not queued ({type(exc).__name__})")
            return Markup(
                '<div class="intima-error" role="alert"><p>Rejected: the request could not be '
                "queued just now; try again later.</p>{}</div>"
            ).format(asked)
        head = "Queued request" if rec.is_new else "Already requested"
        if not rec.is_new and rec.status == "cancelled":
            head = "Not queued: the maintainers cancelled this request; it stays cancelled"
        shown = _fields([
            ("Request", rec.request_id), ("Model spec", rec.spec),
            ("Requested by", rec.requester or "anonymous"), ("Dataset", rec.dataset),
            ("Status", rec.status),
        ])  # fmt: skip
        return Markup('<div class="intima-ok" role="status"><p>{}.</p>{}</div>').format(head, shown)


def _fields(pairs: list[tuple[str, str]]) -> Markup:
    body = Markup("").join(Markup("<dt>{}</dt><dd>{}</dd>").format(k, v) for k, v in pairs)
    return Markup('<dl class="intima-fields">{}</dl>').format(body)


def request_backend(
    settings: SpaceSettings, token: str | None
) -> tuple[HubRequests | None, str | None]:
    """The form's backend, or why the form is read-only."""
    if settings.requests is None:
        return None, "Requests are closed: this leaderboard was deployed without a requests repo."
    if not token:
        return None, (
            "Requests are read-only: this Space has no HF_TOKEN secret, so it cannot write to "
            f"{settings.requests}. Ask the maintainers, or use `intima request --queue "
            f"{settings.requests}`."
        )
    return HubRequests(settings, token), None
