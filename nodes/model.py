"""Calling the chat model from a node, the same way everywhere.

- ``structured()``: one way for every structured answer (plan, profile merge). The
  ``STRUCTURED_OUTPUT`` setting picks JSON schema, function calling or JSON mode; ``auto``
  tries them in that order (JSON mode with validation and one repair round) and remembers
  which one the endpoint answered, so later calls start there.
- ``ModelError``: whatever went wrong in a call (connection, time-out, HTTP status, an
  answer cut off at ``max_tokens``, an unparseable answer), as one error that names the
  endpoint. Nodes of the reply graph fall back on it; memory jobs are retried.
- ``Usage``: the tokens each answer reports (the endpoint's ``usage``), summed per node.
- ``text_tool_calls()``: small local models often write a tool call as plain JSON text
  instead of their template's tool-call markup; such a call is recognised.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ValidationError

from nodes.settings import StructuredMode

Method = Literal["json_schema", "function_calling", "json_mode"]
ErrorKind = Literal["connection", "timeout", "http", "length", "parse", "error"]
METHODS: tuple[Method, ...] = ("json_schema", "function_calling", "json_mode")
UNREACHABLE: tuple[ErrorKind, ...] = ("connection", "timeout")  # not worth asking again now
M = TypeVar("M", bound=BaseModel)

# HTTP statuses that may mean "this endpoint does not do that request format": auto then
# tries the next method. Rate limits and gateway errors are not about the format.
FORMAT_STATUSES = {400, 404, 415, 422, 500, 501}
UNSUPPORTED_HINTS = ("response_format", "json_schema", "schema", "tool", "function", "support")

JSON_MODE_HINT = (
    "只输出一个 JSON 对象，不要代码块，不要解释。它必须符合这个 JSON Schema：\n{schema}"
)
REPAIR_PROMPT = "上面的输出不是有效的答案（{error}）。请只输出修正后的 JSON 对象。"


class ModelError(RuntimeError):
    """A model call that gave no usable answer; the message names the endpoint."""

    def __init__(self, endpoint: str, kind: ErrorKind, detail: str) -> None:
        super().__init__(f"model endpoint {endpoint}: {kind}: {detail}")
        self.endpoint, self.kind, self.detail = endpoint, kind, detail
        self.status: int | None = None


@dataclass
class Usage:
    """Tokens reported by the endpoint, over one node's calls."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, message: BaseMessage | None) -> None:
        self.calls += 1
        meta = getattr(message, "usage_metadata", None) or {}
        self.prompt_tokens += int(meta.get("input_tokens", 0) or 0)
        self.completion_tokens += int(meta.get("output_tokens", 0) or 0)

    def by_node(self, node: str, prices: Prices) -> dict[str, Any]:
        """The state's ``usage`` update for one node (summed by the reducer)."""
        if not self.calls:
            return {}
        one: dict[str, Any] = {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
        if prices.configured:
            one["cost"] = prices.cost(self.prompt_tokens, self.completion_tokens)
        return {**one, "nodes": {node: dict(one)}}


@dataclass(frozen=True)
class Prices:
    """Price per 1,000 tokens, for a cost estimate (unset: no estimate)."""

    prompt_per_1k: float | None = None
    completion_per_1k: float | None = None

    @property
    def configured(self) -> bool:
        return self.prompt_per_1k is not None or self.completion_per_1k is not None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return round(
            prompt_tokens / 1000 * (self.prompt_per_1k or 0.0)
            + completion_tokens / 1000 * (self.completion_per_1k or 0.0),
            8,
        )


@dataclass
class StructuredOutput:
    """The deployment's structured-output setting and what the endpoint was seen to accept
    (shared by every node and both graphs of a process)."""

    mode: StructuredMode = "auto"
    works: Method | None = None
    unsupported: set[Method] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def order(self) -> list[Method]:
        if self.mode != "auto":
            return [self.mode]
        with self._lock:
            start = METHODS.index(self.works) if self.works else 0
            return [m for m in METHODS[start:] if m not in self.unsupported] or list(METHODS)

    def record(self, method: Method, *, ok: bool) -> None:
        with self._lock:
            if ok:
                self.works = method
            else:
                self.unsupported.add(method)


def endpoint_of(chat: BaseChatModel) -> str:
    """The base URL a chat model calls, for error messages."""
    url = getattr(chat, "openai_api_base", None) or getattr(chat, "base_url", None)
    return str(url or type(chat).__name__)


def as_model_error(exc: BaseException, endpoint: str) -> ModelError:
    """Any failure of a model call, classified, naming the endpoint."""
    if isinstance(exc, ModelError):
        return exc
    import openai  # the OpenAI-compatible client's errors; imported when one happened

    status: int | None = None
    if isinstance(exc, openai.APITimeoutError):
        kind, detail = "timeout", "no answer within the time-out (CHAT_TIMEOUT_S)"
    elif isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        kind, detail = "connection", f"cannot connect ({cause or exc})"
    elif isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        kind, detail = "http", f"HTTP {status}: {_short(exc.message)}"
    elif isinstance(exc, openai.LengthFinishReasonError):
        kind, detail = "length", "the answer was cut off at max_tokens (CHAT_MAX_TOKENS)"
    elif isinstance(exc, ValidationError | json.JSONDecodeError):
        kind, detail = "parse", f"unparseable answer: {_short(str(exc))}"
    else:
        kind, detail = "error", f"{type(exc).__name__}: {_short(str(exc))}"
    error = ModelError(endpoint, kind, detail)  # type: ignore[arg-type]
    error.status = status
    return error


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call(model: Runnable[Any, Any], messages: Sequence[BaseMessage], endpoint: str) -> AIMessage:
    """One model call; every failure becomes a ModelError naming the endpoint."""
    try:
        answer = model.invoke(list(messages))
    except Exception as exc:  # noqa: BLE001 - classified, never swallowed
        raise as_model_error(exc, endpoint) from exc
    if not isinstance(answer, AIMessage):
        raise ModelError(endpoint, "error", f"expected a chat message, got {type(answer).__name__}")
    if (answer.response_metadata or {}).get("finish_reason") == "length":
        raise ModelError(endpoint, "length", "the answer was cut off at max_tokens")
    return answer


def text(
    chat: BaseChatModel, messages: Sequence[BaseMessage], usage: Usage, endpoint: str = ""
) -> str:
    """A plain-text answer (non-empty), its usage counted."""
    endpoint = endpoint or endpoint_of(chat)
    answer = call(chat, messages, endpoint)
    usage.add(answer)
    said = str(answer.content or "").strip()
    if not said:
        raise ModelError(endpoint, "parse", "empty answer")
    return said


def structured(
    chat: BaseChatModel,
    schema: type[M],
    messages: Sequence[BaseMessage],
    policy: StructuredOutput,
    usage: Usage,
) -> M:
    """The model's answer as ``schema``, by the first method the endpoint handles."""
    endpoint = endpoint_of(chat)
    last: ModelError | None = None
    for method in policy.order():
        try:
            value = _ASK[method](chat, schema, list(messages), usage, endpoint)
        except ModelError as exc:
            last = exc
            if policy.mode != "auto" or exc.kind in (*UNREACHABLE, "length"):
                raise
            if exc.kind == "http":
                if exc.status not in FORMAT_STATUSES:
                    raise
                if any(h in exc.detail.lower() for h in UNSUPPORTED_HINTS):
                    policy.record(method, ok=False)
            continue  # the next method may work on this endpoint
        policy.record(method, ok=True)
        return value
    assert last is not None
    raise last


def _validate(schema: type[M], data: Any, endpoint: str) -> M:
    try:
        if isinstance(data, str):
            return schema.model_validate_json(_json_text(data))
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ModelError(endpoint, "parse", f"unparseable answer: {_short(str(exc))}") from exc


def _by_json_schema(
    chat: BaseChatModel, schema: type[M], messages: list[BaseMessage], usage: Usage, endpoint: str
) -> M:
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
    }
    answer = call(chat.bind(response_format=fmt), messages, endpoint)
    usage.add(answer)
    return _validate(schema, str(answer.content or ""), endpoint)


def _by_function_calling(
    chat: BaseChatModel, schema: type[M], messages: list[BaseMessage], usage: Usage, endpoint: str
) -> M:
    model = chat.bind_tools([schema], tool_choice=schema.__name__)
    answer = call(model, messages, endpoint)
    usage.add(answer)
    calls = answer.tool_calls or text_tool_calls(str(answer.content or ""), {schema.__name__})
    if calls:
        return _validate(schema, calls[0]["args"], endpoint)
    return _validate(schema, str(answer.content or ""), endpoint)  # a bare JSON answer


def _by_json_mode(
    chat: BaseChatModel, schema: type[M], messages: list[BaseMessage], usage: Usage, endpoint: str
) -> M:
    model = chat.bind(response_format={"type": "json_object"})
    hint = JSON_MODE_HINT.format(schema=json.dumps(schema.model_json_schema(), ensure_ascii=False))
    asked = [*messages, HumanMessage(hint)]
    answer = call(model, asked, endpoint)
    usage.add(answer)
    try:
        return _validate(schema, str(answer.content or ""), endpoint)
    except ModelError as exc:  # one repair round, with the validation error
        repair = HumanMessage(REPAIR_PROMPT.format(error=exc.detail))
        again = call(model, [*asked, answer, repair], endpoint)
        usage.add(again)
        return _validate(schema, str(again.content or ""), endpoint)


_ASK = {
    "json_schema": _by_json_schema,
    "function_calling": _by_function_calling,
    "json_mode": _by_json_mode,
}

# A JSON object or a list of them; or chat-template markup a small model echoed back.
_STRUCTURED_START = re.compile(r'\s*(?:\{|\[\s*[{"\[]|<(?:tool_call|tool_response|\|im_start\|))')


def looks_structured(text: str) -> bool:
    """A payload (JSON, tool markup, also in a code fence) rather than a sentence: not a
    chat message."""
    fenced = re.match(r"\s*```[\w-]*\s*\n?", text)
    return bool(_STRUCTURED_START.match(text[fenced.end() :] if fenced else text))


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TOOL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def _json_text(text: str) -> str:
    """The JSON inside an answer: a fenced block, or from the first brace to the last."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    return body[start : end + 1] if 0 <= start < end else body.strip()


def _json_values(text: str) -> list[Any]:
    """Every JSON object or array that starts at a brace in ``text``, outermost first."""
    decoder, found, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                i += 1
                continue
            found.append(value)
            i = end
        else:
            i += 1
    return found


def text_tool_calls(content: str, names: Collection[str]) -> list[ToolCall]:
    """Tool calls written as text (``{"name": ..., "arguments": {...}}``, fenced or inside
    ``<tool_call>`` tags, one or a list); only calls of the given tools count."""
    if not content or "{" not in content:
        return []
    chunks = _TOOL_TAG.findall(content) or _FENCE.findall(content) or [content]
    calls: list[ToolCall] = []
    for chunk in chunks:
        for value in _json_values(chunk):
            for item in value if isinstance(value, list) else [value]:
                if not isinstance(item, dict):
                    continue
                inner: dict[str, Any] = (
                    item["function"] if isinstance(item.get("function"), dict) else item
                )
                name = str(inner.get("name") or inner.get("tool") or "")
                args = inner.get("arguments", inner.get("parameters", inner.get("args", {})))
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except json.JSONDecodeError:
                        continue
                if name in names and isinstance(args, dict):
                    calls.append(
                        ToolCall(
                            name=name, args=args, id=f"text_call_{len(calls)}", type="tool_call"
                        )
                    )
    return calls
