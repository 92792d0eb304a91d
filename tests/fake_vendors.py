"""Local stand-ins for hosted vendors' HTTP APIs, on 127.0.0.1, as their documentation describes
them: OpenAI (chat completions, files, batches), Anthropic (messages, message batches) and the
Hugging Face router (OpenAI's chat completions, model ``OWNER/NAME:provider``).

Every chat request is answered with fixed usage (100 tokens in, 10 out) so costs are exact.
``faults`` is a queue: each chat/messages request takes the next one (``429``, ``500``, ``529``,
``hang``, ``refusal``, ``content_filter``, ``ok``, or one of :data:`MALFORMED`: a 200 whose
reply breaks the vendor's format) until it is empty; ``served`` counts the faults sent. Batches
end after ``polls_to_finish`` retrieves unless ``hold`` is set; in the first batch, the first
``expire_first`` items expire and the next ``fail_first`` fail. ``submissions`` counts batch
creations; ``create_faults`` answers the next creations with an error status instead. Batch
listings are paged as the vendors page them (newest first, ``limit`` default 20; OpenAI
``after``, Anthropic ``after_id``/``before_id``, both ``has_more``). ``mangle``, when set,
rewrites a batch's result lines (JSON texts) before they are served, as a hostile or broken
vendor might. ``port`` serves on a given port (a vendor back up where it was down).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

USAGE_IN, USAGE_OUT = 100, 10

#: Replies that break the vendor's wire format, each answering 200 (but ``error_surrogate``, a
#: 400 whose message carries a lone surrogate). For Anthropic, the message's ``content`` plays
#: the part of OpenAI's ``choices``/``message``, and ``input_tokens``/``output_tokens`` that of
#: ``prompt_tokens``/``completion_tokens``.
MALFORMED = (
    "not_json",  # an HTML error page where JSON belongs
    "message_str",  # OpenAI: ``message`` is a string; Anthropic: ``content`` is a string
    "choices_dict",  # OpenAI: ``choices`` is an object; Anthropic: ``content`` is an object
    "usage_lots",  # the prompt's token count is ``"lots"``
    "negative_usage",  # the reply's token count is -3
    "surrogate",  # the text carries a lone surrogate (``\ud800`` in the JSON)
    "error_surrogate",  # an HTTP 400 whose error message carries one
)


def judge_reply() -> dict[str, str]:
    from intima.core.taxonomy import CATEGORIES

    return {**{c: "low" for c in CATEGORIES}, "rationale": "Fake vendor judge."}


class FakeVendor:
    """``vendor`` is ``openai``, ``anthropic`` or ``hf`` (the router: OpenAI's wire format)."""

    def __init__(self, vendor: str, key: str, port: int = 0) -> None:
        self.vendor, self.key = vendor, key
        self.faults: deque[str] = deque()
        self.served: Counter[str] = Counter()
        self.hang_s = 5.0
        self.chat_bodies: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.rejected_auth = 0
        self.submissions = 0
        self.polls = 0
        self.polls_to_finish = 1
        self.hold = threading.Event()  # set: batches stay in progress
        self.polled = threading.Event()  # set at the first retrieve of a batch
        self.expire_first = 0
        self.refuse_first_batch = False  # OpenAI: the first batch fails validation as a whole
        self.fail_first = 0
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_items: dict[str, list[dict[str, Any]]] = {}
        self.mangle: Callable[[list[str]], list[str]] | None = None
        self._lock = threading.Lock()
        #: statuses answered to the next batch creations (``500``: a vendor error after which
        #: the batch may or may not exist; ``400``: a refusal), one per creation
        self.create_faults: deque[int] = deque()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        """What a spec's ``@URL`` names: OpenAI's and the router's include ``/v1``; Anthropic's
        SDK adds ``/v1/messages`` itself."""
        root = f"http://127.0.0.1:{self.port}"
        return root if self.vendor == "anthropic" else f"{root}/v1"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- routing ---------------------------------------------------------------------------
    def route(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        query: dict[str, str] | None = None,
    ) -> Reply:
        if not self._authorised(headers):
            self.rejected_auth += 1
            return self._error(401, "authentication_error", "invalid x-api-key / bearer token")
        self.headers_seen.append(headers)
        if self.vendor == "anthropic":
            return self._anthropic(method, path, body, query or {})
        return self._openai(method, path, headers, body, query or {})

    def _authorised(self, headers: dict[str, str]) -> bool:
        if self.vendor == "anthropic":
            # The documented header is x-api-key; anthropic SDK 2.x sends the key as a bearer
            # token instead, which the API also takes.
            sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix(
                "Bearer "
            )
            return sent == self.key and bool(headers.get("anthropic-version"))
        return headers.get("authorization") == f"Bearer {self.key}"

    def _openai(
        self, method: str, path: str, headers: dict[str, str], body: bytes, query: dict[str, str]
    ) -> Reply:
        if method == "POST" and path == "/v1/chat/completions":
            return self._chat(json.loads(body))
        if self.vendor != "openai":
            return self._error(404, "not_found", f"no route {path}")
        if method == "POST" and path == "/v1/files":
            return self._upload(headers.get("content-type", ""), body)
        if method == "POST" and path == "/v1/batches":
            return self._create_faulted() or self._create_openai_batch(json.loads(body))
        if method == "GET" and path == "/v1/batches":
            return Reply(200, self._listing(query))
        if method == "GET" and path.startswith("/v1/batches/"):
            return Reply(200, self._poll(path.rsplit("/", 1)[1]))
        if method == "GET" and path.startswith("/v1/files/") and path.endswith("/content"):
            return Reply(200, raw=self.files[path.split("/")[3]])
        return self._error(404, "not_found", f"no route {path}")

    def _anthropic(self, method: str, path: str, body: bytes, query: dict[str, str]) -> Reply:
        if method == "POST" and path == "/v1/messages":
            return self._chat(json.loads(body))
        if method == "POST" and path == "/v1/messages/batches":
            return self._create_faulted() or self._create_anthropic_batch(json.loads(body))
        parts = path.split("/")
        if method == "GET" and path == "/v1/messages/batches":
            return Reply(200, self._listing(query))
        if method == "GET" and path.startswith("/v1/messages/batches/"):
            if parts[-1] == "results":
                return Reply(200, raw=self._anthropic_results(parts[-2]))
            return Reply(200, self._poll(parts[-1]))
        return self._error(404, "not_found_error", f"no route {path}")

    # -- chat ------------------------------------------------------------------------------
    def _chat(self, body: dict[str, Any]) -> Reply:
        sampling = {"temperature", "top_p", "top_k"} & set(body)
        if self.vendor == "anthropic" and sampling:  # API version 2026-10-21 removed them
            return self._error(400, "invalid_request_error", f"{min(sampling)} is not supported")
        with self._lock:
            self.chat_bodies.append(body)
            fault = self.faults.popleft() if self.faults else None
            if fault is not None:
                self.served[fault] += 1
        if fault in MALFORMED:
            return self._malformed(body, fault)
        if fault == "hang":
            time.sleep(self.hang_s)
            return Reply(200, self._answer(body, None))
        if fault in ("429", "500", "529"):
            kind = {"429": "rate_limit_error", "500": "api_error", "529": "overloaded_error"}
            extra = {"retry-after": "0"} if fault == "429" else {}
            return self._error(int(fault), kind[fault], f"fake {fault}", extra)
        return Reply(200, self._answer(body, fault))

    def _malformed(self, body: dict[str, Any], fault: str) -> Reply:
        """A reply that breaks the vendor's format in the way ``fault`` names."""
        if fault == "not_json":
            return Reply(200, raw=b"<html><body>502 Bad Gateway</body></html>")
        if fault == "error_surrogate":
            return self._error(400, "invalid_request_error", "bad \ud800 request")
        answer = self._answer(body, None)
        anthropic = self.vendor == "anthropic"
        tokens = answer["usage"]
        if fault == "usage_lots":
            tokens["input_tokens" if anthropic else "prompt_tokens"] = "lots"
        elif fault == "negative_usage":
            tokens["output_tokens" if anthropic else "completion_tokens"] = -3
        elif anthropic:
            block = answer["content"][0]
            if fault == "message_str":
                answer["content"] = block.get("text", "text")
            elif fault == "choices_dict":
                answer["content"] = block
            elif block["type"] == "text":
                block["text"] += " \ud800"
            else:
                block["input"]["rationale"] += " \ud800"
        else:
            message = answer["choices"][0]["message"]
            if fault == "message_str":
                answer["choices"][0]["message"] = message["content"]
            elif fault == "choices_dict":
                answer["choices"] = answer["choices"][0]
            else:
                message["content"] += " \ud800"
        return Reply(200, answer)

    def _answer(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        prompt = str(body["messages"][-1]["content"])
        if self.vendor == "anthropic":
            return anthropic_message(body, prompt, refuse=fault == "refusal")
        return openai_completion(body, prompt, fault)

    def _error(
        self, status: int, kind: str, message: str, headers: dict[str, str] | None = None
    ) -> Reply:
        if self.vendor == "anthropic":
            payload = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            payload = {"error": {"message": message, "type": kind, "code": None}}
        return Reply(status, payload, headers=headers or {})

    # -- batches ---------------------------------------------------------------------------
    def _create_faulted(self) -> Reply | None:
        with self._lock:
            status = self.create_faults.popleft() if self.create_faults else None
        if status is None:
            return None
        kind = "api_error" if status >= 500 else "invalid_request_error"
        return self._error(status, kind, f"fake {status} to a batch creation")

    def _upload(self, content_type: str, body: bytes) -> Reply:
        msg = BytesParser().parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
        )
        fields = {p.get_param("name", header="content-disposition"): p for p in msg.get_payload()}
        data = fields["file"].get_payload(decode=True)
        with self._lock:  # two uploads at once must not share a number
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = data
        return Reply(200, {"id": file_id, "object": "file", "bytes": len(data),
                           "created_at": int(time.time()), "filename": "batch.jsonl",
                           "purpose": fields["purpose"].get_payload(), "status": "processed"})  # fmt: skip

    def _create_openai_batch(self, body: dict[str, Any]) -> Reply:
        lines = [json.loads(x) for x in self.files[body["input_file_id"]].splitlines() if x]
        items = [{"custom_id": x["custom_id"], "body": x["body"]} for x in lines]
        batch = {"id": "", "object": "batch",
                 "endpoint": body["endpoint"], "input_file_id": body["input_file_id"],
                 "completion_window": body["completion_window"], "status": "in_progress",
                 "metadata": body.get("metadata"),
                 "created_at": int(time.time()), "output_file_id": None, "error_file_id": None,
                 "request_counts": {"total": len(items), "completed": 0, "failed": 0}}  # fmt: skip
        return Reply(200, self._register(batch, items))

    def _create_anthropic_batch(self, body: dict[str, Any]) -> Reply:
        items = [{"custom_id": r["custom_id"], "body": r["params"]} for r in body["requests"]]
        return Reply(200, self._register(_message_batch("", len(items)), items))

    def _listing(self, query: dict[str, str]) -> dict[str, Any]:
        """One page, newest first, as both vendors list them: ``limit`` batches after the cursor
        (OpenAI ``after``, Anthropic ``after_id``) or before ``before_id`` (Anthropic)."""
        with self._lock:
            ids = list(reversed(self.batches))
        limit = int(query.get("limit", "20"))
        after = query.get("after") or query.get("after_id")
        if before := query.get("before_id"):
            ids = ids[: ids.index(before)][-limit:]
            more = bool(ids) and ids[0] != next(reversed(self.batches))
        else:
            ids = ids[ids.index(after) + 1 :] if after else ids
            ids, more = ids[:limit], len(ids) > limit
        data = [self.batches[i] for i in ids]
        first, last = (ids[0], ids[-1]) if ids else (None, None)
        listing = {"data": data, "has_more": more, "first_id": first, "last_id": last}
        return {"object": "list", **listing} if self.vendor == "openai" else listing

    def add_foreign_batches(self, count: int, n_items: int, *, ended: bool = True) -> None:
        """``count`` batches of ``n_items`` requests that someone else submitted (no metadata,
        their own custom ids), newer than every batch so far, ended (or, ``ended=False``, in
        progress until ``hold`` is cleared and they are polled); not counted as
        ``submissions``."""
        prefix = "msgbatch" if self.vendor == "anthropic" else "batch"
        for k in range(count):
            items = [{"custom_id": f"other-{k}-{i}",
                      "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}
                     for i in range(n_items)]  # fmt: skip
            batch: dict[str, Any]
            if self.vendor == "anthropic":
                batch = _message_batch(f"{prefix}_o{k}", n_items)
            else:
                batch = {"id": f"{prefix}_o{k}", "object": "batch", "status": "in_progress",
                         "endpoint": "/v1/chat/completions", "input_file_id": "file-none",
                         "completion_window": "24h", "metadata": None,
                         "created_at": int(time.time()), "output_file_id": None,
                         "error_file_id": None,
                         "request_counts": {"total": n_items, "completed": 0, "failed": 0}}  # fmt: skip
            with self._lock:
                self.batches[batch["id"]] = batch
                self.batch_items[batch["id"]] = items
                if ended:
                    self._finish(batch)

    def _register(self, batch: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
        """Numbers the batch under the lock: two creations served at once by the threading
        server must not both take the next number (one would overwrite the other)."""
        prefix = "msgbatch" if self.vendor == "anthropic" else "batch"
        with self._lock:
            self.submissions += 1
            batch["id"] = f"{prefix}_{self.submissions}"
            self.batches[batch["id"]] = batch
            self.batch_items[batch["id"]] = items
        return batch

    def _poll(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            self.polls += 1
            self.polled.set()
            batch = self.batches[batch_id]
            if not self.hold.is_set() and self.polls >= self.polls_to_finish:
                self._finish(batch)
            return batch

    def _outcomes(self, batch_id: str) -> list[str]:
        items = self.batch_items[batch_id]
        if not batch_id.endswith("_1"):
            return ["ok"] * len(items)
        bad = ["expired"] * self.expire_first + ["failed"] * self.fail_first
        return (bad + ["ok"] * len(items))[: len(items)]

    def _finish(self, batch: dict[str, Any]) -> None:
        items = self.batch_items[batch["id"]]
        outcomes = self._outcomes(batch["id"])
        if batch.get("type") == "message_batch":
            if batch["processing_status"] == "ended":
                return
            root = f"http://127.0.0.1:{self.port}"
            counts = {"processing": 0, "succeeded": outcomes.count("ok"),
                      "errored": outcomes.count("failed"), "canceled": 0,
                      "expired": outcomes.count("expired")}  # fmt: skip
            batch.update(processing_status="ended", ended_at=datetime.now(UTC).isoformat(),
                         results_url=f"{root}/v1/messages/batches/{batch['id']}/results",
                         request_counts=counts)  # fmt: skip
            return
        if batch["status"] != "in_progress":
            return
        if self.refuse_first_batch and batch["id"].endswith("_1"):
            error = {"code": "invalid_request", "message": "fake: the input file was refused"}
            batch.update(status="failed", errors={"object": "list", "data": [error]})
            return
        out, err = [], []
        for n, (item, outcome) in enumerate(zip(items, outcomes, strict=True)):
            line: dict[str, Any] = {"id": f"batch_req_{n}", "custom_id": item["custom_id"]}
            if outcome == "ok":
                prompt = str(item["body"]["messages"][-1]["content"])
                body = openai_completion(item["body"], prompt, None)
                out.append({**line, "response": {"status_code": 200, "body": body}, "error": None})
            elif outcome == "failed":
                body = {"error": {"message": "fake invalid request", "type": "invalid_request"}}
                err.append({**line, "response": {"status_code": 400, "body": body}, "error": None})
            else:
                error = {"code": "batch_expired", "message": "This request could not be executed "
                         "before the completion window expired."}  # fmt: skip
                err.append({**line, "response": None, "error": error})
        batch["output_file_id"] = self._file(out, mangle=self.mangle)
        batch["error_file_id"] = self._file(err) if err else None
        batch["status"] = "expired" if "expired" in outcomes else "completed"
        batch["request_counts"] = {"total": len(items), "completed": len(out), "failed": len(err)}

    def _file(
        self, lines: list[dict[str, Any]], mangle: Callable[[list[str]], list[str]] | None = None
    ) -> str:
        file_id = f"file-out-{len(self.files) + 1}"
        texts = [json.dumps(x) for x in lines]
        texts = mangle(texts) if mangle else texts
        self.files[file_id] = "".join(x + "\n" for x in texts).encode()
        return file_id

    def _anthropic_results(self, batch_id: str) -> bytes:
        lines: list[str] = []
        items = self.batch_items[batch_id]
        for item, outcome in zip(items, self._outcomes(batch_id), strict=True):
            if outcome == "ok":
                prompt = str(item["body"]["messages"][-1]["content"])
                message = anthropic_message(item["body"], prompt, refuse=False)
                result: dict[str, Any] = {"type": "succeeded", "message": message}
            elif outcome == "failed":
                error = {"type": "invalid_request_error", "message": "fake invalid request"}
                result = {"type": "errored", "error": {"type": "error", "error": error}}
            else:
                result = {"type": "expired"}
            lines.append(json.dumps({"custom_id": item["custom_id"], "result": result}))
        lines = self.mangle(lines) if self.mangle else lines
        return "".join(x + "\n" for x in lines).encode()


def _message_batch(batch_id: str, n_items: int) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {"id": batch_id, "type": "message_batch",
            "processing_status": "in_progress", "created_at": now.isoformat(),
            "expires_at": (now + timedelta(hours=24)).isoformat(), "ended_at": None,
            "results_url": None, "archived_at": None, "cancel_initiated_at": None,
            "request_counts": {"processing": n_items, "succeeded": 0, "errored": 0,
                               "canceled": 0, "expired": 0}}  # fmt: skip


def openai_completion(body: dict[str, Any], prompt: str, fault: str | None) -> dict[str, Any]:
    structured = (body.get("response_format") or {}).get("type") == "json_schema"
    text: str | None = json.dumps(judge_reply()) if structured else f"Echo: {prompt[:40]}"
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    finish = "stop"
    if fault == "refusal":
        message.update(content=None, refusal="I can't help with that.")
    elif fault == "content_filter":
        message["content"], finish = "", "content_filter"
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "logprobs": None}],
            "usage": {"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT,
                      "total_tokens": USAGE_IN + USAGE_OUT}}  # fmt: skip


def anthropic_message(body: dict[str, Any], prompt: str, *, refuse: bool) -> dict[str, Any]:
    forced = (body.get("tool_choice") or {}).get("type") == "tool"
    if refuse:
        content: list[dict[str, Any]] = []
        stop = "refusal"
    elif forced:
        name = body["tool_choice"]["name"]
        content = [{"type": "tool_use", "id": "toolu_fake", "name": name, "input": judge_reply()}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": f"Echo: {prompt[:40]}"}], "end_turn"
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": body["model"],
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT}}  # fmt: skip


class Reply:
    def __init__(
        self,
        status: int,
        payload: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status, self.headers = status, headers or {}
        self.body = raw if raw is not None else json.dumps(payload).encode()


def _handler(vendor: FakeVendor) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            path, _, query = self.path.partition("?")
            reply = vendor.route(self.command, path, headers, body, dict(parse_qsl(query)))
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        do_GET = do_POST = _serve

    return Handler
