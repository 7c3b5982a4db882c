"""What compaction leaves of deleted rows in a SQLite file and its log: nothing, read byte
by byte. Deleting alone is not enough, even with ``secure_delete`` on: a page rebuilt when
its neighbours are rebalanced keeps old cells in its unallocated space (SQLite 3.40), so
forget rebuilds the file (``VACUUM``). A reader still on an old snapshot keeps the log:
compaction waits for it, then says it is busy."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

import stores.compact as compact
from stores.compact import compact_sqlite
from stores.sql import make_engine

SECRET = "ZQXJ7731-猫头鹰咖啡馆"


def residue(path: Path) -> list[str]:
    """The files of the database (with its log) that hold the secret."""
    files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    return [p.name for p in files if p.exists() and SECRET.encode() in p.read_bytes()]


def fill(conn: sqlite3.Connection) -> None:
    """Rows that hold the secret (short ones, and long ones on overflow pages) among rows
    that stay, then the secret's rows deleted."""
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT)")
    for i in range(300):
        body = f"{SECRET} {i}" * (400 if i % 50 == 0 else 1) if i % 3 == 0 else f"kept {i}"
        conn.execute("INSERT INTO t (body) VALUES (?)", (body,))
    conn.commit()
    conn.execute("DELETE FROM t WHERE body LIKE ?", (f"{SECRET}%",))
    conn.commit()


def test_deleted_rows_outlive_secure_delete_and_go_with_compaction(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA secure_delete=ON")
    fill(conn)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert residue(path) == [path.name]  # the scan sees what a delete leaves
    assert compact_sqlite(path) == "compacted"
    assert residue(path) == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 200


def test_a_reader_holding_the_log_is_waited_for_then_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    engine = make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        fill(conn.connection.dbapi_connection)  # type: ignore[arg-type]
    reader = sqlite3.connect(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM t").fetchone()  # a snapshot: the log must stay
    with engine.begin() as conn:  # a write after it: the log cannot be emptied
        conn.execute(text("INSERT INTO t (body) VALUES ('after')"))
    monkeypatch.setattr(compact, "TRIES", 2)
    monkeypatch.setattr(compact, "BUSY_S", 0.2)
    assert compact_sqlite(path).startswith("busy (")
    monkeypatch.undo()
    reader.close()
    assert compact_sqlite(path) == "compacted"
    assert residue(path) == []
    engine.dispose()
