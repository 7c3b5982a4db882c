"""The ``groupmind`` command line (docs/contracts.md "Command line")."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from domain.scope import check_bot_id
from groupmind.errors import storage_error
from groupmind.experiment_cli import experiment
from groupmind.import_cli import app as import_app
from groupmind.lines import Line, judged, read_jsonl
from groupmind.memory_cli import app as memory_app
from groupmind.persona_cli import app as persona_app
from groupmind.settings import Settings
from state.validation import InputError, describe_validation_error

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)  # an error naming a path stays one line


class State:
    settings: Settings
    bot: str  # whose data the commands read and write


STATE = State()


@app.callback()
def main(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None, typer.Option(help="Data directory (env GROUPMIND_DATA_DIR)")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    bot: Annotated[
        str | None,
        typer.Option("--bot", help="whose data (a bot id); default GROUPMIND_BOT_ID"),
    ] = None,
) -> None:
    """groupmind: memory-aware brain for group-chat bots."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        STATE.settings = Settings(data_dir=data_dir) if data_dir else Settings()
        STATE.bot = check_bot_id(bot) if bot else STATE.settings.bot_id
    except ValidationError as exc:
        err.print(f"[red]settings: {describe_validation_error(exc)}[/red]")
        raise typer.Exit(2) from None
    except ValueError as exc:
        err.print(f"[red]--bot: {exc}[/red]")
        raise typer.Exit(2) from None
    ctx.obj = STATE.settings


def _emit(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def lines_of(path: Path) -> list[Line]:
    if not path.exists():
        err.print(f"[red]{path}: no such file[/red]")
        raise typer.Exit(2)
    return list(read_jsonl(path))


def _variants(pairs: list[str] | None) -> dict[str, str]:
    chosen = {}
    for pair in pairs or []:
        slot, sep, name = pair.partition("=")
        if not sep or not slot or not name:
            raise typer.BadParameter(f"--variant {pair!r}: expected SLOT=NAME, e.g. rewrite=llm")
        chosen[slot] = name
    return chosen


VariantOpt = Annotated[
    list[str] | None,
    typer.Option("--variant", help="Pick a node variant, any slot of either graph: SLOT=NAME"),
]


def _session(pairs: list[str] | None, **options: Any) -> Any:
    """A session whose memory worker runs the asked variants; exits 2 naming a variant
    that does not exist or cannot run (``llm`` without a model)."""
    from groupmind.chatting import checked_variants
    from groupmind.session import open_session
    from nodes.variants import UnknownVariant

    asked = _variants(pairs)
    try:
        session = open_session(STATE.settings, variants=asked, bot=STATE.bot, **options)
        checked_variants(asked, session.deps)
    except UnknownVariant as exc:
        err.print(f"[red]--variant: {exc}[/red]")
        raise typer.Exit(2) from None
    return session


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
    session = _session(variant)
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
            _emit(results[-1])
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("remembering", total=len(submitted))
        for request_id in submitted:
            outcome = session.worker.run_next(request_id)
            result = outcome.as_json() if outcome else _held(request_id)
            results.append(result)
            progress.advance(task)
            if as_json:
                _emit(result)
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


ChatTypeOpt = Annotated[str | None, typer.Option("--chat-type", help="group | private")]
PlatformOpt = Annotated[
    str | None, typer.Option("--platform", help="default: GROUPMIND_DEFAULT_PLATFORM")
]
ChatIdOpt = Annotated[str | None, typer.Option("--chat-id")]


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
    from groupmind.session import open_session
    from state.search import build_query

    session = open_session(STATE.settings, worker=False, bot=STATE.bot)
    if batch is not None:
        settings, refused_any = STATE.settings, False

        def one(raw: Any) -> Any:
            built = build_query(raw, settings.limits)
            return [h.as_json() for h in session.deps.events.search(built)]

        lines = lines_of(batch)
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("searching", total=len(lines))
            for line in lines:
                progress.advance(task)
                result, refused = judged(line, one)
                refused_any |= refused
                _emit(result)
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
        q = build_query({k: v for k, v in fields.items() if v is not None}, STATE.settings.limits)
    except (InputError, ValueError) as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    hits = session.deps.events.search(q)
    if as_json:
        _emit([h.as_json() for h in hits])
        return
    table = Table("score", "when", "who", "text")
    for h in hits:
        when = datetime.fromtimestamp(h.event.timestamp, STATE.settings.tz).strftime(
            "%Y-%m-%d %H:%M"
        )
        flag = " [yellow](degraded)[/]" if h.event.degraded else ""
        table.add_row(f"{h.score:.4f}", when, h.event.user_name, h.event.text + flag)
    out.print(table)


def chat_scope(platform: str | None, chat_type: str | None, chat_id: str | None) -> Any:
    """A ChatScope from options (None when no chat is named); exits 2 on a half-named one."""
    from domain.scope import ChatScope, ChatType

    if chat_type is None and chat_id is None:
        return None
    kinds: dict[str | None, ChatType] = {"group": "group", "private": "private"}
    if chat_type in kinds and chat_id:
        platform = platform or STATE.settings.default_platform
        return ChatScope(platform=platform, chat_type=kinds[chat_type], chat_id=chat_id)
    err.print("[red]a chat needs --chat-type group|private and --chat-id[/red]")
    raise typer.Exit(2)


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
    from groupmind.session import open_session
    from nodes.prompt_blocks import render_relation_block
    from stores.base import profile_view

    shown_in = chat_scope(platform, chat_type, chat_id)
    platform = platform or STATE.settings.default_platform
    session = open_session(STATE.settings, worker=False, bot=STATE.bot)
    data = profile_json(session.deps, platform, user_id, shown_in)
    if data is None:
        if as_json:
            _emit({"user_id": user_id, "error": "user_id: no profile stored for this user"})
        else:
            err.print(f"[yellow]no profile stored for user {user_id} on {platform}[/yellow]")
        raise typer.Exit(1)
    if as_json:
        _emit(data)
        return
    if shown_in is None:
        for learned in data["learned"]:
            chat = ChatScope(**{k: learned[k] for k in ("platform", "chat_type", "chat_id")})
            view = profile_view(session.deps.profiles, user_id, chat, "chat")
            out.rule(f"learned in {chat.key}")
            out.print(render_relation_block(view, chat, STATE.settings.tz))
    else:
        view = profile_view(
            session.deps.profiles, user_id, shown_in, session.deps.limits.profile_sharing
        )
        out.rule(
            f"what {shown_in.key} sees (PROFILE_SHARING={session.deps.limits.profile_sharing})"
        )
        out.print(render_relation_block(view, shown_in, STATE.settings.tz))
        for tie in data["circle"]:
            counts = ", ".join(f"{kind} {n}" for kind, n in tie["counts"].items())
            stated = f"; says: {', '.join(tie['labels'])}" if tie["labels"] else ""
            out.print(f"tied to {tie['user_name']} ({tie['user_id']}): {counts}{stated}")
    if data.get("unscoped"):
        out.rule("learned before provenance was kept (never shown to a model)")
        out.print(data["unscoped"])


@app.command()
def worker(
    once: Annotated[bool, typer.Option("--once", help="Run what is due, then exit")] = False,
    poll: Annotated[float, typer.Option(help="Seconds between polls")] = 1.0,
    variant: VariantOpt = None,
) -> None:
    """Process queued memory jobs (retries with backoff) until interrupted. A database,
    Chroma server or model that is down, at start or later, is waited for. A job runs the
    variants it was queued with; --variant picks those of jobs that name none."""
    from groupmind.worker import lower_priority
    from nodes.variants import UnknownVariant

    # Background work: yield the cores to replies and to the stores a job waits on. Before
    # the session starts its threads (leases, embedding), so that they all inherit it.
    lower_priority(STATE.settings.worker_nice)
    if once:
        session = _session(variant)
        done = session.worker.drain(lambda o: _emit(o.as_json()))
        err.print(f"{len(done)} job(s) processed; queue: {session.jobs.counts()}")
        return
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    backoff = poll
    while True:
        try:
            session = _session(variant)
            break
        except (typer.Exit, UnknownVariant):
            raise
        except Exception as exc:  # noqa: BLE001 - a dependency is down: wait for it
            err.print(f"[yellow]worker start: {type(exc).__name__}: {exc}; retrying in "
                      f"{backoff:.0f} s[/yellow]")  # fmt: skip
            if stop.wait(backoff):
                return
            backoff = min(30.0, backoff * 2)
    err.print(f"worker {session.worker.worker_id} polling every {poll}s (Ctrl-C to stop)")
    try:
        session.worker.serve(stop, poll)
    except KeyboardInterrupt:
        pass


@app.command()
def jobs(
    status: Annotated[str | None, typer.Option(help="queued | running | done | failed")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    limit: Annotated[int, typer.Option(help="the newest N")] = 50,
) -> None:
    """List memory jobs in the durable queue (with --json: each job's payload, variants,
    result and error)."""
    from groupmind.session import open_session

    if status not in (None, "queued", "running", "done", "failed"):
        err.print(f"[red]status: unknown status {status!r}[/red]")
        raise typer.Exit(2)
    session = open_session(STATE.settings, worker=False, bot=STATE.bot)
    rows = session.jobs.list(status, limit=limit)  # type: ignore[arg-type]
    if as_json:
        for row in rows:
            _emit(
                {
                    "request_id": row.request_id,
                    "status": row.status,
                    "attempts": row.attempts,
                    "variants": row.payload.get("variants") or {},
                    "payload": row.payload,
                    "result": row.result,
                    "error": row.last_error,
                    "next_attempt_at": row.next_attempt_at,
                }
            )
        return
    table = Table("request_id", "status", "attempts", "last error")
    for row in rows:
        table.add_row(row.request_id, row.status, str(row.attempts), row.last_error or "")
    out.print(table)
    out.print(session.jobs.counts())


@app.command()
def chats(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every chat seen: its state, the persona speaking there, messages, memories (per
    persona) and memory jobs still waiting."""
    from dataclasses import asdict

    from stores.sql import make_engine, migrate
    from stores.sql.chats import chat_overview

    engine = make_engine(STATE.settings.resolved_sql_url)
    migrate(engine, default_platform=STATE.settings.default_platform, owner=STATE.settings.owner)
    summaries = chat_overview(engine, STATE.bot)
    if as_json:
        for summary in summaries:
            _emit(asdict(summary))
        return
    table = Table("chat", "name", "state", "persona", "messages", "memories", "jobs waiting")
    for c in summaries:
        memories = ", ".join(f"{p}: {n}" for p, n in sorted(c.memories.items())) or "0"
        table.add_row(c.stream, c.name, c.state, c.persona_id, str(c.messages), memories,
                      str(c.jobs_waiting))  # fmt: skip
    out.print(table)


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

    session = _session(variant)
    graph = session.reply_graph()
    context = reply_context(session.deps, _variants(variant))
    background = session.runtime.start_background_worker()
    lines = lines_of(file)
    failed = False
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("replaying", total=len(lines))
        for line in lines:
            progress.advance(task)
            result, refused = judged(
                line, lambda raw: reply_to(graph, session.deps, raw, context), "message_id"
            )
            failed |= refused
            if wait_memory:
                background.drain()
            if as_json:
                _emit(result)
            else:
                _print_reply(result)
    background.drain()
    background.stop()
    if failed:
        raise typer.Exit(1)


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

    session = _session(variant, worker=False)
    context = reply_context(session.deps, _variants(variant))
    lines = lines_of(file)
    failed = False
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("ranking", total=len(lines))
        for line in lines:
            progress.advance(task)
            result, refused = judged(
                line, lambda raw: rank_only(session.deps, raw, context), "message_id"
            )
            failed |= refused
            if as_json:
                _emit(result)
            else:
                out.print(result)
    if failed:
        raise typer.Exit(1)


@app.command()
def forget(
    user_id: Annotated[str | None, typer.Option("--user-id", help="a person")] = None,
    platform: PlatformOpt = None,
    chat_type: ChatTypeOpt = None,
    chat_id: ChatIdOpt = None,
    all_bots: Annotated[
        bool, typer.Option("--all-bots", help="in the data of every bot, not only --bot's")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="do not ask")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    wait: Annotated[float, typer.Option(help="seconds to wait for running memory jobs")] = 30.0,
) -> None:
    """Erase a person (everywhere on a platform, or in one chat) or a whole chat: events,
    keyword index, messages, what was learned, relationship, queued jobs, checkpoints, reply
    threads, their words in others' data (group topics, answered messages, job context),
    then what the engines keep of it on disk."""
    from groupmind.forget import forget as erase
    from groupmind.session import open_session
    from nodes.forget import validate_request
    from stores.sql.chats import known_bots

    raw = {"platform": platform, "user_id": user_id, "chat_type": chat_type, "chat_id": chat_id}
    session = open_session(STATE.settings, bot=STATE.bot)
    try:
        request = validate_request(raw, session.deps)
    except InputError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    target = request.target()
    bots = sorted({STATE.bot, *known_bots(session.runtime.engine)}) if all_bots else [STATE.bot]
    what = f"user {target.user_id} " if target.user_id else ""
    where = f"in {target.chat.key}" if target.chat else f"everywhere on {target.platform}"
    whose = "every bot's data" if all_bots else f"bot {STATE.bot}'s data"
    if not yes and not typer.confirm(f"Erase {what}{where}, in {whose}? This cannot be undone",
                                     err=True):  # fmt: skip
        raise typer.Exit(1)
    graph = session.reply_graph()
    results = {bot: erase(session.runtime, bot, graph, request, wait_s=wait) for bot in bots}
    compacted = session.runtime.compact()
    result = {**results[STATE.bot], "compacted": compacted}
    if all_bots:
        result = {"bots": results, "compacted": compacted}
    still = [j for r in results.values() for j in r["still_running"]]
    if as_json:
        _emit(result)
    else:
        for bot, erased in results.items():
            table = Table("erased" + (f" ({bot})" if all_bots else ""), "count")
            for kind, count in erased["removed"].items():
                table.add_row(kind, str(count))
            out.print(table)
        for store, how in compacted.items():
            out.print(f"{store}: {how}")
    for erased in results.values():
        copies = erased["copies"]
        for path, how in copies.get("exports", {}).items():
            err.print(f"export {path}: {how if how == 'deleted' else f'{how} line(s) removed'}")
        for name in copies.get("experiments", []):
            err.print(f"experiment {name}: its arms' deployments deleted, examples rewritten")
        for copy in copies.get("elsewhere", []):
            err.print(f"[yellow]{copy['path']} (a copy outside the data dir) holds {copy['lines']} "
                      f"line(s) of it: {copy['delete']}[/yellow]", highlight=False)  # fmt: skip
    if still:
        err.print(f"[yellow]still running: {still}: run forget again[/yellow]")
        raise typer.Exit(1)


@app.command()
def export(
    chat_type: Annotated[str, typer.Option("--chat-type", help="group | private")],
    chat_id: Annotated[str, typer.Option("--chat-id")],
    platform: PlatformOpt = None,
    persona: Annotated[str | None, typer.Option("--persona", help="default: the chat's")] = None,
    output: Annotated[Path | None, typer.Option("--out", help="default: standard output")] = None,
    keep_reply_to: Annotated[
        bool, typer.Option(help="leave reply_to in the messages (else it is only a label)")
    ] = False,
    actions_from_bot: Annotated[
        bool, typer.Option(help="label each message with what the bot did (action)")
    ] = False,
) -> None:
    """Write a chat's messages as an experiment dataset (JSONL, docs/experiments.md): each
    message with, where known, the message it answered and what the bot did."""
    from groupmind.export import export_chat
    from groupmind.session import open_session
    from stores.sql.chats import chat_overview

    chat = chat_scope(platform, chat_type, chat_id)
    session = open_session(STATE.settings, worker=False, bot=STATE.bot)
    deps = session.deps
    persona_id = persona or deps.persona_for(chat.platform, chat.chat_type, chat.chat_id)
    name = next((c.name for c in chat_overview(session.runtime.engine, STATE.bot, only=chat)
                 if c.stream == chat.key), "")  # fmt: skip
    examples = export_chat(deps, chat, persona_id, chat_name=name, keep_reply_to=keep_reply_to,
                           actions_from_bot=actions_from_bot)  # fmt: skip
    sink = output.open("w", encoding="utf-8") if output else sys.stdout
    count = 0
    for example in examples:
        sink.write(json.dumps(example, ensure_ascii=False) + "\n")
        count += 1
    if output:
        sink.close()
        from groupmind.copies import record

        # listed, so that forget reaches this copy too (docs/scopes.md)
        record(STATE.settings.data_dir, bot=STATE.bot, kind="export", path=output, chat=chat.key)
    err.print(f"{count} message(s) of {chat.key} (persona {persona_id})")
    if not count:
        raise typer.Exit(1)


@app.command()
def migrate() -> None:
    """Bring groupmind's SQL schema up to date (every process does it at start; run it
    once before starting many, e.g. deploy/create-databases.sh)."""
    from sqlalchemy import text

    from stores.sql import make_engine
    from stores.sql import migrate as upgrade

    engine = make_engine(STATE.settings.resolved_sql_url)
    upgrade(engine, default_platform=STATE.settings.default_platform, owner=STATE.settings.owner)
    with engine.connect() as conn:
        revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    out.print(f"schema at revision {revision} ({engine.url.render_as_string(hide_password=True)})")


@app.command()
def compact(
    full: Annotated[
        bool, typer.Option("--full", help="PostgreSQL: VACUUM FULL (locks each table)")
    ] = False,
    chroma_path: Annotated[
        Path | None, typer.Option("--chroma-path", help="a Chroma server's data path, on its host")
    ] = None,
) -> None:
    """Have the storage engines let go of what they keep of deleted rows on disk (SQLite
    free pages and logs, Chroma's write log, PostgreSQL with --full), after pruning every
    thread's checkpoint history to its latest, and seal each chat's loose vectors in blocks
    (a chat not held is read in a few rows), and leave Chroma's rows only what it filters
    by (rows written before held the text). Forget runs it, without those two."""
    from stores.compact import purge_chroma

    if chroma_path is not None:
        out.print(f"chroma: {purge_chroma(chroma_path / 'chroma.sqlite3')}")
        return
    from groupmind.session import open_session
    from stores.hybrid import HybridEventStore
    from stores.sql.blocks import VectorBlocks
    from stores.sql.covered import tenant

    session = open_session(STATE.settings, bot=STATE.bot)  # with its checkpointer: history too
    runtime = session.runtime
    sealed = VectorBlocks(runtime.engine, tenant(session.deps.limits.bot_id)).seal_all()
    out.print(f"vectors: {sealed} sealed in blocks")
    events = session.deps.events
    if isinstance(events, HybridEventStore):  # rows written by older versions hold the text
        out.print(f"chroma rows: {events.vector.make_lean()} made lean (vector and scope keys)")
    for store, how in runtime.compact(full=full).items():
        out.print(f"{store}: {how}")


@app.command()
def demo() -> None:
    """The main job on the embedded defaults, readable by a person."""
    from groupmind.demo import run_demo

    run_demo(STATE.settings, out)


@app.command()
def onebot(
    host: Annotated[str, typer.Option(help="reverse mode: where to listen")] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8080,
    access_token: Annotated[
        str | None, typer.Option(envvar="GROUPMIND_ONEBOT_ACCESS_TOKEN", help="required of clients")
    ] = None,
    connect: Annotated[
        str | None, typer.Option(help="forward mode: the implementation's ws:// URL")
    ] = None,
    server: Annotated[str | None, typer.Option(help="a LangGraph server (else in-process)")] = None,
    api_key: Annotated[
        str | None, typer.Option(envvar="GROUPMIND_API_KEY", help="this bot's key on the server")
    ] = None,
    platform: Annotated[str, typer.Option(help="the platform of its chats")] = "qq",
    stickers: Annotated[str, typer.Option(help="send stickers as image | face")] = "image",
    journal: Annotated[
        Path | None,
        typer.Option(
            help="the event journal (default: GROUPMIND_ONEBOT_JOURNAL, which forget "
            "erases from, or <data dir>/onebot-journal.db)"
        ),  # fmt: skip
    ] = None,
    variant: VariantOpt = None,
) -> None:
    """Bridge a OneBot v11 implementation (NapCat, Lagrange, LLOneBot, ...) to groupmind:
    a reverse WebSocket server at /onebot/v11/ws, or --connect to the implementation's."""
    import asyncio

    from groupmind.onebot.run import BridgeOptions, Refused, run_bridge

    if stickers not in ("image", "face"):
        err.print("[red]--stickers: image or face[/red]")
        raise typer.Exit(2)
    opts = BridgeOptions(host=host, port=port, access_token=access_token, connect=connect,
                         server=server, api_key=api_key, platform=platform,
                         stickers=stickers, journal=journal)  # type: ignore[arg-type]  # fmt: skip
    # Connections, refusals and messages are logged at the default level (ids, never content).
    logging.getLogger("groupmind.onebot").setLevel(logging.INFO)
    try:
        asyncio.run(run_bridge(STATE.settings, opts, _variants(variant), say=err.print))
    except Refused as exc:
        err.print(f"[red]onebot: {exc}[/red]")
        raise typer.Exit(2) from None


@app.command()
def console(
    host: Annotated[str, typer.Option(help="beyond loopback, a key is required")] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8765,
    key: Annotated[
        str | None,
        typer.Option(envvar="GROUPMIND_CONSOLE_KEY", help="--bot's key (besides GROUPMIND_BOTS)"),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(help="a LangGraph server whose forget graph forgets (its threads too)"),
    ] = None,
) -> None:
    """The operator's console in the browser (docs/console.md): for in-process bots, or
    beside a server that cannot serve it itself (--server: forget runs there)."""
    import uvicorn

    from groupmind.console.access import Access
    from groupmind.console.app import Host, make_console
    from groupmind.console.forgetting import in_process, on_server
    from groupmind.exposure import loopback
    from groupmind.forget import CheckpointThreads
    from groupmind.session import open_session
    from groupmind.settings import BotKey

    keys = list(STATE.settings.bots)
    if key:
        try:
            keys.append(BotKey.model_validate({"id": STATE.bot, "api_key": key}))
        except ValidationError as exc:
            err.print(f"[red]--key: {describe_validation_error(exc)}[/red]")
            raise typer.Exit(2) from None
    if not keys and not loopback(host):
        err.print(f"[red]--host {host}: a console beyond this machine needs a key "
                  "(--key or GROUPMIND_BOTS)[/red]")  # fmt: skip
        raise typer.Exit(2)
    session = open_session(STATE.settings, bot=STATE.bot, worker=server is None)
    runtime = session.runtime
    access = Access(tuple(keys), open_bot=STATE.bot)
    if server is not None:
        forget = on_server(server)
    else:
        graph = session.reply_graph()
        forget = in_process(runtime, lambda bot: CheckpointThreads(graph, bot))
    app_ = make_console(
        Host(runtime=lambda: runtime, access=lambda: access, forget=forget, bound=host)
    )
    who = "keys required" if keys else "open, loopback only"
    err.print(f"console: http://{host}:{port}/console ({who})")
    uvicorn.run(app_, host=host, port=port, log_level="warning")


app.command()(experiment)
app.add_typer(persona_app, name="persona")
app.add_typer(memory_app, name="memory")
app.add_typer(import_app, name="import")


def run() -> None:
    """The ``groupmind`` command: a storage failure (a read-only or full disk, a database
    gone) ends it with one line and exit code 1, not a traceback."""
    try:
        code = app(standalone_mode=False)  # an Exit comes back as its code
    except click.exceptions.Abort:
        err.print("Aborted.")
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:
        line = storage_error(exc)
        if line is None:
            raise
        err.print(line, style="red", markup=False, highlight=False)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    run()
