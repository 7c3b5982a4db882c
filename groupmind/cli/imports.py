"""``groupmind import``: memories from the systems operators come from (docs/import.md)."""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from groupmind.cli.common import err, invocation, out
from groupmind.importing.contract import a_chat, a_platform, an_id, chat_map, field
from groupmind.importing.report import Report
from state.validation import InputError, as_key_part

app = typer.Typer(no_args_is_help=True, help="Import memories: Undefined, MoFox, chat history.")

PlatformOpt = Annotated[
    str | None, typer.Option("--platform", help="default: GROUPMIND_DEFAULT_PLATFORM")
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="report what would be written; write nothing")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="the report as one JSON object")]


def _platform(platform: str | None) -> str:
    return platform or invocation().settings.default_platform


def _checked(make: Callable[[], Any]) -> Any:
    """Options and files checked before anything is written: exit 2 naming the problem."""
    try:
        return make()
    except (InputError, ValueError) as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


def _run(
    total: int | None, label: str, as_json: bool, work: Callable[[Callable[[int], None]], Any]
) -> Any:
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task(label, total=total)
        return work(lambda n: progress.advance(task, n))


def _finish(report: Report, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    body = {**report.as_json(), **(extra or {})}
    if as_json:
        sys.stdout.write(json.dumps(body, ensure_ascii=False) + "\n")
    else:
        verb = "would add" if report.dry_run else "added"
        table = Table("kind", verb, "already there")
        for kind in sorted({*report.added, *report.already}):
            table.add_row(kind, str(report.added.get(kind, 0)), str(report.already.get(kind, 0)))
        out.print(table)
        for key, value in (extra or {}).items():
            out.print(f"{key}: {value}")
        for e in report.errors:
            err.print(f"[red]{e['record']}: {e['field']}: {e['error']}[/red]")
    if report.errors:
        raise typer.Exit(1)


@app.command()
def undefined(
    file: Annotated[Path, typer.Argument(help="Undefined's data/end_summaries.json")],
    platform: PlatformOpt = None,
    chat: Annotated[
        str | None, typer.Option(help="the chat of records that name none: group:ID | private:ID")
    ] = None,
    mapping: Annotated[
        list[str] | None,
        typer.Option("--map", help="a location's chat name: NAME=group:ID | NAME=private:ID"),
    ] = None,
    persona: Annotated[
        str, typer.Option(help="the persona whose memories they become")
    ] = "default",
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Undefined's end summaries, as event memories in their chats."""
    from groupmind.importing.undefined import Target, import_summaries, read_summaries

    where = _checked(lambda: a_platform(_platform(platform), "--platform"))
    target = _checked(
        lambda: Target(
            platform=where,
            named=chat_map(mapping or [], where),
            default=a_chat(chat, where) if chat else None,
            persona_id=field("--persona", lambda: as_key_part(persona, "--persona")),
        )
    )
    records = _checked(lambda: read_summaries(file))
    deps = invocation().session().deps
    mtime = file.stat().st_mtime
    report = _run(len(records), "importing summaries", as_json, lambda tick: import_summaries(
        records, target, deps, file_time=mtime, dry_run=dry_run, tick=tick))  # fmt: skip
    _finish(report, as_json)


@app.command()
def mofox(
    file: Annotated[Path, typer.Argument(help="MoFox's SQLite database, or its rows as JSON")],
    chat: Annotated[
        str,
        typer.Option(
            help="where the impressions were learned: group:ID | private:ID | private "
            "(each person's own private chat)"
        ),
    ],
    platform: PlatformOpt = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """MoFox's relationship table: relationships, impressions and key facts."""
    from groupmind.importing.mofox import Target, import_relationships, read_rows

    where = _checked(lambda: a_platform(_platform(platform), "--platform"))
    target = _checked(lambda: Target(where, None if chat == "private" else a_chat(chat, where)))
    deps = invocation().session().deps
    rows = read_rows(file, deps.limits)  # streamed: a table may be large
    end = object()
    first = _checked(lambda: next(rows, end))  # the file itself is checked here
    stream = iter(()) if first is end else itertools.chain([first], rows)
    now = time.time()
    report = _run(None, "importing relationships", as_json, lambda tick: import_relationships(
        stream, target, deps, now=now, dry_run=dry_run, tick=tick))  # fmt: skip
    _finish(report, as_json)


@app.command()
def history(
    file: Annotated[
        Path, typer.Argument(help="OneBot message events (JSON or lines), or input messages")
    ],
    platform: PlatformOpt = None,
    self_id: Annotated[
        str | None, typer.Option("--self-id", help="the bot's own account in OneBot events")
    ] = None,
    queue_only: Annotated[
        bool, typer.Option("--queue-only", help="store and queue; a worker runs the jobs")
    ] = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """A chat history: stored messages, and memory jobs run here (or by a worker)."""
    from groupmind.importing.history import Source, import_history, read_records

    where = _checked(lambda: a_platform(_platform(platform), "--platform"))
    mine = _checked(lambda: an_id(self_id, "--self-id")) if self_id is not None else None
    source = Source(where, mine)
    records = _checked(lambda: read_records(file))
    session = invocation().session(worker=not (queue_only or dry_run))
    report, job_ids = _run(len(records), "importing messages", as_json, lambda tick: import_history(
        records, source, session.deps, dry_run=dry_run, tick=tick))  # fmt: skip
    ran: dict[str, int] = {}
    if not (queue_only or dry_run):
        due = [
            i
            for i in job_ids
            if (row := session.jobs.get(i)) is not None and row.status == "queued"
        ]
        _run(len(due), "remembering", as_json, lambda tick: _remember(session, due, ran, tick))
    _finish(report, as_json, {"jobs_run": ran} if ran else None)


def _remember(
    session: Any, ids: list[str], ran: dict[str, int], tick: Callable[[int], None]
) -> None:
    """Run the history's queued jobs here (those a crashed run left too)."""
    for request_id in ids:
        outcome = session.worker.run_next(request_id)
        status = outcome.as_json()["status"] if outcome else "held by another worker"
        ran[status] = ran.get(status, 0) + 1
        tick(1)
