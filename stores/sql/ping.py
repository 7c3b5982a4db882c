"""Ping a pooled PostgreSQL connection before use only when it has not been used lately.

Pinging on every checkout (SQLAlchemy's ``pool_pre_ping``, psycopg_pool's
``check_connection``) costs a round trip each time: 29 of a rule memory job's 94 on
PostgreSQL (13 SQL checkouts, 16 checkpointer ones; counted), each a network round trip
when the database is on another machine. A connection handed out less than
``IDLE_PING_S`` ago was working then; one idle longer (a restart of the server takes
longer than that) is pinged, and replaced if it fails. A busy worker hands its
connections out every few milliseconds, so it hardly pings; a quiet bot pings as before.
A server killed within that tenth of a second fails the statement once: the connection
is dropped (SQLAlchemy then renews the pool's older ones too), a job is retried, a reply
degrades, as for any lost query.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from sqlalchemy import Engine, event, exc

IDLE_PING_S = 0.1  # a restart of the server, even a fast one, takes longer
_HANDED_OUT = "groupmind_handed_out"  # in a pooled connection's info: when, monotonic


def ping_when_idle(engine: Engine) -> None:
    """SQLAlchemy: ping a connection at checkout if it was last handed out long ago; a
    failed ping makes the pool connect again (``DisconnectionError``)."""

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        now = time.monotonic()
        last = record.info.get(_HANDED_OUT)
        record.info[_HANDED_OUT] = now
        if last is None or now - last < IDLE_PING_S:
            return  # a new connection, or one in use a moment ago
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as error:  # noqa: BLE001 - any failure: connect anew
            raise exc.DisconnectionError(f"ping failed: {error}") from error


class CheckWhenIdle:
    """psycopg_pool's ``check``: ``ConnectionPool.check_connection`` for a connection last
    handed out long ago or never (the pool opens connections ahead of use), nothing for
    one handed out a moment ago. SQLAlchemy's pool connects on demand, so a connection it
    has never handed out is new, and is not pinged."""

    def __init__(self) -> None:
        self._handed_out: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    def __call__(self, conn: Any) -> None:
        from psycopg_pool import ConnectionPool

        now = time.monotonic()
        last = self._handed_out.get(conn)
        self._handed_out[conn] = now
        if last is not None and now - last < IDLE_PING_S:
            return
        ConnectionPool.check_connection(conn)
