"""What the console refuses before any page runs: a foreign ``Host`` (a DNS-rebinding page
would read every page), a state-changing request from another origin (a hostile page
auto-submitting a form; another port of the same host counts as another origin), and
framing. Every console response carries the usual security headers.

Only the console's own paths are guarded: on a LangGraph server this app is the server's
app too (``http.app``), and the server's API routes are left as the server made them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from groupmind.exposure import loopback

GUARDED = ("/console", "/metrics")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
WILDCARDS = ("0.0.0.0", "::", "")  # a bind to every address
HEADERS = {
    "x-frame-options": "DENY",
    "content-security-policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}
PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip")


def split_host(netloc: str) -> tuple[str, str]:
    """``host[:port]`` (IPv6 in brackets) as (host, port), lower-cased."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = netloc.partition(":")
    return host, port


def _ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class HostRule:
    """Which ``Host`` headers the console answers: this machine's names (localhost and
    loopback addresses), the address it is bound to, the names the operator lists
    (``GROUPMIND_CONSOLE_HOSTS``), and, when it listens on every address (or its address is
    not known, as on a LangGraph server), any address literal: a rebinding page always
    comes under a name of its own."""

    def __init__(self, bound: str | None, names: Callable[[], Iterable[str]] = tuple) -> None:
        self.bound = None if bound is None else bound.strip("[]").lower()
        # read on first use: a server's settings are read when its runtime opens
        self._names = names
        self._known: frozenset[str] | None = None

    @property
    def names(self) -> frozenset[str]:
        if self._known is None:
            self._known = frozenset(n.strip().lower() for n in self._names() if n.strip())
        return self._known

    def allows(self, host_header: str | None) -> bool:
        if not host_header:
            return False
        host, _ = split_host(host_header)
        if not host:
            return False
        if loopback(host) or host in self.names or host == self.bound:
            return True
        return (self.bound is None or self.bound in WILDCARDS) and _ip_literal(host)


def _origin(url: str) -> tuple[str, str] | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    host, port = split_host(parts.netloc)
    return host, port or {"http": "80", "https": "443"}.get(parts.scheme, "")


def same_origin(headers: Headers, scheme: str) -> bool:
    """Whether a state-changing request comes from the console's own pages: a browser
    says so by ``Sec-Fetch-Site`` and ``Origin`` (or, lacking both, ``Referer``); a client
    that sends none of them is not a browser page (and still needs its key or token)."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    host, port = split_host(headers.get("host", ""))
    own = (host, port or {"http": "80", "https": "443"}.get(scheme, ""))
    origin = headers.get("origin")
    if origin is not None:
        return origin != "null" and _origin(origin) == own
    referer = headers.get("referer")
    return referer is None or _origin(referer) == own


def proxied(headers: Headers) -> bool:
    """Whether a proxy says it forwarded the request (its client is then not this
    machine, whatever address the connection comes from)."""
    return any(name in headers for name in PROXY_HEADERS)


class Guard:
    """ASGI middleware: refuses a foreign Host (400) and a cross-origin state change (403)
    on the console's paths, and adds the security headers to what they answer."""

    def __init__(self, app: ASGIApp, hosts: HostRule) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(GUARDED):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refused = None
        if not self.hosts.allows(headers.get("host")):
            refused = PlainTextResponse("Host not allowed for the console", 400)
        elif scope["method"] not in SAFE_METHODS and not same_origin(
            headers, scope.get("scheme", "http")
        ):
            refused = PlainTextResponse("cross-origin request refused", 403)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                raw += [(k.encode(), v.encode()) for k, v in HEADERS.items()]
                message = {**message, "headers": raw}
            await send(message)

        await (refused or self.app)(scope, receive, with_headers)
