"""The console on a LangGraph server (``langgraph.json`` ``http.app``): beside the graphs,
behind the same per-bot keys, over the server's own runtime. Forget runs the server's
forget graph through the server's own API with the request's key, so the server's reply
threads are scrubbed too and the run is the key's bot's.

``disable_meta`` gives ``/metrics`` to the console (the server's own was generic and open);
it also takes ``/info``, which LangGraph Studio and clients ask first: given back here, the
server's own handler."""

from __future__ import annotations

from langgraph_api.api.meta import meta_info  # type: ignore[import-untyped]
from starlette.routing import Route

from groupmind.console.access import Access
from groupmind.console.app import Host, make_console
from groupmind.console.forgetting import on_server
from groupmind.server.auth import settings
from groupmind.wiring import open_runtime


def _access() -> Access:
    return Access(tuple(settings().bots), open_bot=settings().bot_id)


app = make_console(Host(runtime=open_runtime, access=_access, forget=on_server()))
app.router.routes.append(Route("/info", meta_info))
