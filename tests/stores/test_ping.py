"""A pooled PostgreSQL connection is pinged before use only when it has sat idle: a
connection whose server backend was killed is replaced unseen once idle, and fails its
next statement once (then is replaced) when it was handed out a moment ago."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

from stores.sql import ping
from stores.sql.engine import make_engine

pytestmark = pytest.mark.postgres
IDLE = 0.3


@pytest.fixture(autouse=True)
def _short_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ping, "IDLE_PING_S", IDLE)


def _kill(admin: Engine, pid: int) -> None:
    with admin.connect() as c:
        assert c.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar()
    time.sleep(0.1)  # the backend is gone before the next use


def _sql_pid(engine: Engine) -> int:
    with engine.connect() as c:
        return int(c.execute(text("SELECT pg_backend_pid()")).scalar_one())


@pytest.fixture
def admin(pg_database: str) -> Iterator[Engine]:
    engine = create_engine(pg_database.replace("postgresql://", "postgresql+psycopg://"))
    yield engine
    engine.dispose()


@pytest.fixture
def one_conn(pg_database: str) -> Iterator[Engine]:
    """The stores' engine with a pool of one connection: every use hands out the same."""
    engine = make_engine(pg_database, pool_size=1, max_overflow=0)
    yield engine
    engine.dispose()


def test_sqlalchemy_an_idle_connection_killed_by_the_server_is_replaced_unseen(
    one_conn: Engine, admin: Engine
) -> None:
    first = _sql_pid(one_conn)
    _kill(admin, first)
    time.sleep(IDLE)
    assert _sql_pid(one_conn) != first  # pinged, found dead, connected anew


def test_sqlalchemy_a_connection_used_a_moment_ago_is_not_pinged(
    one_conn: Engine, admin: Engine
) -> None:
    _sql_pid(one_conn)
    first = _sql_pid(one_conn)  # handed out twice: the second time was not pinged
    _kill(admin, first)
    with pytest.raises(OperationalError):
        _sql_pid(one_conn)  # no ping: the statement itself meets the dead backend
    assert _sql_pid(one_conn) != first  # and the pool has let it go


def _pool_pid(pool: ConnectionPool[Any]) -> int:
    with pool.connection() as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        return int(row[0])


def test_checkpointer_pool_pings_only_an_idle_connection(pg_database: str, admin: Engine) -> None:
    pool: ConnectionPool[Any] = ConnectionPool(
        pg_database, min_size=1, max_size=1, check=ping.CheckWhenIdle(), open=True
    )
    try:
        first = _pool_pid(pool)
        _kill(admin, first)
        time.sleep(IDLE)
        second = _pool_pid(pool)  # idle: pinged and replaced
        assert second != first
        _kill(admin, second)
        with pytest.raises(psycopg.OperationalError):
            _pool_pid(pool)  # handed out a moment ago: not pinged
        assert _pool_pid(pool) not in (first, second)
    finally:
        pool.close()
