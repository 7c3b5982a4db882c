"""host_tool: one of groupmind's memory tools run for the host's model (``search_events``,
``get_profile``, ``update_user_impression``, ``remember_user_info``), scoped exactly as in
the reply graph: the chat and persona come from the message the host is answering (a
state built here, never from the arguments), whatever the arguments say."""

from __future__ import annotations

import json
from typing import Any

from nodes.deps import ReplyDeps
from nodes.reply.observe import validate_message
from nodes.reply.tools import DATA_NOTE, TOOL_NAMES, make_tools
from state.reply import ReplyState
from state.validation import InputError


def host_tool(state: ReplyState, deps: ReplyDeps) -> dict[str, Any]:
    waiting: Any = state.get("message")
    raw = waiting[-1] if isinstance(waiting, list) and waiting else waiting
    msg = validate_message(raw, deps)
    call = state.get("host_tool") or {}
    name, args = call.get("name"), call.get("args") or {}
    if name not in TOOL_NAMES:
        raise InputError("host_tool.name", f"{name!r} is not one of {', '.join(TOOL_NAMES)}")
    if not isinstance(args, dict):
        raise InputError("host_tool.args", f"must be an object, got {type(args).__name__}")
    scope: ReplyState = {"msg": msg, "persona_id": msg.persona_id, "stream": msg.stream}
    tool = next(t for t in make_tools(deps) if t.name == name)
    try:
        result = tool.invoke({**args, "state": scope})
    except (ValueError, TypeError) as exc:  # the model's arguments: told, as a tool error
        result = json.dumps({"note": DATA_NOTE, "error": str(exc)}, ensure_ascii=False)
    return {"tool_result": str(result), "host_tool": {}}
