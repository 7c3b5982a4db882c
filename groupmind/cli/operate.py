"""Running and keeping a deployment: the memory worker, its jobs, chats, forget, export,
migrate and compact."""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from groupmind.cli.app import app
from groupmind.cli.common import (
    ChatIdOpt,
    ChatTypeOpt,
    PlatformOpt,
    VariantOpt,
    chat_scope,
    emit,
    err,
    invocation,
    out,
    session_for,
)
from state.validation import InputError


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

    here = invocation()
    # Background work: yield the cores to replies and to the stores a job waits on. Before
    # the session starts its threads (leases, embedding), so that they all inherit it.
    lower_priority(here.settings.worker_nice)
    if once:
        session = session_for(variant)
        done = session.worker.drain(lambda o: emit(o.as_json()))
        err.print(f"{len(done)} job(s) processed; queue: {session.jobs.counts()}")
        return
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    backoff = poll
    while True:
        try:
            session = session_for(variant)
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

    here = invocation()
    if status not in (None, "queued", "running", "done", "failed"):
        err.print(f"[red]status: unknown status {status!r}[/red]")
        raise typer.Exit(2)
    session = here.session(worker=False)
    rows = session.jobs.list(status, limit=limit)  # type: ignore[arg-type]
    if as_json:
        for row in rows:
            emit(
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

    here = invocation()
    engine = make_engine(here.settings.resolved_sql_url)
    migrate(engine, default_platform=here.settings.default_platform, owner=here.settings.owner)
    summaries = chat_overview(engine, here.bot)
    if as_json:
        for summary in summaries:
            emit(asdict(summary))
        return
    table = Table("chat", "name", "state", "persona", "messages", "memories", "jobs waiting")
    for c in summaries:
        memories = ", ".join(f"{p}: {n}" for p, n in sorted(c.memories.items())) or "0"
        table.add_row(c.stream, c.name, c.state, c.persona_id, str(c.messages), memories,
                      str(c.jobs_waiting))  # fmt: skip
    out.print(table)


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
    from nodes.forget import validate_request
    from stores.sql.chats import known_bots

    here = invocation()
    raw = {"platform": platform, "user_id": user_id, "chat_type": chat_type, "chat_id": chat_id}
    session = here.session()
    try:
        request = validate_request(raw, session.deps)
    except InputError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    target = request.target()
    bots = sorted({here.bot, *known_bots(session.runtime.engine)}) if all_bots else [here.bot]
    what = f"user {target.user_id} " if target.user_id else ""
    where = f"in {target.chat.key}" if target.chat else f"everywhere on {target.platform}"
    whose = "every bot's data" if all_bots else f"bot {here.bot}'s data"
    if not yes and not typer.confirm(f"Erase {what}{where}, in {whose}? This cannot be undone",
                                     err=True):  # fmt: skip
        raise typer.Exit(1)
    graph = session.reply_graph()
    results = {bot: erase(session.runtime, bot, graph, request, wait_s=wait) for bot in bots}
    compacted = session.runtime.compact()
    result = {**results[here.bot], "compacted": compacted}
    if all_bots:
        result = {"bots": results, "compacted": compacted}
    still = [j for r in results.values() for j in r["still_running"]]
    if as_json:
        emit(result)
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
    from stores.sql.chats import chat_overview

    here = invocation()
    chat = chat_scope(platform, chat_type, chat_id)
    assert chat is not None  # --chat-type and --chat-id are required options
    session = here.session(worker=False)
    deps = session.deps
    persona_id = persona or deps.persona_for(chat.platform, chat.chat_type, chat.chat_id)
    name = next((c.name for c in chat_overview(session.runtime.engine, here.bot, only=chat)
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
        record(here.settings.data_dir, bot=here.bot, kind="export", path=output, chat=chat.key)
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

    here = invocation()
    engine = make_engine(here.settings.resolved_sql_url)
    upgrade(engine, default_platform=here.settings.default_platform, owner=here.settings.owner)
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

    here = invocation()
    if chroma_path is not None:
        out.print(f"chroma: {purge_chroma(chroma_path / 'chroma.sqlite3')}")
        return
    from stores.hybrid import HybridEventStore
    from stores.sql.blocks import VectorBlocks
    from stores.sql.covered import tenant

    session = here.session()  # with its checkpointer: history too
    runtime = session.runtime
    sealed = VectorBlocks(runtime.engine, tenant(session.deps.limits.bot_id)).seal_all()
    out.print(f"vectors: {sealed} sealed in blocks")
    events = session.deps.events
    if isinstance(events, HybridEventStore):  # rows written by older versions hold the text
        out.print(f"chroma rows: {events.vector.make_lean()} made lean (vector and scope keys)")
    for store, how in runtime.compact(full=full).items():
        out.print(f"{store}: {how}")
