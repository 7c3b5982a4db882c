"""On PostgreSQL a store's read is one round trip: its connection runs in autocommit, so
psycopg sends no ``BEGIN`` before it and SQLAlchemy no ``ROLLBACK`` after it; writes keep
their transaction, on the same pooled connections."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from domain.scope import ChatScope
from stores.base import Persona
from stores.sql import SqlJobBoard, SqlMessageStore, SqlPersonaStore, SqlProfileStore
from stores.sql.engine import make_engine, reads
from stores.sql.schema import PersonaRow

pytestmark = pytest.mark.postgres


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The commands psycopg sends outside statements (``BEGIN``, ``COMMIT``, ``ROLLBACK``)."""
    sent: list[str] = []
    original = psycopg.Connection._exec_command

    def recording(self: psycopg.Connection[Any], command: Any, *args: Any, **kw: Any) -> Any:
        sent.append(command.decode() if isinstance(command, bytes) else str(command))
        return original(self, command, *args, **kw)

    monkeypatch.setattr(psycopg.Connection, "_exec_command", recording)
    return sent


@pytest.fixture
def one_conn(pg_database: str) -> Iterator[Engine]:
    """The stores' engine with a pool of one connection: reads and writes share it. Its
    first connection is made here (SQLAlchemy probes the server on it, savepoints too)."""
    engine = make_engine(pg_database, pool_size=1, max_overflow=0)
    with engine.connect():
        pass
    yield engine
    engine.dispose()


def test_reads_send_no_transaction_and_writes_keep_theirs(
    one_conn: Engine, commands: list[str]
) -> None:
    board = SqlJobBoard(one_conn)
    profiles, jobs = SqlProfileStore(one_conn, bot="b"), board.queue("b")
    assert jobs.reads is board.reads  # a worker asks for a queue every job: made once
    personas, messages = SqlPersonaStore(one_conn), SqlMessageStore(one_conn, bot="b")
    scope = ChatScope(platform="qq", chat_type="group", chat_id="g1")
    assert profiles.was_applied("r1") is False
    assert profiles.get_relationship("qq", "u1") is None
    assert profiles.get_learned(scope, "u1") is None
    assert jobs.get("r1") is None and jobs.claim("w", lease_s=30) is None
    assert messages.members(scope.key) == {}
    assert personas.get_persona("p-reads") is None
    assert commands == []  # six reads (and a claim that found nothing): one statement each

    personas.put_persona(Persona(persona_id="p-reads", name="小爱"))
    assert [c.split()[0] for c in commands] == ["BEGIN", "COMMIT"]
    found = personas.get_persona("p-reads")
    assert found is not None and found.name == "小爱"


def test_a_write_after_a_read_on_the_same_connection_is_still_one_transaction(
    one_conn: Engine, commands: list[str]
) -> None:
    """The read's autocommit ends with it: a write that fails half-way stores nothing."""
    personas = SqlPersonaStore(one_conn)
    assert personas.get_persona("p-half") is None
    with pytest.raises(RuntimeError), Session(one_conn) as s, s.begin():
        s.add(PersonaRow(persona_id="p-half", name="a", updated_at=time.time()))
        s.flush()  # the row is written, inside the transaction
        raise RuntimeError("half-way")
    assert personas.get_persona("p-half") is None
    assert [c.split()[0] for c in commands] == ["BEGIN", "ROLLBACK"]


def test_sqlite_reads_use_the_engine_itself(sqlite_engine: Engine) -> None:
    assert reads(sqlite_engine) is sqlite_engine
