"""The host graph in-process (real SQLite and Chroma, the rule variants): what a host
framework that keeps its own model asks of groupmind's memory, op by op."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graphs.host import build_host_graph
from graphs.memory import build_memory_graph
from groupmind.settings import Settings
from groupmind.threads import thread_config
from groupmind.worker import MemoryWorker
from nodes.deps import Deps
from nodes.prompt_blocks import DATA_HEADER, MEMORY_HEADER
from state.context import Context
from state.validation import InputError
from tests.graphs.reply_helpers import message, with_rules


class Host:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.graph = build_host_graph(deps, checkpointer=InMemorySaver())  # type: ignore[arg-type]

    def run(self, op: str, msg: dict[str, Any], *, thread: bool = True, **more: Any) -> Any:
        # a stateless run (as on a server): a thread of its own, used once
        stream = f"qq:group:{msg['chat_id']}"
        once = {"configurable": {"thread_id": str(uuid.uuid4())}}
        config = thread_config(stream, self.deps.limits.bot_id) if thread else once
        return self.graph.invoke({"message": msg, **more}, config, context=Context(op=op))  # type: ignore[arg-type]

    def remembered(self) -> None:
        memory = build_memory_graph(self.deps, checkpointer=InMemorySaver())
        settings = Settings(_env_file=None)  # type: ignore[call-arg]
        MemoryWorker.one_bot(memory, self.deps, settings).drain()


def test_capture_recall_record_and_tools(deps: Deps) -> None:
    deps = with_rules(deps, buffer_max=8)  # a full buffer goes to memory
    host = Host(deps)
    told = [message(f"今天天气不错，第{i}句") for i in range(3)]
    fact = message("我下个月要去成都参加马拉松", user_id="10002", user_name="阿强")
    for m in [*told, fact, *(message(f"闲聊{i}") for i in range(6))]:
        host.run("capture", m)
    again = host.run("capture", fact)  # captured twice: taken once
    assert again["duplicate"] is True
    stored = deps.messages.older("qq:group:1001", "default", before_seq=None, limit=50)  # type: ignore[union-attr]
    assert [m.message_id for m in stored].count(fact["message_id"]) == 1
    host.remembered()

    asked = message("@bot 阿强下个月去哪？", mentions=["bot"], user_id="10003", user_name="莉莉")
    host.run("capture", asked)
    got = host.run("recall", asked, thread=False)
    assert "成都" in got["recall_text"] and got["memory_ids"]
    text = got["recall_text"]
    assert text.index(DATA_HEADER) < text.index("莉莉") and MEMORY_HEADER in text
    assert got["context_ids"] and got["context_text"] in text

    answer = {**asked, "message_id": f"{asked['message_id']}#reply", "user_id": "bot",
              "user_name": "小爱", "content": "阿强下个月去成都跑马拉松。",
              "reply_to": asked["message_id"], "mentions": []}  # fmt: skip
    out = host.run("record", answer, host_memory_ids=got["memory_ids"])
    assert out["handed_off"]  # the buffer went to memory with the host's answer
    values = host.graph.get_state(thread_config("qq:group:1001", deps.limits.bot_id)).values
    outcome = values["handled"][asked["message_id"]]
    assert outcome["reply"] == answer["content"] and outcome["memory_ids"] == got["memory_ids"]
    line = deps.messages.get("qq:group:1001", "default", [answer["message_id"]])  # type: ignore[union-attr]
    assert line and line[0].from_bot and line[0].reply_to == asked["message_id"]
    job = deps.jobs.get(out["handed_off"][-1])  # type: ignore[union-attr]
    assert job is not None and "我回复了" in json.dumps(job.payload, ensure_ascii=False)

    search = {"name": "search_events", "args": {"query": "马拉松"}}
    found = host.run("tool", asked, thread=False, host_tool=search)
    assert "成都" in found["tool_result"] and "不是指令" in found["tool_result"]
    elsewhere = {**asked, "chat_id": "2002"}  # another group: its own scope, whatever asked
    other = host.run("tool", elsewhere, thread=False, host_tool=search)
    assert "成都" not in other["tool_result"]
    with pytest.raises(InputError, match="host_tool.name"):  # the run fails, naming the field
        host.run("tool", asked, thread=False, host_tool={"name": "drop_tables", "args": {}})
