"""What every command shares: the invocation the root command resolved (the settings and
whose data, ``--bot``), the output consoles, the common options and the session a command
opens. Commands import what is heavy (the graphs, the stores) inside themselves, so that
``groupmind --help`` and a mistyped option answer at once."""

from __future__ import annotations

import json
import sys
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from domain.scope import ChatScope, ChatType
from groupmind.lines import Line, read_jsonl
from groupmind.settings import Settings

if TYPE_CHECKING:
    from groupmind.session import Session

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)  # an error naming a path stays one line


@dataclass(frozen=True)
class Invocation:
    """What the root command resolved, for every command under it: the settings and the
    bot whose data the commands read and write."""

    settings: Settings
    bot: str

    def session(self, **options: Any) -> Session:
        """The bot's session (``groupmind.session.open_session`` options)."""
        from groupmind.session import open_session

        return open_session(self.settings, bot=self.bot, **options)


# Set by the root command for the commands under it (typer keeps its own click: a context
# variable is how a command reads it without taking the context as a parameter).
CURRENT: ContextVar[Invocation] = ContextVar("groupmind_invocation")


def invocation() -> Invocation:
    """The running command's invocation (the root command's options, resolved)."""
    found = CURRENT.get(None)
    if found is None:
        raise RuntimeError("no groupmind command is running")
    return found


def emit(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def lines_of(path: Path) -> list[Line]:
    if not path.exists():
        err.print(f"[red]{path}: no such file[/red]")
        raise typer.Exit(2)
    return list(read_jsonl(path))


def asked_variants(pairs: list[str] | None) -> dict[str, str]:
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


def session_for(pairs: list[str] | None, **options: Any) -> Session:
    """A session whose memory worker runs the asked variants; exits 2 naming a variant
    that does not exist or cannot run (``llm`` without a model)."""
    from groupmind.chatting import checked_variants
    from nodes.variants import UnknownVariant

    here = invocation()
    asked = asked_variants(pairs)
    try:
        session = here.session(variants=asked, **options)
        checked_variants(asked, session.deps)
    except UnknownVariant as exc:
        err.print(f"[red]--variant: {exc}[/red]")
        raise typer.Exit(2) from None
    return session


ChatTypeOpt = Annotated[str | None, typer.Option("--chat-type", help="group | private")]


PlatformOpt = Annotated[
    str | None, typer.Option("--platform", help="default: GROUPMIND_DEFAULT_PLATFORM")
]


ChatIdOpt = Annotated[str | None, typer.Option("--chat-id")]


def chat_scope(
    platform: str | None, chat_type: str | None, chat_id: str | None
) -> ChatScope | None:
    """A ChatScope from options (None when no chat is named); exits 2 on a half-named one."""
    here = invocation()
    if chat_type is None and chat_id is None:
        return None
    kinds: dict[str | None, ChatType] = {"group": "group", "private": "private"}
    if chat_type in kinds and chat_id:
        platform = platform or here.settings.default_platform
        return ChatScope(platform=platform, chat_type=kinds[chat_type], chat_id=chat_id)
    err.print("[red]a chat needs --chat-type group|private and --chat-id[/red]")
    raise typer.Exit(2)
