"""The console's Starlette app: pages under ``/console``, metrics at ``/metrics``.

Every handler reads the bot the request is for (``access.Access``) and that bot's stores
only, and only the platforms its key allows. What refuses a hostile page comes first
(``guard.Guard``: Host, origin, framing); every form then carries its session's token,
and a form's outcome is told on the next page from the session, never from the URL.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from functools import cache
from pathlib import Path
from typing import Any, get_args
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from domain.scope import ChatScope
from groupmind.console import views
from groupmind.console.access import COOKIE, OLD_COOKIE, Access, Who
from groupmind.console.forgetting import Erase, asked
from groupmind.console.guard import Guard, HostRule
from groupmind.console.i18n import words
from groupmind.console.metrics import bridge_status, exposition, model_up
from groupmind.wiring import Deployment
from nodes.deps import NotAllowed, ReplyDeps
from nodes.memory.intake import validate_job
from nodes.reply.hand_off import enqueue
from state.validation import InputError
from stores.base import JobStatus, Persona
from stores.sql.sessions import TTL_S, SqlConsoleSessions

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
)


def _when(ts: float, tz: tzinfo) -> str:
    """A time as the deployment reads it, with its offset (a bare time says no zone)."""
    return datetime.fromtimestamp(float(ts), tz).strftime("%Y-%m-%d %H:%M %z")


TEMPLATES.filters["when"] = _when


@dataclass(frozen=True)
class Host:
    """What the console runs on: the process's runtime (opened on first use), who may see
    what, how a person or a chat is forgotten for a bot (in-process, or by the server's
    forget graph, which reaches the server's own threads), and the Host names it answers
    (``bound``: the address it listens on; None when not known, as on a server)."""

    runtime: Callable[[], Deployment]
    access: Callable[[], Access]
    forget: Erase
    bound: str | None = None


@cache
def sessions_on(engine: Engine) -> SqlConsoleSessions:
    return SqlConsoleSessions(engine)


Handler = Callable[[Request, Who, ReplyDeps], Response]
FormHandler = Callable[[Request, FormData, Who, ReplyDeps], tuple[str, str]]


def make_console(host: Host) -> Starlette:
    def sessions() -> SqlConsoleSessions:
        return sessions_on(host.runtime().engine)

    def deps_of(found: Who) -> ReplyDeps:
        """The bot's stores, held to the platforms of the key the request came with."""
        deps = host.runtime().deps_for(found.bot)
        if found.key is not None and found.key.platforms:
            held = replace(deps.limits, platforms=frozenset(found.key.platforms))
            return replace(deps, limits=held)
        return deps

    def who(request: Request) -> Who | None:
        return host.access().who(
            request.headers,
            request.client.host if request.client else None,
            request.cookies.get(COOKIE),
            sessions(),
        )

    def page(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """A page: its store reads off the event loop (a LangGraph server refuses blocking
        calls on it); a scope outside the key's platforms is refused."""

        async def endpoint(request: Request) -> Response:
            def run() -> Response:
                found = who(request)
                if found is None:
                    return _login(request, host.access(), status=401)
                try:
                    return handler(request, found, deps_of(found))
                except NotAllowed as exc:
                    return PlainTextResponse(str(exc), 403)

            return await asyncio.to_thread(run)

        return endpoint

    def posted(handler: FormHandler) -> Callable[[Request], Awaitable[Response]]:
        """A form's endpoint: the session's token checked, then the handler; its notice is
        the session's for the page it redirects to."""

        async def endpoint(request: Request) -> Response:
            form = await request.form()

            def run() -> Response:
                found = who(request)
                if found is None:
                    return _login(request, host.access(), status=401)
                refused = token_refused(found, form)
                if refused is not None:
                    return refused
                deps = deps_of(found)
                try:
                    back, notice = handler(request, form, found, deps)
                except NotAllowed as exc:
                    return PlainTextResponse(str(exc), 403)
                if found.session_id is not None:
                    sessions().tell(found.session_id, notice)
                return RedirectResponse(back, status_code=303)

            return await asyncio.to_thread(run)

        return endpoint

    def token_refused(found: Who, form: FormData) -> Response | None:
        """A page's form must carry its session's token (a program keyed in a header sends
        none: no page of another site can set that header)."""
        if found.by_header:
            return None
        given = str(form.get("csrf", ""))
        if found.session is None or not hmac.compare_digest(given, found.session.csrf):
            return PlainTextResponse("the form's token is missing or stale: reload the page", 403)
        return None

    def render(request: Request, found: Who, name: str, **values: Any) -> HTMLResponse:
        """A page; a keyless console opens a session here so that its forms carry a token."""
        lang = request.query_params.get("lang") or request.cookies.get("lang", "zh")
        session, session_id, opened = found.session, found.session_id, None
        if session is None and found.key is None:
            opened = sessions().open(found.bot, None)
            session = sessions().get(opened)
        notice = session.notice if session is not None else ""
        if notice and session_id is not None:
            sessions().told(session_id)
        html = TEMPLATES.get_template(name).render(
            t=words(lang), bot=found.bot, lang=lang, notice=notice, path=request.url.path,
            csrf=session.csrf if session is not None else "", tz=host.runtime().settings.tz,
            **values,
        )  # fmt: skip
        response = HTMLResponse(html)
        if opened is not None:
            _set_session(request, response, opened)
        if "lang" in request.query_params:
            response.set_cookie("lang", lang, samesite="strict")
        if OLD_COOKIE in request.cookies:
            response.delete_cookie(OLD_COOKIE)
        return response

    def chats(request: Request, found: Who, deps: ReplyDeps) -> Response:
        rows = views.chats(host.runtime().engine, found.bot, platforms=deps.limits.platforms)
        shown, pages = views.paged(rows, _int(request.query_params.get("page"), 1))
        return render(request, found, "chats.html", chats=shown, total=len(rows),
                      page=_int(request.query_params.get("page"), 1), pages=pages)  # fmt: skip

    def chat(request: Request, found: Who, deps: ReplyDeps) -> Response:
        stream = request.path_params["stream"]
        scope = _scope(stream)
        if scope is None:
            return PlainTextResponse(f"chat: {stream!r} is not platform:type:id", 404)
        deps.allow([scope.platform])
        known = {c["stream"]: c for c in views.chats(host.runtime().engine, found.bot, only=scope)}
        persona = (
            request.query_params.get("persona")
            or known.get(stream, {}).get("persona_id")
            or deps.persona_for(scope.platform, scope.chat_type, scope.chat_id)
        )
        before = _int(request.query_params.get("before"), None)
        rows = views.chat_messages(deps, stream, persona, before_seq=before)
        older = rows[0]["seq"] if len(rows) == views.PAGE else None
        return render(request, found, "chat.html", stream=stream, persona=persona, messages=rows,
                      summary=known.get(stream), older=older, paged=before is not None)  # fmt: skip

    def memory(request: Request, found: Who, deps: ReplyDeps) -> Response:
        stream, query = request.query_params.get("chat", ""), request.query_params.get("q", "")
        scope = _scope(stream)
        if scope is not None:
            deps.allow([scope.platform])
        persona = request.query_params.get("persona") or None
        found_rows = views.memories(deps, scope, query, persona) if scope is not None else []
        return render(request, found, "memory.html", chat=stream, q=query, hits=found_rows,
                      bad_chat=bool(stream) and scope is None)  # fmt: skip

    def forget_memory(
        request: Request, form: FormData, found: Who, deps: ReplyDeps
    ) -> tuple[str, str]:
        memory_id = str(form.get("id", ""))
        hits = deps.events.get([memory_id])  # this bot's only: another's id finds nothing
        deps.allow([e.platform for e in hits])
        if hits:
            deps.events.remove([memory_id])
            host.runtime().compact()  # its text gone from the engines' free pages and logs
        notice = f"{words(request.cookies.get('lang', 'zh'))['removed']}: {len(hits)}"
        back = {"chat": str(form.get("chat", "")), "q": str(form.get("q", ""))}
        return f"/console/memory?{urlencode(back)}", notice

    def people(request: Request, found: Who, deps: ReplyDeps) -> Response:
        user_id = request.query_params.get("user_id", "")
        platform = request.query_params.get("platform") or host.runtime().settings.default_platform
        deps.allow([platform])
        shown_in = _scope(request.query_params.get("chat", ""))
        data = views.person(deps, platform, user_id, shown_in) if user_id else None
        return render(request, found, "people.html", user_id=user_id, platform=platform,
                      person=data, chat=request.query_params.get("chat", ""))  # fmt: skip

    def jobs(request: Request, found: Who, deps: ReplyDeps) -> Response:
        asked = request.query_params.get("status") or None
        status = next((s for s in get_args(JobStatus) if s == asked), None)
        rows = deps.jobs.list(status, 100) if status or not asked else []
        if deps.limits.platforms is not None:
            rows = [j for j in rows if j.payload.get("platform") in deps.limits.platforms]
        return render(request, found, "jobs.html", jobs=rows, status=status or "",
                      counts=deps.jobs.counts())  # fmt: skip

    def retry(request: Request, form: FormData, found: Who, deps: ReplyDeps) -> tuple[str, str]:
        row = deps.jobs.get(str(form.get("request_id", "")))
        notice = "no such job"
        if row is not None and row.status == "failed":
            deps.allow([row.payload["platform"]])
            try:
                job = validate_job(row.payload, deps)  # held to today's limits
            except InputError as exc:
                notice = f"not queued: {exc}"
            else:
                enqueue(deps, [job])
                notice = f"queued: {row.request_id}"
        return f"/console/jobs?{urlencode({'status': 'failed'})}", notice

    def personas(request: Request, found: Who, deps: ReplyDeps) -> Response:
        serves: dict[str, list[str]] = {}
        for c in views.chats(host.runtime().engine, found.bot, platforms=deps.limits.platforms):
            serves.setdefault(c["persona_id"], []).append(c["stream"])
        editing = deps.personas.get_persona(request.query_params.get("edit", ""))
        return render(request, found, "personas.html", personas=deps.personas.list_personas(),
                      serves=serves, editing=editing)  # fmt: skip

    def save_persona(
        request: Request, form: FormData, found: Who, deps: ReplyDeps
    ) -> tuple[str, str]:
        persona_id = str(form.get("persona_id", "")).strip()
        aliases = [a.strip() for a in str(form.get("aliases", "")).split(",") if a.strip()]
        before = deps.personas.get_persona(persona_id)
        # The opening dialogue: one line per turn; a form without the field keeps it.
        opening = (
            [line.strip() for line in str(form["opening"]).splitlines() if line.strip()]
            if "opening" in form
            else (before.begin_dialogs if before else [])
        )
        try:
            persona = Persona(
                persona_id=persona_id,
                name=str(form.get("name", "")).strip(),
                system_prompt=str(form.get("system_prompt", "")),
                begin_dialogs=opening,
                aliases=aliases,
            )
            deps.personas.put_persona(persona)
            notice = f"saved: {persona_id}"
        except (ValueError, InputError) as exc:
            notice = str(exc)
        return "/console/personas", notice

    def forget_page(request: Request, found: Who, deps: ReplyDeps) -> Response:
        platform = host.runtime().settings.default_platform
        return render(request, found, "forget.html", step="ask", platform=platform)

    async def forget(request: Request) -> Response:
        """Two steps: ``review`` reads the form and says exactly what goes; ``erase``
        (checked again, and confirmed) erases it."""
        form = await request.form()
        runtime = await asyncio.to_thread(host.runtime)
        found = await asyncio.to_thread(who, request)
        if found is None:
            return _login(request, host.access(), status=401)
        refused = token_refused(found, form)
        if refused is not None:
            return refused
        deps = await asyncio.to_thread(deps_of, found)
        values = {k: str(form.get(k, "")).strip() for k in ("user_id", "chat", "platform")}
        try:
            what = await asyncio.to_thread(asked, form, deps, runtime, found.bot)
        except InputError as exc:  # NotAllowed included: the key's platforms
            return await asyncio.to_thread(render, request, found, "forget.html", step="ask",
                                           error=str(exc), **values)  # fmt: skip
        if form.get("step") != "erase":
            return await asyncio.to_thread(render, request, found, "forget.html",
                                           step="review", what=what, **values)  # fmt: skip
        if form.get("confirm") != "yes":
            return await asyncio.to_thread(render, request, found, "forget.html", step="review",
                                           what=what, error="not confirmed", **values)  # fmt: skip
        result = await host.forget(request, found, what.raw)
        return await asyncio.to_thread(render, request, found, "forget.html", step="done",
                                       what=what, result=result, **values)  # fmt: skip

    def status(request: Request, found: Who, deps: ReplyDeps) -> Response:
        runtime = host.runtime()
        key = found.key.api_key.get_secret_value() if found.key else None
        bridges = [bridge_status(url, found.bot, key) for url in runtime.settings.bridges]
        return render(request, found, "status.html", status=views.status(deps, runtime.engine),
                      model=model_up(runtime.settings), bridges=bridges)  # fmt: skip

    def experiments(request: Request, found: Who, deps: ReplyDeps) -> Response:
        folder = host.runtime().settings.data_dir / "experiments"
        return render(
            request, found, "experiments.html", reports=views.experiments(folder, found.bot)
        )

    def plot(request: Request, found: Who, deps: ReplyDeps) -> Response:
        folder = host.runtime().settings.data_dir / "experiments"
        name = request.path_params["name"]
        mine = {r["folder"] for r in views.experiments(folder, found.bot) if r["plot"]}
        if name not in mine:  # another bot's, or none: the same answer
            return PlainTextResponse("no such experiment", 404)
        return Response((folder / name / "report.svg").read_bytes(), media_type="image/svg+xml")

    async def metrics(request: Request) -> Response:
        def run() -> Response:
            found = who(request)
            if found is None:
                return PlainTextResponse("a valid bot API key is required", 401)
            runtime = host.runtime()
            numbers = views.status(runtime.deps_for(found.bot), runtime.engine)
            body = exposition(found.bot, numbers, model_up(runtime.settings))
            return Response(body, media_type="text/plain; version=0.0.4")

        return await asyncio.to_thread(run)

    async def login(request: Request) -> Response:
        access = host.access()
        if request.method == "GET":
            return _login(request, access)
        form = await request.form()
        key = str(form.get("key", "")).strip()
        client = request.client.host if request.client else None
        bot = _bot_for_login(access, key, client, request)
        if bot is None:
            return _login(request, access, status=401, failed=True)

        def opened() -> str:
            return sessions().open(bot, key if access.keys else None)

        response = RedirectResponse("/console/chats", status_code=303)
        _set_session(request, response, await asyncio.to_thread(opened))
        response.delete_cookie(OLD_COOKIE)
        return response

    async def logout(request: Request) -> Response:
        if request.method == "GET":  # a link must not log anyone out: the form posts
            return RedirectResponse("/console/chats", status_code=303)
        form = await request.form()
        found = await asyncio.to_thread(who, request)
        if found is not None and found.session is not None:
            if not hmac.compare_digest(str(form.get("csrf", "")), found.session.csrf):
                return PlainTextResponse("the form's token is missing or stale", 403)
            await asyncio.to_thread(sessions().close, found.session_id)
        response = RedirectResponse("/console/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        response.delete_cookie(OLD_COOKIE)
        return response

    def home(request: Request) -> Response:
        return RedirectResponse("/console/chats", status_code=303)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # explicit: the server merges it with its own (langhost's runtime did not start
        # with Starlette's default one in the merge: "lifespan protocol appears unsupported")
        yield

    hosts = HostRule(host.bound, lambda: host.runtime().settings.console_hosts)
    return Starlette(
        lifespan=lifespan,
        middleware=[Middleware(Guard, hosts=hosts)],
        routes=[
            Route("/console", home),
            Route("/console/", home),
            Route("/console/login", login, methods=["GET", "POST"]),
            Route("/console/logout", logout, methods=["GET", "POST"]),
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


def _set_session(request: Request, response: Response, session_id: str) -> None:
    response.set_cookie(
        COOKIE, session_id, max_age=int(TTL_S), path="/", httponly=True, samesite="strict",
        secure=request.url.scheme == "https",
    )  # fmt: skip


def _bot_for_login(access: Access, key: str, client: str | None, request: Request) -> str | None:
    from groupmind.console.access import bot_for

    if access.keys:
        found = bot_for(access.keys, key)
        return found.id if found else None
    return access.open_bot if access.open_to(client, request.headers) else None


def _int(value: str | None, default: Any) -> Any:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


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
        csrf="",
    )
    return HTMLResponse(html, status_code=status)
