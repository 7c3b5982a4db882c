"""groupmind: settings, model providers, the memory worker and the command line.

The graphs themselves live in the top-level packages ``graphs``, ``nodes``, ``state`` and
``stores``; this package wires them to the outside world.
"""
