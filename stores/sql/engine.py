"""Engines and migrations."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from domain.limits import DEFAULTS
from stores.sql.ping import ping_when_idle

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
_PG_MIGRATION_LOCK = 0x67726F75  # any constant: one migrator at a time per database


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine with the settings these stores rely on.

    SQLite: WAL (readers never wait for the writer), a busy timeout (writers queue instead
    of failing), foreign keys on. PostgreSQL: psycopg 3; a connection idle a while is
    pinged before use (stores/sql/ping.py).
    Errors and logs never carry a statement's parameters (they are what people said).
    """
    kwargs.setdefault("hide_parameters", True)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        url = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    engine = create_engine(url, **kwargs)
    ping_when_idle(engine)
    return engine


def read_only_sqlite(path: Path) -> Engine:
    """Someone else's SQLite file, opened read-only whatever its name holds (``#``, ``?``
    and ``%`` in a path would otherwise end the file name of a URI, or open another file)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    return create_engine(
        "sqlite://", creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False),
        hide_parameters=True,
    )  # fmt: skip


def reads(engine: Engine) -> Engine:
    """The engine for reads that write nothing. On PostgreSQL its connections run in
    autocommit: psycopg sends ``BEGIN`` before a transaction's first statement and
    SQLAlchemy ``ROLLBACK`` when it ends, each a round trip of its own, so a read was three
    (18 of a rule memory job's, counted). Each statement sees what was committed when it
    began, as it does in PostgreSQL's default READ COMMITTED transaction. Writes keep
    ``engine.begin()``; SQLite (no round trips) keeps its engine. Made once per store
    (~25 us)."""
    if engine.dialect.name != "postgresql":
        return engine
    return engine.execution_options(isolation_level="AUTOCOMMIT")


_IN_PROCESS = threading.Lock()  # Alembic's context is module-global: one upgrade at a time


def migrate(
    engine: Engine,
    *,
    default_platform: str = DEFAULTS.default_platform,
    owner: str = DEFAULTS.bot_id,
    revision: str = "head",
) -> None:
    """Bring the schema to the newest revision (safe to call from several processes and
    threads). ``default_platform`` is the platform rows from before revision 0005 are given,
    ``owner`` the bot rows from before revision 0010 belong to."""
    with _IN_PROCESS:
        _migrate(engine, default_platform, owner, revision)


def _migrate(engine: Engine, default_platform: str, owner: str, revision: str) -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["default_platform"] = default_platform  # for rows older than 0005
    cfg.attributes["owner"] = owner  # for rows older than 0010
    for attempt in range(5):
        try:
            with engine.connect() as conn:
                sqlite = conn.dialect.name == "sqlite"
                if sqlite:
                    # SQLite alters a table by copying it and dropping the old one; with
                    # foreign keys on, that drop would cascade (event_docs -> event_terms).
                    # The pragma only takes effect outside a transaction.
                    conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
                    conn.commit()  # end the autobegun transaction the pragma ran in
                with conn.begin():
                    if not sqlite:
                        conn.execute(
                            text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK}
                        )
                    cfg.attributes["connection"] = conn
                    command.upgrade(cfg, revision)
                if sqlite:
                    conn.exec_driver_sql("PRAGMA foreign_keys=ON")
                    conn.commit()
            return
        except OperationalError:
            # SQLite: another process was migrating the same file; its work is ours too.
            if attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))
