"""A recording HTTP proxy in front of a real OpenAI-compatible server (llama-cpp-python's), for
tests that must see exactly which chat requests reached the model."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


class ChatProxy:
    """Forwards every request to ``upstream`` and keeps the body of each chat request it lets
    through, in order. A subclass may hold or drop a chat request in :meth:`admit`."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.chats: list[dict[str, Any]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _forward(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.removeprefix("/v1")
                if method == "POST" and path.endswith("/chat/completions"):
                    payload = json.loads(body)
                    if not proxy.admit(payload):
                        return  # dropped unanswered
                    proxy.chats.append(payload)
                r = httpx.request(method, proxy.upstream + path, content=body, timeout=300,
                                  headers={"content-type": "application/json"})  # fmt: skip
                self.send_response(r.status_code)
                self.send_header("content-type", r.headers.get("content-type", "application/json"))
                self.send_header("content-length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            def do_POST(self) -> None:
                self._forward("POST")

            def do_GET(self) -> None:
                self._forward("GET")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def admit(self, payload: dict[str, Any]) -> bool:
        """Whether to forward this chat request (called before it is recorded)."""
        return True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def chat_calls(self) -> int:
        return len(self.chats)

    @property
    def response_formats(self) -> list[Any]:
        return [c.get("response_format") for c in self.chats]

    def stop(self) -> None:
        self.server.shutdown()


@contextmanager
def running(proxy: ChatProxy) -> Iterator[ChatProxy]:
    proxy.thread.start()
    try:
        yield proxy
    finally:
        proxy.stop()
