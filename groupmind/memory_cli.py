"""``groupmind memory``: what keeps memories alive or lets them go (stores/decay.py): pin
the ones that must stay, prune the weakest beyond a cap now (the worker does it every
``DECAY__INTERVAL_S`` when ``DECAY__CAP`` is set)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from groupmind.settings import Settings

app = typer.Typer(no_args_is_help=True, help="Memory upkeep: pins and pruning.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _deps(ctx: typer.Context) -> Any:
    """The stores of the bot the command names (``--bot``, else GROUPMIND_BOT_ID)."""
    from groupmind.session import open_session

    settings = ctx.obj
    assert isinstance(settings, Settings)
    bot = ctx.find_root().params.get("bot") or settings.bot_id
    return open_session(settings, worker=False, bot=bot).runtime.deps_for(bot)


@app.command()
def pin(
    ctx: typer.Context,
    ids: Annotated[list[str], typer.Argument(help="memory ids (`groupmind search --json`)")],
    unpin: Annotated[bool, typer.Option("--unpin", help="let them fade again")] = False,
) -> None:
    """Pin memories: they never fade and are never pruned (forget still erases them)."""
    found = _deps(ctx).events.pin(ids, pinned=not unpin)
    missing = [i for i in ids if i not in found]
    out.print(f"{'unpinned' if unpin else 'pinned'}: {len(found)}")
    if missing:
        err.print(f"[red]no such memory: {', '.join(missing)}[/red]")
        raise typer.Exit(1)


@app.command()
def prune(
    ctx: typer.Context,
    cap: Annotated[
        int | None, typer.Option(help="memories kept per chat (default DECAY__CAP)", min=1)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Per chat beyond the cap, delete the weakest memories that are old, unimportant,
    never recalled and not pinned; profiles are never touched."""
    settings = ctx.obj
    assert isinstance(settings, Settings)
    if cap is None and not settings.decay.cap:
        err.print("[red]no cap: pass --cap or set GROUPMIND_DECAY__CAP[/red]")
        raise typer.Exit(2)
    pruned: dict[str, int] = _deps(ctx).events.prune(cap=cap)
    if as_json:
        out.print(json.dumps(pruned, ensure_ascii=False), markup=False, highlight=False)
        return
    table = Table("chat", "pruned")
    for chat, n in sorted(pruned.items()):
        table.add_row(chat, str(n))
    out.print(table if pruned else "nothing to prune")
