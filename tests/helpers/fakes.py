"""Model fakes, for unit tests of the code around a model. No network, ever."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


class Down:
    """A real store whose ``method`` fails ``failures`` times (its backend unreachable),
    then works again; everything else is the store's own."""

    method = ""

    def __init__(self, inner: Any, failures: int = 1) -> None:
        self.inner, self.failures = inner, failures

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name != self.method:
            return attr

        def failing(*args: Any, **kwargs: Any) -> Any:
            if self.failures:
                self.failures -= 1
                raise ConnectionError("chroma unavailable")
            return attr(*args, **kwargs)

        return failing


class DownEvents(Down):
    """An event store behind an outage that lasts ``failures`` upserts."""

    method = "upsert"


class DownSearch(Down):
    """An event store whose searches fail ``failures`` times (Chroma unreadable)."""

    method = "search"


class FakeChat(BaseChatModel):
    """Answers with scripted messages in order; records every prompt it was sent.

    A script entry is a string (plain text), a dict (a structured answer: JSON text when
    the request asks for a ``response_format``, else the arguments of a tool call; a
    ``"__tool__"`` key names the tool, else ``tool_name``), a list of such dicts (several
    calls in one message), or an Exception to raise. ``bind_tools`` returns the model itself so structured output works.
    """

    script: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    tool_name: str = "ProfileUpdate"

    @property
    def _llm_type(self) -> str:
        return "fake-chat"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        entry = self.script[min(len(self.prompts) - 1, len(self.script) - 1)]
        if isinstance(entry, Exception):
            raise entry
        if isinstance(entry, dict) and "response_format" in kwargs:  # JSON schema / mode
            answer = {k: v for k, v in entry.items() if k != "__tool__"}
            message = AIMessage(content=json.dumps(answer, ensure_ascii=False))
        elif isinstance(entry, dict | list):
            calls = [
                {
                    "name": one.get("__tool__", self.tool_name),
                    "args": {k: v for k, v in one.items() if k != "__tool__"},
                    "id": f"call-{len(self.prompts)}-{n}",
                    "type": "tool_call",
                }
                for n, one in enumerate(entry if isinstance(entry, list) else [entry])
            ]
            message = AIMessage(content="", tool_calls=calls)
        else:
            message = AIMessage(content=str(entry))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeChat:  # type: ignore[override]
        return self

    def last_prompt(self) -> str:
        return "\n".join(str(m.content) for m in self.prompts[-1])
