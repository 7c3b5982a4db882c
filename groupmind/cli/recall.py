"""What memory holds and how a message is answered: remember, search, profile, replay, rank."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from groupmind.cli.app import app
from groupmind.cli.common import (
    ChatIdOpt,
    ChatTypeOpt,
    PlatformOpt,
    VariantOpt,
    asked_variants,
    chat_scope,
    emit,
    err,
    invocation,
    lines_of,
    out,
    session_for,
)
from groupmind.lines import judged
from state.validation import InputError


@app.command()
def remember(
    file: Path,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    variant: VariantOpt = None,
    queue_only: Annotated[
        bool, typer.Option("--queue-only", help="validate and queue; a worker runs them")
    ] = False,
) -> None:
    """Run memory jobs (one JSON object per line) through the memory graph."""
    session = session_for(variant)
    results: list[dict[str, Any]] = []
    submitted: list[str] = []
    for line in lines_of(file):
        queued, refused = judged(
            line, lambda raw: {"request_id": session.worker.submit(raw).request_id}, "request_id"
        )
        if refused:
            results.append({**queued, "status": "failed"})
        elif queue_only:
            results.append({**queued, "status": "queued"})
        else:
            submitted.append(queued["request_id"])
            continue
        if as_json:
            emit(results[-1])
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("remembering", total=len(submitted))
        for request_id in submitted:
            outcome = session.worker.run_next(request_id)
            result = outcome.as_json() if outcome else _held(request_id)
            results.append(result)
            progress.advance(task)
            if as_json:
                emit(result)
    if not as_json:
        _print_remembered(results)
    if any(r["status"] == "failed" for r in results):
        raise typer.Exit(1)


def _held(request_id: str) -> dict[str, Any]:
    return {"request_id": request_id, "status": "failed", "error": "held by another worker"}


def _print_remembered(results: list[dict[str, Any]]) -> None:
    table = Table("request_id", "status", "attempts", "text / error", show_lines=True)
    colour = {"stored": "green", "degraded": "yellow", "failed": "red", "queued": "cyan"}
    for r in results:
        table.add_row(
            str(r.get("request_id", "?")),
            f"[{colour[r['status']]}]{r['status']}[/]",
            str(r.get("attempts", "")),
            r.get("error") or r.get("text", ""),
        )
    out.print(table)


@app.command()
def search(
    query: Annotated[str | None, typer.Argument()] = None,
    platform: PlatformOpt = None,
    chat_type: ChatTypeOpt = None,
    chat_id: ChatIdOpt = None,
    user_id: Annotated[str | None, typer.Option("--user-id")] = None,
    persona: Annotated[str | None, typer.Option("--persona")] = None,
    top_k: Annotated[int, typer.Option("--top-k")] = 5,
    time_from: Annotated[str | None, typer.Option("--from")] = None,
    time_to: Annotated[str | None, typer.Option("--to")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    batch: Annotated[Path | None, typer.Option("--batch", help="JSONL of query objects")] = None,
) -> None:
    """Search event memory in one chat's scope (chat type + chat id are required)."""
    from state.search import build_query

    session = invocation().session(worker=False)
    limits = session.deps.limits  # the bot's, built once
    if batch is not None:
        refused_any = False

        def one(raw: Any) -> Any:
            built = build_query(raw, limits)
            return [h.as_json() for h in session.deps.events.search(built)]

        lines = lines_of(batch)
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("searching", total=len(lines))
            for line in lines:
                progress.advance(task)
                result, refused = judged(line, one)
                refused_any |= refused
                emit(result)
        if refused_any:
            raise typer.Exit(1)
        return
    fields = {
        "query": query,
        "platform": platform,
        "chat_type": chat_type,
        "chat_id": chat_id,
        "user_id": user_id,
        "persona": persona,
        "top_k": top_k,
        "from": time_from,
        "to": time_to,
    }
    try:
        q = build_query({k: v for k, v in fields.items() if v is not None}, limits)
    except (InputError, ValueError) as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    hits = session.deps.events.search(q)
    if as_json:
        emit([h.as_json() for h in hits])
        return
    table = Table("score", "when", "who", "text")
    for h in hits:
        when = datetime.fromtimestamp(h.event.timestamp, limits.tz).strftime("%Y-%m-%d %H:%M")
        flag = " [yellow](degraded)[/]" if h.event.degraded else ""
        table.add_row(f"{h.score:.4f}", when, h.event.user_name, h.event.text + flag)
    out.print(table)


@app.command()
def profile(
    user_id: str,
    platform: PlatformOpt = None,
    chat_type: ChatTypeOpt = None,
    chat_id: ChatIdOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """What is stored about a person: the relationship and, per chat it was learned in, the
    profile; with --chat-type/--chat-id, exactly what that chat may see (PROFILE_SHARING)."""
    from domain.scope import ChatScope
    from groupmind.profiles import profile_json
    from nodes.prompt_blocks import render_relation_block
    from stores.base import profile_view

    here = invocation()
    shown_in = chat_scope(platform, chat_type, chat_id)
    platform = platform or here.settings.default_platform
    session = here.session(worker=False)
    data = profile_json(session.deps, platform, user_id, shown_in)
    if data is None:
        if as_json:
            emit({"user_id": user_id, "error": "user_id: no profile stored for this user"})
        else:
            err.print(f"[yellow]no profile stored for user {user_id} on {platform}[/yellow]")
        raise typer.Exit(1)
    if as_json:
        emit(data)
        return
    if shown_in is None:
        for learned in data["learned"]:
            chat = ChatScope(**{k: learned[k] for k in ("platform", "chat_type", "chat_id")})
            view = profile_view(session.deps.profiles, user_id, chat, "chat")
            out.rule(f"learned in {chat.key}")
            out.print(render_relation_block(view, chat, here.settings.tz))
    else:
        view = profile_view(
            session.deps.profiles, user_id, shown_in, session.deps.limits.profile_sharing
        )
        out.rule(
            f"what {shown_in.key} sees (PROFILE_SHARING={session.deps.limits.profile_sharing})"
        )
        out.print(render_relation_block(view, shown_in, here.settings.tz))
        for tie in data["circle"]:
            counts = ", ".join(f"{kind} {n}" for kind, n in tie["counts"].items())
            stated = f"; says: {', '.join(tie['labels'])}" if tie["labels"] else ""
            out.print(f"tied to {tie['user_name']} ({tie['user_id']}): {counts}{stated}")
    if data.get("unscoped"):
        out.rule("learned before provenance was kept (never shown to a model)")
        out.print(data["unscoped"])


@app.command()
def replay(
    file: Path,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    variant: VariantOpt = None,
    wait_memory: Annotated[
        bool, typer.Option(help="finish each message's memory jobs before the next (reproducible)")
    ] = False,
) -> None:
    """Feed messages (one JSON object per line) through the reply graph, in order."""
    from groupmind.chatting import reply_context, reply_to

    session = session_for(variant)
    graph = session.reply_graph()
    context = reply_context(session.deps, asked_variants(variant))
    background = session.runtime.start_background_worker()
    failed = through_each(
        file, "replaying", lambda raw: reply_to(graph, session.deps, raw, context),
        show=emit if as_json else _print_reply, after=background.drain if wait_memory else None,
    )  # fmt: skip
    background.drain()
    background.stop()
    if failed:
        raise typer.Exit(1)


def through_each(
    file: Path,
    doing: str,
    run: Callable[[Any], dict[str, Any]],
    *,
    show: Callable[[Any], None],
    after: Callable[[], object] | None = None,
) -> bool:
    """Each message of a JSONL file through ``run``, in order, each result shown as it
    comes (a refused line as its error); True when any line was refused."""
    lines = lines_of(file)
    failed = False
    with Progress(console=err, transient=True, disable=show is emit) as progress:
        task = progress.add_task(doing, total=len(lines))
        for line in lines:
            progress.advance(task)
            result, refused = judged(line, run, "message_id")
            failed |= refused
            if after is not None:
                after()
            show(result)
    return failed


def _print_reply(r: dict[str, Any]) -> None:
    if "error" in r:
        out.print(f"[red]{r.get('message_id', '?')}: {r['error']}[/red]")
        return
    colour = {"text_reply": "green", "emoji_reply": "cyan", "no_reply": "dim"}[r["action"]]
    head = f"[bold]{r['message_id']}[/bold] [{colour}]{r['action']}[/]"
    out.print(f"{head} ({r['chat_state']}): {r['reason']}")
    if r.get("reply"):
        out.print(f"  → {r['reply']}")


@app.command()
def rank(
    file: Path,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    variant: VariantOpt = None,
) -> None:
    """Store each message and rank its context only (observe + rank_context)."""
    from groupmind.chatting import rank_only, reply_context

    session = session_for(variant, worker=False)
    context = reply_context(session.deps, asked_variants(variant))
    failed = through_each(
        file, "ranking", lambda raw: rank_only(session.deps, raw, context),
        show=emit if as_json else out.print,
    )  # fmt: skip
    if failed:
        raise typer.Exit(1)
