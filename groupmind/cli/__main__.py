"""``python -m groupmind.cli``: the ``groupmind`` command."""

from groupmind.cli import run

run()
