"""The ``groupmind`` command line (docs/contracts.md "Command line"): the root command
(``app``), and its commands, one module per kind."""

from groupmind.cli import operate, recall, serve  # noqa: F401 - each registers its commands
from groupmind.cli.app import app, run
from groupmind.cli.experiment import experiment
from groupmind.cli.imports import app as import_app
from groupmind.cli.memory import app as memory_app
from groupmind.cli.persona import app as persona_app

app.command()(experiment)
app.add_typer(persona_app, name="persona")
app.add_typer(memory_app, name="memory")
app.add_typer(import_app, name="import")

__all__ = ["app", "run"]
