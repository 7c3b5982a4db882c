"""The root command: its options (the data dir, verbosity, ``--bot``), resolved once into
the invocation every command reads, and the ``groupmind`` entry point."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from domain.scope import check_bot_id
from groupmind.cli.common import CURRENT, Invocation, err
from groupmind.errors import storage_error
from groupmind.settings import Settings
from state.validation import describe_validation_error

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help='The ``groupmind`` command line (docs/contracts.md "Command line").',
)


@app.callback()
def main(
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
        settings = Settings(data_dir=data_dir) if data_dir else Settings()
        CURRENT.set(Invocation(settings, check_bot_id(bot) if bot else settings.bot_id))
    except ValidationError as exc:
        err.print(f"[red]settings: {describe_validation_error(exc)}[/red]")
        raise typer.Exit(2) from None
    except ValueError as exc:
        err.print(f"[red]--bot: {exc}[/red]")
        raise typer.Exit(2) from None


def run() -> None:
    """The ``groupmind`` command: a storage failure (a read-only or full disk, a database
    gone) ends it with one line and exit code 1, not a traceback."""
    try:
        code = app(standalone_mode=False)  # an Exit comes back as its code
    # typer bundles its own click: its usage errors and aborts are typer's, not click's
    except typer.Abort:
        err.print("Aborted.")
        sys.exit(1)
    except typer.TyperException as exc:  # a usage error (ClickException) shows itself
        show = getattr(exc, "show", None)
        show() if show is not None else err.print(exc.format_message(), markup=False)
        sys.exit(exc.exit_code)
    except Exception as exc:
        line = storage_error(exc)
        if line is None:
            raise
        err.print(line, style="red", markup=False, highlight=False)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
