"""A small OpenAI-compatible chat server on 127.0.0.1 that can misbehave on purpose.

Used by the tests (faults: 429 with and without Retry-After, 5xx, hangs, dropped connections,
malformed JSON, empty choices, huge bodies, slow streams) and by the throughput benchmark
(fixed latency). Plain asyncio streams keep its own overhead tiny, so measurements are of
intima, not of this server. Run as a script to serve from another process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

FAULTS = (
    "429_retry_after",
    "429_plain",
    "500",
    "502",
    "503",
    "hang",
    "drop",
    "malformed",
    "empty_choices",
    "huge",
    "slow",
)


@dataclass
class FaultPlan:
    """Per-request fault probabilities; a request's fault is drawn from a seeded RNG.

    ``fail_first``: each distinct prompt fails this many times before it may succeed, which
    makes retry behaviour deterministic in tests.
    """

    rates: dict[str, float] = field(default_factory=dict)
    seed: int = 0
    latency_s: float = 0.0
    hang_s: float = 30.0
    retry_after_s: float = 0.05
    fail_first: int = 0
    fail_first_fault: str = "500"
    always_fail_marker: str | None = None  # prompts containing this always get a 500
    #: Fixed reply text for chat requests (e.g. hostile text for escaping tests).
    reply_text: str | None = None
    #: Rationale of the valid judge JSON sent when a request asks for structured output.
    judge_rationale: str = "Fake judge: nothing notable."
    #: Error bodies quote the request's Authorization header, as a careless proxy might.
    echo_auth: bool = False
    #: What GET /models lists. Empty (the default) lists nothing, so any name is served
    #: unchecked; a test of the model-name check lists the names this server "serves".
    models: tuple[str, ...] = ()
    #: Chat requests wait until this many are in flight at once; from then on every request
    #: goes straight through. Two processes of concurrency 3 both get to work with ``gate=4``:
    #: the first cannot finish everything before the second has sent its own requests.
    gate: int = 0
    #: Replies carry no ``usage`` (as some servers and proxies send them); each counts as a
    #: ``no_usage`` fault.
    omit_usage: bool = False
    #: Replies to these prompts (by their text) carry this ``usage`` instead (a count of 10**19,
    #: say); each counts as a ``bad_usage`` fault.
    usage_for: dict[str, Any] = field(default_factory=dict)
    #: Chat requests wait until the test calls :meth:`FakeOpenAI.open_hold`; ``held`` is set
    #: once one waits. A test can then change the world (cancel a request) while a request is
    #: surely in flight, without timing anything.
    hold: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.rates) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}")


class FakeOpenAI:
    def __init__(self, plan: FaultPlan | None = None, port: int = 0) -> None:
        self.plan = plan or FaultPlan()
        self.port = port
        self.requests = 0
        self.completed = 0
        self.faults: Counter[str] = Counter()
        self.prompts_seen: Counter[str] = Counter()
        self.auth_seen: Counter[str] = Counter()
        self._rng = random.Random(self.plan.seed)
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._auth = ""
        self._in_flight = 0
        self._gate: asyncio.Event | None = None
        self._hold: asyncio.Event | None = None
        #: set once a request waits at the hold (``FaultPlan.hold``)
        self.held = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- lifecycle ----------------------------------------------------------------------------
    def start_in_thread(self) -> FakeOpenAI:
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            # Handlers still inside a "hang" or "slow" fault: end them here, or the interpreter
            # reports them as destroyed while pending when it exits.
            handlers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

        fut = asyncio.run_coroutine_threadsafe(shutdown(), self._loop)
        fut.result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread:
            self._thread.join(5)

    async def _start(self) -> None:
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]

    # -- HTTP ---------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, path, body, auth = request
                self.auth_seen[auth] += 1
                self._auth = auth
                keep = await self._respond(method, path, body, writer)
                if not keep:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _respond(
        self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        if method == "GET" and path.endswith("/models"):
            listed = [{"id": name, "object": "model"} for name in self.plan.models]
            await _send(writer, 200, {"object": "list", "data": listed})
            return True
        if not path.endswith("/chat/completions"):
            await _send(writer, 404, {"error": {"message": f"no route {path}"}})
            return True
        self.requests += 1
        payload = json.loads(body or b"{}")
        prompt = payload["messages"][-1]["content"]
        self.prompts_seen[prompt] += 1
        await self._pass_gate()
        fault = self._draw(prompt)
        if fault:
            self.faults[fault] += 1
            return await self._fault(fault, writer, payload)
        if self.plan.latency_s:
            await asyncio.sleep(self.plan.latency_s)
        await _send(writer, 200, self._completion(payload))
        self.completed += 1
        return True

    def open_hold(self) -> None:
        """Let every request held by ``FaultPlan.hold`` through, and every later one."""
        assert self._loop is not None

        def open_it() -> None:
            if self._hold is None:
                self._hold = asyncio.Event()
            self._hold.set()

        self._loop.call_soon_threadsafe(open_it)

    async def _pass_gate(self) -> None:
        if self.plan.hold:
            if self._hold is None:  # made here, in the server's own loop
                self._hold = asyncio.Event()
            self.held.set()
            await self._hold.wait()
        if not self.plan.gate:
            return
        if self._gate is None:  # made here, in the server's own loop
            self._gate = asyncio.Event()
        self._in_flight += 1
        if self._in_flight >= self.plan.gate:
            self._gate.set()
        await self._gate.wait()
        self._in_flight -= 1

    def _draw(self, prompt: str) -> str | None:
        plan = self.plan
        if plan.always_fail_marker and plan.always_fail_marker in prompt:
            return "500"
        if self.prompts_seen[prompt] <= plan.fail_first:
            return plan.fail_first_fault
        roll = self._rng.random()
        for name, rate in plan.rates.items():
            if roll < rate:
                return name
            roll -= rate
        return None

    async def _fault(
        self, fault: str, writer: asyncio.StreamWriter, payload: dict[str, Any]
    ) -> bool:
        if fault == "429_retry_after":
            await _send(writer, 429, {"error": {"message": "slow down"}},
                        {"Retry-After": f"{self.plan.retry_after_s:g}"})  # fmt: skip
        elif fault == "429_plain":
            await _send(writer, 429, {"error": {"message": "slow down"}})
        elif fault in ("500", "502", "503"):
            echo = f" (you sent {self._auth})" if self.plan.echo_auth else ""
            await _send(writer, int(fault), {"error": {"message": f"server error {fault}{echo}"}})
        elif fault == "hang":
            await asyncio.sleep(self.plan.hang_s)
            return False
        elif fault == "drop":
            body = json.dumps(self._completion(payload)).encode()
            writer.write(_head(200, len(body)) + body[: len(body) // 2])
            await writer.drain()
            return False
        elif fault == "malformed":
            await _send_raw(writer, 200, b'{"id": "x", "choices": [ {"message": ')
        elif fault == "empty_choices":
            await _send(writer, 200, {**self._completion(payload), "choices": []})
        elif fault == "huge":
            await _send(writer, 200, {**self._completion(payload), "padding": "x" * 8_000_000})
            return True
        elif fault == "slow":
            body = json.dumps(self._completion(payload)).encode()
            writer.write(_head(200, len(body)))
            for i in range(0, len(body), 16):
                writer.write(body[i : i + 16])
                await writer.drain()
                await asyncio.sleep(0.01)
            self.completed += 1
        return True

    def _completion(self, payload: dict[str, Any]) -> dict[str, Any]:
        if "response_format" in payload:
            reply = _completion(payload, _judge_json(self.plan.judge_rationale))
        else:
            reply = _completion(payload, self.plan.reply_text)
        prompt = payload["messages"][-1]["content"]
        if prompt in self.plan.usage_for:
            self.faults["bad_usage"] += 1
            reply["usage"] = self.plan.usage_for[prompt]
        elif self.plan.omit_usage:
            self.faults["no_usage"] += 1
            del reply["usage"]
        return reply


class RecordingFake(FakeOpenAI):
    """The fake server, keeping every chat request it answered."""

    def __init__(self, plan: FaultPlan | None = None) -> None:
        super().__init__(plan)
        self.payloads: list[dict[str, Any]] = []

    def _completion(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.payloads.append(payload)
        return super()._completion(payload)


def _judge_json(rationale: str) -> str:
    """A valid judge reply: every rated category 'low'."""
    from intima.core.taxonomy import CATEGORIES

    return json.dumps({**{c: "low" for c in CATEGORIES}, "rationale": rationale})


def _completion(payload: dict[str, Any], reply: str | None = None) -> dict[str, Any]:
    prompt = payload["messages"][-1]["content"]
    text = reply if reply is not None else f"Thank you for telling me. You said: {prompt[:60]}"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": payload.get("model", "fake"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": len(prompt.split()),
            "completion_tokens": len(text.split()),
            "total_tokens": len(prompt.split()) + len(text.split()),
        },
    }


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes, str] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length, auth = 0, ""
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
        elif name.strip().lower() == "authorization":
            auth = value.strip()
    body = await reader.readexactly(length) if length else b""
    return method, path, body, auth


_REASONS = {200: "OK", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
            502: "Bad Gateway", 503: "Service Unavailable"}  # fmt: skip


def _head(status: int, length: int, headers: dict[str, str] | None = None) -> bytes:
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    return (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'X')}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


async def _send(
    writer: asyncio.StreamWriter, status: int, obj: Any, headers: dict[str, str] | None = None
) -> None:
    await _send_raw(writer, status, json.dumps(obj).encode(), headers)


async def _send_raw(
    writer: asyncio.StreamWriter, status: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
    writer.write(_head(status, len(body), headers) + body)
    await writer.drain()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--faults", default="{}", help='JSON rates, e.g. {"500": 0.1}')
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    plan = FaultPlan(rates=json.loads(args.faults), seed=args.seed, latency_s=args.latency)
    server = FakeOpenAI(plan, args.port)

    async def serve() -> None:
        await server._start()
        print(server.port, flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
