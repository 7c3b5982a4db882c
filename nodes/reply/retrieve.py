"""retrieve: what the bot remembers that bears on this message, strictly in this chat's
scope and this persona (DESIGN.md "Isolation"): the user's relationship block (seed 000
§4.1), the user and group profiles, and the most relevant events, injected in seed 003
§5.1's format, quoted as data."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from nodes.deps import Deps
from nodes.prompt_blocks import render_memory_block, render_relation_block
from nodes.reply.observe import without_addressing
from state.context import Context
from state.reply import ChatMessage, ReplyState
from stores.base import EventQuery

_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="retrieve")


def retrieve(state: ReplyState, ctx: Context, deps: Deps) -> dict[str, Any]:
    msg = ChatMessage.model_validate(state["msg"])
    persona_id = state.get("persona_id", msg.persona_id)
    addressing = {deps.persona_name(persona_id), deps.bot_id}
    query = EventQuery(
        text=without_addressing(msg.content, addressing) or msg.content,  # "@小爱" is no topic
        chat_type=msg.chat_type,
        chat_id=msg.scope_chat_id,
        persona_id=persona_id,  # strict: only this persona's conversations
        top_k=ctx.auto_top_k or deps.auto_top_k,
    )
    searching = _pool.submit(deps.events.search, query)  # the SQL reads below run meanwhile
    user = deps.profiles.get_profile("user", msg.user_id)
    group = (
        deps.profiles.get_profile("group", msg.scope_chat_id) if msg.chat_type == "group" else None
    )
    relation = render_relation_block(deps, msg.user_id, deps.tz, msg.user_name)
    hits = searching.result()
    events = [
        (f"{datetime.fromtimestamp(h.event.timestamp, deps.tz):%Y-%m-%d}", h.event.text)
        for h in hits
    ]
    return {
        "relation_block": relation,
        "memory_block": render_memory_block(
            user.summary if user else "", group.summary if group else "", events
        ),
        "memory_ids": [h.event.id for h in hits],
    }


VARIANTS = {"retrieve": {"default": retrieve}}
