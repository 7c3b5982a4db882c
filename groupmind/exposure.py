"""Who can reach a listening process: a server or a bridge with no keys must not be
reachable beyond this machine unless its operator says so."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence


def loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def listening_host(argv: Sequence[str], default: str = "127.0.0.1") -> str:
    """The ``--host`` a server command line names (``langgraph dev``, ``langhost serve``
    default to loopback)."""
    for i, arg in enumerate(argv):
        if arg == "--host" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--host="):
            return arg.split("=", 1)[1]
    return default
