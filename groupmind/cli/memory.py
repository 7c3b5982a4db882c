"""``groupmind memory``: what keeps memories alive or lets them go (stores/decay.py): pin
the ones that must stay, prune the weakest beyond a cap now (the worker does it every
``DECAY__INTERVAL_S`` when ``DECAY__CAP`` is set)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from groupmind.cli.common import err, invocation, out
from groupmind.settings import Settings

if TYPE_CHECKING:
    from nodes.deps import ReplyDeps

app = typer.Typer(no_args_is_help=True, help="Memory upkeep: pins and pruning.")


def _deps() -> ReplyDeps:
    """The stores of the bot the command names (``--bot``, else GROUPMIND_BOT_ID)."""
    here = invocation()
    return here.session(worker=False).runtime.deps_for(here.bot)


@app.command()
def pin(
    ids: Annotated[list[str], typer.Argument(help="memory ids (`groupmind search --json`)")],
    unpin: Annotated[bool, typer.Option("--unpin", help="let them fade again")] = False,
) -> None:
    """Pin memories: they never fade and are never pruned (forget still erases them)."""
    found = _deps().events.pin(ids, pinned=not unpin)
    missing = [i for i in ids if i not in found]
    out.print(f"{'unpinned' if unpin else 'pinned'}: {len(found)}")
    if missing:
        err.print(f"[red]no such memory: {', '.join(missing)}[/red]")
        raise typer.Exit(1)


@app.command()
def prune(
    cap: Annotated[
        int | None, typer.Option(help="memories kept per chat (default DECAY__CAP)", min=1)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Per chat beyond the cap, delete the weakest memories that are old, unimportant,
    never recalled and not pinned; profiles are never touched."""
    here = invocation()
    settings = here.settings
    assert isinstance(settings, Settings)
    if cap is None and not settings.decay.cap:
        err.print("[red]no cap: pass --cap or set GROUPMIND_DECAY__CAP[/red]")
        raise typer.Exit(2)
    pruned: dict[str, int] = _deps().events.prune(cap=cap)
    if as_json:
        out.print(json.dumps(pruned, ensure_ascii=False), markup=False, highlight=False)
        return
    table = Table("chat", "pruned")
    for chat, n in sorted(pruned.items()):
        table.add_row(chat, str(n))
    out.print(table if pruned else "nothing to prune")
