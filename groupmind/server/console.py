"""The console on a LangGraph server (``langgraph.json`` ``http.app``): beside the graphs,
behind the same per-bot keys, over the server's own runtime. Forget runs the server's
forget graph through the server's own API with the request's key, so the server's reply
threads are scrubbed too and the run is the key's bot's."""

from __future__ import annotations

from typing import Any

from langgraph_sdk import get_client
from starlette.requests import Request

from groupmind.console.access import COOKIE, Access, key_of
from groupmind.console.app import Host, make_console
from groupmind.server.auth import settings
from groupmind.wiring import open_runtime


def _access() -> Access:
    return Access(tuple(settings().bots), open_bot=settings().bot_id)


async def _forget(request: Request, bot: str, raw: dict[str, Any]) -> dict[str, Any]:
    key = key_of(request.headers.get("authorization"), request.headers.get("x-api-key"),
                 request.cookies.get(COOKIE))  # fmt: skip
    client = get_client(url=str(request.base_url).rstrip("/"), api_key=key)
    given = {k: v for k, v in raw.items() if v is not None}
    out: Any = await client.runs.wait(None, "forget", input=given)
    return dict(out) if isinstance(out, dict) else {"removed": {}}


app = make_console(Host(runtime=open_runtime, access=_access, forget=_forget))
