"""A stand-in for ``vllm serve`` / ``llama-server`` / SGLang's launcher: parses the arguments
intima passes, then serves an OpenAI-compatible API for the named model on the given port
(``/v1/models`` lists it; chat answers echo the prompt, judge requests get valid judge JSON).

A model whose name contains ``broken`` fails to load the way a real server does: a line on stderr
and exit code 1. Every start is appended to the file named by ``FAKE_SERVER_LOG`` (one JSON line
with the arguments and the pid), so tests can count starts and check the GPU settings passed;
the worker lends the server that variable only when told to (``--serve-env``).

``/health`` answers 503 while the model "loads" (``--fake-loading N``: for the first N asks, in
which time chat requests get 503 too, as llama-server's do) and 200 after, as vLLM, SGLang and
llama-server do. ``--fake-say TEXT`` prints TEXT first; ``--fake-child FILE`` starts a child
process (as vLLM starts its GPU workers) and writes its pid to FILE. ``--fake-report-token``
adds to the start's line the token ``huggingface_hub.get_token()`` finds, as vLLM would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from fake_vendors import openai_completion


def _option(args: list[str], *names: str) -> str | None:
    for name in names:
        if name in args:
            return args[args.index(name) + 1]
    return None


def main(args: list[str]) -> int:
    model = _option(args, "--served-model-name", "--alias") or args[1]
    host, port = _option(args, "--host") or "127.0.0.1", int(_option(args, "--port") or 0)
    if log := os.environ.get("FAKE_SERVER_LOG"):
        with open(log, "a", encoding="utf-8") as out:
            start: dict[str, Any] = {"args": args, "pid": os.getpid(), "env": sorted(os.environ)}
            if "--fake-report-token" in args:  # what vLLM's huggingface_hub would find
                from huggingface_hub import get_token

                start["token"] = get_token()
            out.write(json.dumps(start))
            out.write("\n")
    if say := _option(args, "--fake-say"):
        print(say, file=sys.stderr, flush=True)
    if child_file := _option(args, "--fake-child"):
        forever = "import time\nwhile True: time.sleep(1)"
        child = subprocess.Popen([sys.executable, "-c", forever])
        Path(child_file).write_text(str(child.pid))
    loading = [int(_option(args, "--fake-loading") or 0)]
    if "broken" in model:
        print(f"ValueError: fake: {model} has an unsupported architecture", file=sys.stderr)
        return 1

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: Any) -> None:
            pass

        def _reply(self, payload: Any, status: int = 200) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                loading[0] -= 1
                self._reply({"status": "loading" if loading[0] >= 0 else "ok"},
                            503 if loading[0] >= 0 else 200)  # fmt: skip
            elif self.path == "/v1/models":
                self._reply({"object": "list", "data": [{"id": model, "object": "model"}]})
            else:
                self._reply({"error": {"message": "no route"}}, 404)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
            if loading[0] >= 0:
                self._reply({"error": {"message": "Loading model"}}, 503)
                return
            if self.path != "/v1/chat/completions" or body.get("model") != model:
                self._reply({"error": {"message": f"model {body.get('model')} not served"}}, 404)
                return
            self._reply(openai_completion(body, str(body["messages"][-1]["content"]), None))

    print(f"serving {model} on {host}:{port}", flush=True)
    ThreadingHTTPServer((host, port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
