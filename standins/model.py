"""An OpenAI-compatible chat-completions stand-in served on 127.0.0.1 that records every
request it gets. Tests point ``GROUPMIND_CHAT_BASE_URL`` at it, so the `llm` variants go
through the real ``langchain-openai`` client and HTTP, as they would to a real endpoint.

What it answers is a ``Script``: a structured-output request (``response_format`` JSON
schema or JSON object, or a single forced function) gets the script's structured answer; a
request with tools gets the script's tool calls on its first round and its final text once
tool results came back.

It can also behave like the servers operators really run into (``Script`` fields):
``json_schema=False`` answers a JSON-schema request with HTTP 500 (llama-cpp-python's
server); ``tools`` = ``"text"`` writes tool calls as JSON text instead of ``tool_calls``
(small local models), ``"ignored"`` answers as if no tools were sent; ``fault`` picks, per
request, ``"http500"``, ``"junk"`` (an answer cut mid-JSON), ``"cutoff"``
(``finish_reason: length``) or ``"slow"`` (answers after ``slow_s``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from standins.serving import loopback

Request = dict[str, Any]
Fault = Literal["http500", "junk", "cutoff", "slow"]


@dataclass
class Script:
    """How the stand-in answers; each callable sees the whole request body."""

    structured: Callable[[Request], dict[str, Any]] = lambda body: {
        "action": "text_reply",
        "reason": "stand-in",
    }
    tool_calls: Callable[[Request], list[dict[str, Any]]] = lambda body: []
    text: Callable[[Request], str] = lambda body: "好的"
    json_schema: bool = True  # False: HTTP 500 for response_format json_schema
    tools: Literal["native", "text", "ignored"] = "native"
    fault: Callable[[Request], Fault | None] = lambda body: None
    slow_s: float = 3.0


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass
class StandIn:
    script: Script = field(default_factory=Script)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def answer(self, body: Request) -> dict[str, Any]:
        with self.lock:
            self.requests.append(body)
        script = self.script
        fault = script.fault(body)
        if fault == "http500":
            raise HttpError(500, "internal server error (stand-in fault)")
        if fault == "junk":
            return _message(content='{"action": "tex')
        if fault == "slow":
            time.sleep(script.slow_s)
        out = self._answer(body)
        if fault == "cutoff":
            out["choices"][0]["finish_reason"] = "length"
        return out

    def _answer(self, body: Request) -> dict[str, Any]:
        script = self.script
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        if script.tools == "ignored":
            tools = []
        forced = body.get("tool_choice")
        kind = body.get("response_format", {}).get("type")
        if kind == "json_schema" and not script.json_schema:
            raise HttpError(500, "response_format: only 'text' and 'json_object' are supported")
        if kind in ("json_schema", "json_object"):
            return _message(content=json.dumps(script.structured(body), ensure_ascii=False))
        if len(tools) == 1 and isinstance(forced, dict):  # structured output, function calling
            calls = [{"name": tools[0], "args": script.structured(body)}]
        else:
            answered = any(m.get("role") == "tool" for m in body.get("messages", []))
            calls = [] if answered or not tools else script.tool_calls(body)
        if calls and script.tools == "text":  # the call as JSON text, no parsed tool_calls
            text = json.dumps([{"name": c["name"], "arguments": c["args"]} for c in calls])
            return _message(content=f"```json\n{text}\n```")
        if calls:
            return _message(calls=calls)
        return _message(content=script.text(body))

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
            status = 200
            try:
                answer = standin.answer(body)
            except HttpError as exc:
                status, answer = exc.status, {"error": {"message": exc.message, "code": status}}
            except (BrokenPipeError, ConnectionResetError):
                return
            payload = json.dumps(answer, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            try:
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (time-out)
                pass

        def log_message(self, *args: Any) -> None:
            pass

    with loopback(Handler, port) as url:
        standin.url = f"{url}/v1"
        yield standin
