"""Servers the tests and benchmarks start: waiting for a server process, and an HTTP
stand-in served on 127.0.0.1 for the length of a ``with``."""

from __future__ import annotations

import random
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    """A port a server started next can bind, on every interface.

    Picked below the kernel's ephemeral range: a port the kernel handed out (bind to 0)
    can be taken by any outgoing connection before the server binds it, and was (a
    console test's client socket took its server's port in CI)."""
    low = _ephemeral_low()
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port below {low}")


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


@contextmanager
def loopback(handler: type[BaseHTTPRequestHandler], port: int = 0) -> Iterator[str]:
    """``handler`` served on 127.0.0.1 (a free port unless one is given) in a thread;
    yields its base URL, and shuts it down after."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def wait_ok(
    url: str, proc: subprocess.Popen[bytes], log: Path | None = None, timeout: float = 120
) -> None:
    """Until ``url/ok`` answers 200; a process that exits, or no answer in time, raises
    with the end of its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.3)
    tail = log.read_text()[-2000:] if log is not None and log.exists() else ""
    state = "exited" if proc.poll() is not None else f"gave no /ok within {timeout:.0f} s"
    if proc.poll() is None:
        proc.kill()
    raise RuntimeError(f"{url}: the server {state}: {tail}")
