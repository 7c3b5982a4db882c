"""retrieve: what the bot remembers that bears on this message (docs/scopes.md):
events strictly in this chat's scope and this persona; the relationship block (seed 000
§4.1) and the user's profile from what this chat may see under the sharing policy; this
group's profile. Injected in seed 003 §5.1's format, every user text quoted as data."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from nodes.deps import ReplyDeps
from nodes.prompt_blocks import render_memory_block, render_relation_block
from nodes.reply.observe import memory_query
from state.context import Context
from state.reply import ReplyState, current_message
from state.slots import RetrieveWrites
from stores.base import profile_view

_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="retrieve")


def retrieve(state: ReplyState, ctx: Context, deps: ReplyDeps) -> RetrieveWrites:
    msg = current_message(state)
    persona_id = state.get("persona_id", msg.persona_id)
    query = memory_query(msg, persona_id, ctx, deps)
    searching = _pool.submit(deps.events.search, query)  # the SQL reads below run meanwhile
    view = profile_view(deps.profiles, msg.user_id, msg.scope, deps.limits.profile_sharing)
    group = (
        deps.profiles.get_group(msg.platform, msg.scope_chat_id)
        if msg.chat_type == "group"
        else None
    )
    hits = searching.result()
    events = [
        (f"{datetime.fromtimestamp(h.event.timestamp, deps.limits.tz):%Y-%m-%d}", h.event.text)
        for h in hits
    ]
    return {
        "relation_block": render_relation_block(view, msg.scope, deps.limits.tz, msg.user_name),
        "memory_block": render_memory_block(view, group, events, msg.scope),
        "memory_ids": [h.event.id for h in hits],
    }


VARIANTS = {"retrieve": {"default": retrieve}}
