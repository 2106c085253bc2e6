"""A loopback OpenAI-compatible chat-completions server with scripted replies.

Speaks ``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 (random port), so tests run
the real ``openai`` client against it. Each request consumes the next :class:`Step` of the script
(the last step repeats when the script runs out). Every request is recorded (path, headers, parsed
body, raw body) so tests can assert what the prompt contained and that the key stayed in the
Authorization header.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    """One scripted answer: a completion (status 200) or an error status, optionally delayed."""

    content: str = ""
    finish_reason: str = "stop"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    prompt_tokens: int = 100
    completion_tokens: int = 50


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes


class FakeOpenAI:
    """Start with ``with FakeOpenAI([Step(...), ...]) as server: server.base_url``."""

    def __init__(self, script: list[Step], model: str = "fake-model"):
        self.script = list(script)
        self.model = model
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._cursor = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_step(self) -> Step:
        with self._lock:
            step = self.script[min(self._cursor, len(self.script) - 1)]
            self._cursor += 1
            return step

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": fake.model, "object": "model", "created": 0, "owned_by": "fake"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw or b"{}")
                with fake._lock:
                    fake.requests.append(Recorded(self.path, dict(self.headers.items()), body, raw))
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if self.path.rstrip("/") != "/v1/chat/completions":
                        self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                        return
                    step = fake._next_step()
                    if step.delay_s:
                        time.sleep(step.delay_s)
                    if step.status != 200:
                        self._send(step.status, {"error": {"message": f"scripted {step.status}",
                                                           "type": "scripted", "code": step.status}},
                                   step.headers)
                        return
                    self._send(200, {
                        "id": f"chatcmpl-{len(fake.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", fake.model),
                        "choices": [{"index": 0, "finish_reason": step.finish_reason,
                                     "message": {"role": "assistant", "content": step.content}}],
                        "usage": {"prompt_tokens": step.prompt_tokens,
                                  "completion_tokens": step.completion_tokens,
                                  "total_tokens": step.prompt_tokens + step.completion_tokens},
                    }, step.headers)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

        return Handler
