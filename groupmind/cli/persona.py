"""``groupmind persona``: the operator's personas file (``stores/personas_file.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from groupmind.cli.common import err, invocation, out

if TYPE_CHECKING:
    from stores.personas_file import FilePersonaStore

app = typer.Typer(no_args_is_help=True, help="Personas: who the bot is, in which chat.")


def _store() -> FilePersonaStore:
    """The personas of ``--bot`` (each bot's are its own: ``Settings.personas_file_of``)."""
    from stores.personas_file import FilePersonaStore, PersonaFileError

    here = invocation()
    store = FilePersonaStore(here.settings.personas_file_of(here.bot))
    try:
        store.check()
    except PersonaFileError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    return store


def _as_json(persona: Any, book: Any) -> dict[str, Any]:
    return {
        "persona_id": persona.persona_id,
        "name": persona.name,
        "aliases": persona.aliases,
        "system_prompt": persona.system_prompt,
        "opening": persona.begin_dialogs,
        "default": book.default == persona.persona_id,
        "chats": sorted(k for k, v in book.chats.items() if v == persona.persona_id),
    }


@app.command("list")
def list_(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every configured persona, the default, and which chats each serves."""
    store = _store()
    book = store.book()
    rows = [_as_json(p, book) for p in store.list_personas()]
    if as_json:
        out.print_json(json.dumps({"default": book.default, "personas": rows}, ensure_ascii=False))
        return
    table = Table("id", "name", "aliases", "serves")
    for r in rows:
        serves = ["default"] if r["default"] else []
        table.add_row(
            r["persona_id"], r["name"], "、".join(r["aliases"]), ", ".join(serves + r["chats"])
        )
    out.print(table)
    out.print(f"file: {store.path}")
    if book.default not in book.personas:
        out.print(f"[yellow]the default persona {book.default!r} is not configured[/yellow]")


@app.command()
def show(persona_id: str, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """One persona, whole."""
    store = _store()
    persona = store.get_persona(persona_id)
    if persona is None:
        err.print(f"[red]persona {persona_id!r} is not configured[/red]")
        raise typer.Exit(1)
    data = _as_json(persona, store.book())
    if as_json:
        out.print_json(json.dumps(data, ensure_ascii=False))
        return
    for key, value in data.items():
        out.print(f"[bold]{key}[/bold]: {value}")


@app.command("set")
def set_(
    persona_id: str,
    name: Annotated[
        str | None, typer.Option(help="the display name memories and prompts use")
    ] = None,
    alias: Annotated[list[str] | None, typer.Option(help="another name that wakes the bot")] = None,
    system_prompt: Annotated[str | None, typer.Option("--system-prompt")] = None,
    system_prompt_file: Annotated[Path | None, typer.Option("--system-prompt-file")] = None,
    opening: Annotated[
        list[str] | None, typer.Option(help="the opening dialogue, user and bot lines in turn")
    ] = None,
) -> None:
    """Create or change a persona (fields not given are kept)."""
    from pydantic import ValidationError

    from domain.scope import check_key_part
    from stores.base import Persona

    try:
        check_key_part(persona_id, "persona_id")
    except ValueError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    store = _store()
    current = store.book().personas.get(persona_id)
    if current is None and not name:
        err.print(f"[red]a new persona needs --name (persona {persona_id!r})[/red]")
        raise typer.Exit(2)
    if system_prompt_file is not None:
        system_prompt = system_prompt_file.read_text(encoding="utf-8")
    try:
        store.put_persona(
            Persona(
                persona_id=persona_id,
                name=name or (current.name if current else ""),
                aliases=alias if alias is not None else (current.aliases if current else []),
                system_prompt=system_prompt
                if system_prompt is not None
                else (current.system_prompt if current else ""),
                begin_dialogs=opening
                if opening is not None
                else (current.opening if current else []),
            )
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        err.print(f"[red]{'.'.join(map(str, first['loc']))}: {first['msg']}[/red]")
        raise typer.Exit(2) from None
    out.print(f"persona {persona_id} saved in {store.path}")


@app.command()
def use(
    persona_id: str,
    platform: Annotated[
        str | None, typer.Option(help="default: GROUPMIND_DEFAULT_PLATFORM")
    ] = None,
    chat_type: Annotated[str | None, typer.Option("--chat-type", help="group | private")] = None,
    chat_id: Annotated[str | None, typer.Option("--chat-id")] = None,
) -> None:
    """Make a persona the default, or the one that serves a chat. A message that names its
    persona (``persona_id``) is served by that one."""
    from domain.scope import ChatScope, ChatType

    settings = invocation().settings
    store = _store()
    if store.get_persona(persona_id) is None:
        err.print(f"[red]persona {persona_id!r} is not configured: groupmind persona set "
                  f"{persona_id} --name ...[/red]")  # fmt: skip
        raise typer.Exit(2)
    if chat_type is None and chat_id is None:
        store.use(persona_id)
        out.print(f"{persona_id} is the default persona")
        return
    kinds: dict[str | None, ChatType] = {"group": "group", "private": "private"}
    if chat_type not in kinds or not chat_id:
        err.print("[red]a chat needs --chat-type group|private and --chat-id[/red]")
        raise typer.Exit(2)
    try:
        chat = ChatScope(
            platform=platform or settings.default_platform,
            chat_type=kinds[chat_type],
            chat_id=chat_id,
        )
    except ValueError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    store.use(persona_id, chat)
    out.print(f"{persona_id} serves {chat.key}")
