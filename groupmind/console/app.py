"""The console's Starlette app: pages under ``/console``, metrics at ``/metrics``.

Every handler reads the bot the request's key names (``access.Access``) and that bot's
stores only; forms post back (SameSite cookie: another site cannot post them for you).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, get_args
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from domain.scope import ChatScope
from groupmind.console import views
from groupmind.console.access import COOKIE, Access, key_of
from groupmind.console.i18n import words
from groupmind.console.metrics import bridge_status, exposition, model_up
from groupmind.wiring import Runtime
from nodes.deps import ReplyDeps, ReplyThreads
from nodes.forget import forget as erase
from nodes.forget import validate_request
from state.validation import InputError
from stores.base import JobStatus, Persona

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
)
TEMPLATES.filters["when"] = lambda ts: datetime.fromtimestamp(float(ts)).strftime("%Y-%m-%d %H:%M")


Erase = Callable[[Request, str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Host:
    """What the console runs on: the process's runtime (opened on first use), who may see
    what, and how a person or a chat is forgotten for a bot (in-process, or by the
    server's forget graph, which reaches the server's own threads)."""

    runtime: Callable[[], Runtime]
    access: Callable[[], Access]
    forget: Erase


def in_process(runtime: Runtime, threads: Callable[[str], ReplyThreads]) -> Erase:
    """Forget in this process: the stores, the reply threads of a checkpointer."""

    async def forget(request: Request, bot: str, raw: dict[str, Any]) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            deps = replace(
                runtime.deps_for(bot), reply_threads=threads(bot), compact=runtime.compact
            )  # the engines let go of what they keep of it on disk, as the CLI's forget does
            return erase(validate_request(raw, deps), deps)

        return await asyncio.to_thread(run)

    return forget


def on_server(url: str | None = None) -> Erase:
    """Forget by a LangGraph server's forget graph, through its API with the request's own
    key (so the run is the key's bot's, and the server's reply threads go too); ``url``:
    that server, else the one serving this request."""

    async def forget(request: Request, bot: str, raw: dict[str, Any]) -> dict[str, Any]:
        from langgraph_sdk import get_client

        client = get_client(url=url or str(request.base_url).rstrip("/"), api_key=_key(request))
        given = {k: v for k, v in raw.items() if v is not None}
        out: Any = await client.runs.wait(None, "forget", input=given)
        return dict(out) if isinstance(out, dict) else {"removed": {}}

    return forget


def make_console(host: Host) -> Starlette:
    def page(
        handler: Callable[[Request, str, ReplyDeps], Response],
    ) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            bot = _bot(request, host.access())
            if bot is None:
                return _login(request, host.access(), status=401)
            return handler(request, bot, host.runtime().deps_for(bot))

        return endpoint

    def posted(
        handler: Callable[[Request, FormData, str, ReplyDeps], Response],
    ) -> Callable[[Request], Awaitable[Response]]:
        """A form's endpoint: the form read here, the handler's store calls off the event
        loop (a LangGraph server refuses blocking calls on it)."""

        async def endpoint(request: Request) -> Response:
            form = await request.form()
            bot = _bot(request, host.access())
            if bot is None:
                return _login(request, host.access(), status=401)

            def run() -> Response:
                return handler(request, form, bot, host.runtime().deps_for(bot))

            return await asyncio.to_thread(run)

        return endpoint

    def render(request: Request, bot: str, name: str, **values: Any) -> HTMLResponse:
        lang = request.query_params.get("lang") or request.cookies.get("lang", "zh")
        html = TEMPLATES.get_template(name).render(
            t=words(lang), bot=bot, lang=lang, notice=request.query_params.get("notice", ""),
            path=request.url.path, **values,
        )  # fmt: skip
        response = HTMLResponse(html)
        if "lang" in request.query_params:
            response.set_cookie("lang", lang, samesite="strict")
        return response

    def chats(request: Request, bot: str, deps: ReplyDeps) -> Response:
        return render(request, bot, "chats.html", chats=views.chats(host.runtime().engine, bot))

    def chat(request: Request, bot: str, deps: ReplyDeps) -> Response:
        stream = request.path_params["stream"]
        scope = _scope(stream)
        if scope is None:
            return PlainTextResponse(f"chat: {stream!r} is not platform:type:id", 404)
        known = {c["stream"]: c for c in views.chats(host.runtime().engine, bot, only=scope)}
        persona = (
            request.query_params.get("persona")
            or known.get(stream, {}).get("persona_id")
            or deps.persona_for(scope.platform, scope.chat_type, scope.chat_id)
        )
        rows = views.chat_messages(deps, stream, persona)
        return render(
            request,
            bot,
            "chat.html",
            stream=stream,
            persona=persona,
            messages=rows,
            summary=known.get(stream),
        )

    def memory(request: Request, bot: str, deps: ReplyDeps) -> Response:
        stream, query = request.query_params.get("chat", ""), request.query_params.get("q", "")
        scope = _scope(stream)
        persona = request.query_params.get("persona") or None
        found = views.memories(deps, scope, query, persona) if scope is not None else []
        return render(request, bot, "memory.html", chat=stream, q=query, hits=found,
                      chats=views.chats(host.runtime().engine, bot))  # fmt: skip

    def forget_memory(request: Request, form: FormData, bot: str, deps: ReplyDeps) -> Response:
        memory_id = str(form.get("id", ""))
        found = deps.events.get([memory_id])  # this bot's only: another's id finds nothing
        if found:
            deps.events.remove([memory_id])
            host.runtime().compact()  # its text gone from the engines' free pages and logs
        notice = f"{words(request.cookies.get('lang', 'zh'))['removed']}: {len(found)}"
        back = {"chat": str(form.get("chat", "")), "q": str(form.get("q", "")), "notice": notice}
        return RedirectResponse(f"/console/memory?{urlencode(back)}", status_code=303)

    def people(request: Request, bot: str, deps: ReplyDeps) -> Response:
        user_id = request.query_params.get("user_id", "")
        platform = request.query_params.get("platform") or host.runtime().settings.default_platform
        shown_in = _scope(request.query_params.get("chat", ""))
        data = views.person(deps, platform, user_id, shown_in) if user_id else None
        return render(request, bot, "people.html", user_id=user_id, platform=platform, person=data,
                      chat=request.query_params.get("chat", ""))  # fmt: skip

    def jobs(request: Request, bot: str, deps: ReplyDeps) -> Response:
        asked = request.query_params.get("status") or None
        status = next((s for s in get_args(JobStatus) if s == asked), None)
        rows = deps.jobs.list(status, 100) if status or not asked else []
        return render(
            request, bot, "jobs.html", jobs=rows, status=status or "", counts=deps.jobs.counts()
        )

    def retry(request: Request, form: FormData, bot: str, deps: ReplyDeps) -> Response:
        row = deps.jobs.get(str(form.get("request_id", "")))
        notice = "no such job"
        if row is not None and row.status == "failed":
            p = row.payload
            scope = ChatScope(
                platform=p["platform"], chat_type=p["chat_type"], chat_id=p["chat_id"]
            )
            deps.jobs.enqueue(row.request_id, p, scope=scope, user_id=str(p["user_id"]))
            deps.on_job()
            notice = f"queued: {row.request_id}"
        return RedirectResponse(
            f"/console/jobs?{urlencode({'status': 'failed', 'notice': notice})}", status_code=303
        )

    def personas(request: Request, bot: str, deps: ReplyDeps) -> Response:
        serves: dict[str, list[str]] = {}
        for c in views.chats(host.runtime().engine, bot):
            serves.setdefault(c["persona_id"], []).append(c["stream"])
        return render(
            request, bot, "personas.html", personas=deps.personas.list_personas(), serves=serves
        )

    def save_persona(request: Request, form: FormData, bot: str, deps: ReplyDeps) -> Response:
        aliases = [a.strip() for a in str(form.get("aliases", "")).split(",") if a.strip()]
        try:
            persona = Persona(
                persona_id=str(form.get("persona_id", "")).strip(),
                name=str(form.get("name", "")).strip(),
                system_prompt=str(form.get("system_prompt", "")),
                aliases=aliases,
            )
            deps.personas.put_persona(persona)
            notice = f"saved: {form.get('persona_id')}"
        except (ValueError, InputError) as exc:
            notice = str(exc)
        return RedirectResponse(
            f"/console/personas?{urlencode({'notice': notice})}", status_code=303
        )

    def forget_page(request: Request, bot: str, deps: ReplyDeps) -> Response:
        return render(request, bot, "forget.html", user_id=request.query_params.get("user_id", ""),
                      chat=request.query_params.get("chat", ""), result=None, error="")  # fmt: skip

    async def forget(request: Request) -> Response:
        form = await request.form()
        bot = _bot(request, host.access())
        if bot is None:
            return _login(request, host.access(), status=401)
        runtime = await asyncio.to_thread(host.runtime)
        deps = await asyncio.to_thread(runtime.deps_for, bot)
        user_id, chat = str(form.get("user_id", "")).strip(), str(form.get("chat", "")).strip()
        scope = _scope(chat)
        raw = {"platform": scope.platform if scope else runtime.settings.default_platform,
               "user_id": user_id or None, "chat_type": scope.chat_type if scope else None,
               "chat_id": scope.chat_id if scope else None}  # fmt: skip
        result, error = None, ""
        if form.get("confirm") != "yes":
            error = "not confirmed"
        else:
            try:
                validate_request(raw, deps)  # refused here, naming the field, before anything
                result = await host.forget(request, bot, raw)
            except InputError as exc:
                error = str(exc)
        return render(
            request, bot, "forget.html", user_id=user_id, chat=chat, result=result, error=error
        )

    def status(request: Request, bot: str, deps: ReplyDeps) -> Response:
        runtime = host.runtime()
        key = _key(request)
        bridges = [bridge_status(url, bot, key) for url in runtime.settings.bridges]
        return render(request, bot, "status.html", status=views.status(deps, runtime.engine),
                      model=model_up(runtime.settings), bridges=bridges)  # fmt: skip

    def experiments(request: Request, bot: str, deps: ReplyDeps) -> Response:
        folder = host.runtime().settings.data_dir / "experiments"
        return render(request, bot, "experiments.html", reports=views.experiments(folder, bot))

    def plot(request: Request, bot: str, deps: ReplyDeps) -> Response:
        folder = host.runtime().settings.data_dir / "experiments"
        name = request.path_params["name"]
        mine = {r["folder"] for r in views.experiments(folder, bot) if r["plot"]}
        if name not in mine:  # another bot's, or none: the same answer
            return PlainTextResponse("no such experiment", 404)
        return Response((folder / name / "report.svg").read_bytes(), media_type="image/svg+xml")

    def metrics(request: Request) -> Response:
        bot = _bot(request, host.access())
        if bot is None:
            return PlainTextResponse("a valid bot API key is required", 401)
        runtime = host.runtime()
        status = views.status(runtime.deps_for(bot), runtime.engine)
        body = exposition(bot, status, model_up(runtime.settings))
        return Response(body, media_type="text/plain; version=0.0.4")

    async def login(request: Request) -> Response:
        access = host.access()
        if request.method == "GET":
            return _login(request, access)
        form = await request.form()
        key = str(form.get("key", ""))
        if access.bot(key, request.client.host if request.client else None) is None:
            return _login(request, access, status=401, failed=True)
        response = RedirectResponse("/console/chats", status_code=303)
        response.set_cookie(COOKIE, key, httponly=True, samesite="strict")
        return response

    def logout(request: Request) -> Response:
        response = RedirectResponse("/console/login", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    def home(request: Request) -> Response:
        return RedirectResponse("/console/chats", status_code=303)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # explicit: the server merges it with its own (langhost's runtime did not start
        # with Starlette's default one in the merge: "lifespan protocol appears unsupported")
        yield

    return Starlette(
        lifespan=lifespan,
        routes=[
            Route("/console", home),
            Route("/console/", home),
            Route("/console/login", login, methods=["GET", "POST"]),
            Route("/console/logout", logout),
            Route("/console/chats", page(chats)),
            Route("/console/chats/{stream:path}", page(chat)),
            Route("/console/memory", page(memory)),
            Route("/console/memory/forget", posted(forget_memory), methods=["POST"]),
            Route("/console/people", page(people)),
            Route("/console/jobs", page(jobs)),
            Route("/console/jobs/retry", posted(retry), methods=["POST"]),
            Route("/console/personas", page(personas)),
            Route("/console/personas", posted(save_persona), methods=["POST"]),
            Route("/console/forget", page(forget_page)),
            Route("/console/forget", forget, methods=["POST"]),
            Route("/console/status", page(status)),
            Route("/console/experiments", page(experiments)),
            Route("/console/experiments/{name}/plot.svg", page(plot)),
            Route("/metrics", metrics),
        ],
    )


def _key(request: Request) -> str | None:
    return key_of(request.headers.get("authorization"), request.headers.get("x-api-key"),
                  request.cookies.get(COOKIE))  # fmt: skip


def _bot(request: Request, access: Access) -> str | None:
    return access.bot(_key(request), request.client.host if request.client else None)


def _scope(stream: str) -> ChatScope | None:
    try:
        return ChatScope.from_key(stream) if stream else None
    except ValueError:
        return None


def _login(
    request: Request, access: Access, *, status: int = 200, failed: bool = False
) -> Response:
    lang = request.cookies.get("lang", "zh")
    html = TEMPLATES.get_template("login.html").render(
        t=words(lang),
        lang=lang,
        failed=failed,
        keyed=bool(access.keys),
        bot=None,
        path="/console/login",
        notice="",
    )
    return HTMLResponse(html, status_code=status)
