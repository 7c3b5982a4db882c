"""What the host captured and groupmind has not taken yet, on disk (SQLite, one file in
the host's plugin data dir): written before the host goes on, removed only once
groupmind's server accepted it, so a host killed or a groupmind stopped loses nothing."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Item:
    seq: int
    op: str  # capture | record
    thread_id: str
    body: dict[str, Any]  # the run's input


class Outbox:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # kept means on disk
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "op TEXT NOT NULL, thread_id TEXT NOT NULL, body TEXT NOT NULL, at REAL NOT NULL)"
        )
        self._lock = threading.Lock()

    def put(self, op: str, thread_id: str, body: dict[str, Any]) -> int:
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO outbox (op, thread_id, body, at) VALUES (?, ?, ?, ?)",
                (op, thread_id, json.dumps(body, ensure_ascii=False), time.time()),
            )
            return int(cur.lastrowid or 0)

    def oldest(self, limit: int = 50) -> list[Item]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, op, thread_id, body FROM outbox ORDER BY seq LIMIT ?", (limit,)
            ).fetchall()
        return [Item(seq, op, thread, json.loads(body)) for seq, op, thread, body in rows]

    def done(self, seq: int) -> None:
        with self._lock:
            self._db.execute("DELETE FROM outbox WHERE seq = ?", (seq,))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM outbox").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
