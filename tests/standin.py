"""An OpenAI-compatible chat-completions stand-in served on 127.0.0.1 that records every
request it gets. Tests point ``GROUPMIND_CHAT_BASE_URL`` at it, so the `llm` variants go
through the real ``langchain-openai`` client and HTTP, as they would to a real endpoint.

What it answers is a ``Script``: a structured-output request (``response_format`` JSON
schema, or a single forced function) gets the script's structured answer; a request with
tools gets the script's tool calls on its first round and its final text once tool results
came back.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Request = dict[str, Any]


@dataclass
class Script:
    """How the stand-in answers; each callable sees the whole request body."""

    structured: Callable[[Request], dict[str, Any]] = lambda body: {
        "action": "text_reply",
        "reason": "stand-in",
    }
    tool_calls: Callable[[Request], list[dict[str, Any]]] = lambda body: []
    text: Callable[[Request], str] = lambda body: "好的"


@dataclass
class StandIn:
    script: Script = field(default_factory=Script)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def answer(self, body: Request) -> dict[str, Any]:
        with self.lock:
            self.requests.append(body)
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        forced = body.get("tool_choice")
        if body.get("response_format", {}).get("type") == "json_schema":
            return _message(content=json.dumps(self.script.structured(body), ensure_ascii=False))
        if len(tools) == 1 and isinstance(forced, dict):  # with_structured_output, function calling
            return _message(calls=[{"name": tools[0], "args": self.script.structured(body)}])
        answered = any(m.get("role") == "tool" for m in body.get("messages", []))
        calls = [] if answered or not tools else self.script.tool_calls(body)
        if calls:
            return _message(calls=calls)
        return _message(content=self.script.text(body))

    def since(self, start: int) -> list[Request]:
        with self.lock:
            return self.requests[start:]


def _message(content: str = "", calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    tool_calls = [
        {"id": f"call_{n}", "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)}}
        for n, c in enumerate(calls or [])
    ]  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "created": 0,
        "model": "standin",
        "choices": [
            {"index": 0, "message": message,
             "finish_reason": "tool_calls" if tool_calls else "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip


@contextmanager
def serve(script: Script | None = None, port: int = 0) -> Iterator[StandIn]:
    """A running stand-in on 127.0.0.1 (a free port unless one is given); ``standin.url``
    is its base URL."""
    standin = StandIn(script or Script())

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)
                return
            payload = json.dumps(standin.answer(body), ensure_ascii=False).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    standin.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
