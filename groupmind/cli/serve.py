"""What serves a bot: the demo, the OneBot bridge and the operator's console."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from groupmind.cli.app import app
from groupmind.cli.common import (
    VariantOpt,
    asked_variants,
    err,
    invocation,
    out,
)
from state.validation import describe_validation_error


@app.command()
def demo() -> None:
    """The main job on the embedded defaults, readable by a person."""
    from groupmind.demo import run_demo

    here = invocation()
    run_demo(here.settings, out)


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

    here = invocation()
    if stickers not in ("image", "face"):
        err.print("[red]--stickers: image or face[/red]")
        raise typer.Exit(2)
    opts = BridgeOptions(host=host, port=port, access_token=access_token, connect=connect,
                         server=server, api_key=api_key, platform=platform,
                         stickers=stickers, journal=journal)  # type: ignore[arg-type]  # fmt: skip
    # Connections, refusals and messages are logged at the default level (ids, never content).
    logging.getLogger("groupmind.onebot").setLevel(logging.INFO)
    try:
        asyncio.run(run_bridge(here.settings, opts, asked_variants(variant), say=err.print))
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
    from groupmind.settings import BotKey

    here = invocation()
    keys = list(here.settings.bots)
    if key:
        try:
            keys.append(BotKey.model_validate({"id": here.bot, "api_key": key}))
        except ValidationError as exc:
            err.print(f"[red]--key: {describe_validation_error(exc)}[/red]")
            raise typer.Exit(2) from None
    if not keys and not loopback(host):
        err.print(f"[red]--host {host}: a console beyond this machine needs a key "
                  "(--key or GROUPMIND_BOTS)[/red]")  # fmt: skip
        raise typer.Exit(2)
    session = here.session(worker=server is None)
    runtime = session.runtime
    access = Access(tuple(keys), open_bot=here.bot)
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
