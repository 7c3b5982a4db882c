"""The console's forget: what a form asks for, read strictly and said in full before
anything is erased, and the two ways it is carried out (in this process, or by a LangGraph
server's forget graph with the request's own key).

A chat that does not parse is refused naming the field (it never widens to "everywhere");
an empty chat means the person everywhere on one platform, and the confirmation page lists
every chat that reaches. Nothing is prefilled from a URL: a link cannot stage an erase.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request

from domain.scope import ChatScope
from groupmind.console import views
from groupmind.console.access import Who
from groupmind.wiring import Deployment
from nodes.deps import ReplyDeps, ReplyThreads
from nodes.forget import forget as erase
from nodes.forget import validate_request
from state.forget import ForgetRequest
from state.validation import InputError

Erase = Callable[[Request, Who, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Asked:
    """One forget, checked: the request and, in words, everything it reaches."""

    request: ForgetRequest
    raw: dict[str, Any]  # the request as the forget graph takes it
    chats: list[str]  # every chat it erases from
    name: str  # the person's name, when groupmind knows it

    @property
    def whole_chat(self) -> bool:
        return self.request.user_id is None

    @property
    def everywhere(self) -> bool:
        return self.request.chat_id is None


def asked(form: FormData, deps: ReplyDeps, runtime: Deployment, bot: str) -> Asked:
    """The form's forget, or InputError naming the field at fault."""
    user_id = str(form.get("user_id", "")).strip()
    chat = str(form.get("chat", "")).strip()
    platform = str(form.get("platform", "")).strip()
    scope = None
    if chat:
        try:
            scope = ChatScope.from_key(chat)
        except ValueError:
            raise InputError(
                "chat", f"{chat!r} is not platform:group|private:chat_id (e.g. qq:group:1001)"
            ) from None
        if platform and platform != scope.platform:
            raise InputError("platform", f"{platform!r} is not the chat's ({scope.platform!r})")
        platform = scope.platform
    elif not user_id:
        raise InputError("user_id", "name a person, a chat, or both")
    raw = {"platform": platform or runtime.settings.default_platform,
           "user_id": user_id or None, "chat_type": scope.chat_type if scope else None,
           "chat_id": scope.chat_id if scope else None}  # fmt: skip
    request = validate_request(raw, deps)
    deps.allow([request.platform])
    if scope is not None:
        chats = [scope.key]
    else:
        chats = views.person_chats(runtime.engine, bot, request.platform, user_id)
    return Asked(request, raw, chats, _name(deps, request, chats))


def _name(deps: ReplyDeps, request: ForgetRequest, chats: list[str]) -> str:
    """The person's name: the relationship's, else the latest they spoke under."""
    if request.user_id is None:
        return ""
    known = deps.profiles.get_relationship(request.platform, request.user_id)
    if known is not None:
        return known.user_name
    names = (deps.messages.members(c).get(request.user_id, "") for c in chats)
    return next((n for n in names if n), "")


def in_process(runtime: Deployment, threads: Callable[[str], ReplyThreads]) -> Erase:
    """Forget in this process: the stores, the reply threads of a checkpointer."""

    async def forget(request: Request, who: Who, raw: dict[str, Any]) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            deps = runtime.forget_deps(who.bot, threads(who.bot))
            return dict(erase(validate_request(raw, deps), deps))

        return await asyncio.to_thread(run)

    return forget


def on_server(url: str | None = None) -> Erase:
    """Forget by a LangGraph server's forget graph, through its API with the request's own
    key (so the run is the key's bot's, and the server's reply threads go too); ``url``:
    that server, else the one serving this request (its Host passed the console's guard)."""

    async def forget(request: Request, who: Who, raw: dict[str, Any]) -> dict[str, Any]:
        from langgraph_sdk import get_client

        key = who.key.api_key.get_secret_value() if who.key else None
        client = get_client(url=url or str(request.base_url).rstrip("/"), api_key=key)
        given = {k: v for k, v in raw.items() if v is not None}
        out: Any = await client.runs.wait(None, "forget", input=given)
        return dict(out) if isinstance(out, dict) else {"removed": {}}

    return forget
