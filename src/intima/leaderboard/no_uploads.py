"""The Space takes no files: an ASGI middleware in front of Gradio that refuses its upload
routes and any multipart body.

Nothing on the board asks for a file, yet Gradio serves ``POST /gradio_api/upload`` (and
``/process_recording``, and multipart bodies to component routes) to anyone, without a token,
and keeps what it is sent in its temporary folder: a visitor could fill the Space's disk. The
app is launched with this middleware (``app_kwargs={"middleware": [...]}``), so such a request
is answered 403 before Gradio reads a byte of its body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_UPLOAD_PATHS = ("/upload", "/process_recording")
REFUSAL = b"This leaderboard takes no uploads."


class NoUploads:
    """Answer 403 to Gradio's upload routes and to any multipart request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http" and is_upload(scope):
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", str(len(REFUSAL)).encode())]})  # fmt: skip
            await send({"type": "http.response.body", "body": REFUSAL})
            return
        await self.app(scope, receive, send)


def is_upload(scope: Scope) -> bool:
    path = str(scope.get("path", "")).rstrip("/")
    if path.endswith(_UPLOAD_PATHS):
        return True
    return any(
        name.lower() == b"content-type" and value.lower().lstrip().startswith(b"multipart/")
        for name, value in scope.get("headers") or ()
    )


def launch_kwargs() -> dict[str, Any]:
    """What ``Blocks.launch`` needs to take no uploads: this middleware, and no file size."""
    from starlette.middleware import Middleware

    return {"app_kwargs": {"middleware": [Middleware(NoUploads)]}, "max_file_size": 0}
