"""What the storage engines keep of deleted rows on disk, made to go (after a forget, or
``groupmind compact``).

- SQLite keeps deleted rows in free pages and in its write-ahead log until a checkpoint
  or ``VACUUM``: the log is checkpointed and truncated, and the file rebuilt.
- Chroma (1.5, embedded) keeps every write in its own log (``embeddings_queue`` inside
  ``chroma.sqlite3``), documents and metadata included, until its vector index has caught
  up; and its full-text index keeps the words of deleted documents until it is merged.
  The text of log entries the metadata store has already applied is dropped (the vectors,
  which the index may still need, stay), the full-text index is merged, then the file is
  rebuilt as above.
- Chroma's vector index files (hnswlib's ``data_level0.bin`` and ``length.bin``) are
  allocated for the index's capacity from the process's memory and written whole when the
  index is made, without being cleared: the slots past the last element hold whatever that
  memory held before (once 8 bytes of a forgotten message). They are zeroed; the slots in
  use are left as they are.
- PostgreSQL: a deleted row cannot be read by any query, but its bytes stay in the table's
  files until ``VACUUM FULL`` rewrites them (``full=True``; it locks each table meanwhile).

Each returns what it did, one line, for the forget's report; a file that is busy (another
process in a transaction) is retried a few times and then reported, never raised.
"""

from __future__ import annotations

import sqlite3
import struct
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine, text

TRIES = 10
BUSY_S = 30.0  # how long one try waits for another process's lock or snapshot


def compact_sqlite(path: Path) -> str:
    return _retried(path, _vacuum, "compacted")


def purge_chroma(path: Path) -> str:
    """``path``: a persistent Chroma's ``chroma.sqlite3``."""
    purged = _retried(path, _purge_log, "log purged, compacted")
    if purged == "absent":
        return purged
    unknown, failed = [], []
    for index in sorted(d for d in path.parent.iterdir() if d.is_dir()):
        try:
            if not _zero_capacity(index):
                unknown.append(index.name)
        except OSError as exc:  # reported, never raised: the rest of the erase stands
            failed.append(f"{index.name}: {exc}")
    if failed:
        return f"{purged}; index capacity not zeroed in {failed}: run groupmind compact"
    if unknown:
        return f"{purged}; index files of an unknown layout left as they are: {unknown}"
    return f"{purged}, index capacity zeroed"


# hnswlib's persisted header (chroma-hnswlib, PERSISTENCE_VERSION 1), as written field by
# field: version, offsetLevel0_, max_elements_, cur_element_count, size_data_per_element_.
HEADER = struct.Struct("<iQQQQ")
CHUNK = 1 << 20


def _zero_capacity(index: Path) -> bool:
    """Zero what lies past the last element in ``index``'s data and length files; False
    when the directory holds an index this code does not know (left untouched)."""
    header = index / "header.bin"
    if not header.exists():
        return True  # not an index (or one not written yet)
    layout = _elements(header)
    if layout is None:
        return False
    per_element = layout[1]

    def used(size: int) -> Callable[[], int]:
        # Read again before each write: hnswlib writes the header (the new count) before a
        # new element's slot, so an element another bot's job adds meanwhile is left alone.
        return lambda: size * (_elements(header) or layout)[0]

    _zero_from(index / "data_level0.bin", used(per_element))
    _zero_from(index / "length.bin", used(4))  # one float32 per element
    return True


def _elements(header: Path) -> tuple[int, int] | None:
    """(element count, bytes per element) of an index of the known layout."""
    raw = header.read_bytes()
    if len(raw) < HEADER.size:
        return None
    version, _, _, count, per_element = HEADER.unpack_from(raw)
    return (count, per_element) if version == 1 and per_element else None


def _zero_from(path: Path, used: Callable[[], int]) -> None:
    """Zero ``path`` past its ``used()`` bytes, a chunk at a time, writing only what is not
    zero already (an index's capacity can be large, and mostly is)."""
    if not path.exists():
        return
    with path.open("r+b") as f:
        at = used()
        f.seek(at)
        while chunk := f.read(CHUNK):
            end = at + len(chunk)
            floor = max(at, used())
            if floor < end and chunk[floor - at :].count(0) != end - floor:
                f.seek(floor)
                f.write(bytes(end - floor))
            at = end
            f.seek(at)


def _vacuum(conn: sqlite3.Connection) -> None:
    _truncate_log(conn)
    conn.execute("VACUUM")
    _truncate_log(conn)


def _truncate_log(conn: sqlite3.Connection) -> None:
    """The log copied into the file and emptied; a reader still on an old snapshot keeps
    the log's old pages (what was deleted) alive: that is busy, and tried again."""
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        raise sqlite3.OperationalError("the write-ahead log is held by a reader")


def _purge_log(conn: sqlite3.Connection) -> None:
    applied = conn.execute(
        "SELECT s.collection, m.seq_id FROM max_seq_id m "
        "JOIN segments s ON s.id = m.segment_id WHERE s.scope = 'METADATA'"
    ).fetchall()
    for collection, seq in applied:  # each collection's log is its own topic
        conn.execute(
            "UPDATE embeddings_queue SET metadata = NULL WHERE topic LIKE ? "
            "AND seq_id <= ? AND metadata IS NOT NULL",
            (f"%/{collection}", seq),
        )
    conn.execute(
        "INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES('optimize')"
    )
    _vacuum(conn)


def _retried(path: Path, work: Callable[[sqlite3.Connection], None], done: str) -> str:
    """``work`` on the file, retried while another process holds it; what happened."""
    if not path.exists():
        return "absent"
    for attempt in range(TRIES):
        try:
            conn = sqlite3.connect(str(path), timeout=BUSY_S, isolation_level=None)
            try:
                work(conn)
            finally:
                conn.close()
            return done
        except sqlite3.OperationalError as exc:  # busy or locked: another process writes
            if attempt == TRIES - 1:
                return f"busy ({exc}): run groupmind compact when it is idle"
            time.sleep(0.5 * (attempt + 1))
    return "busy"


def compact_postgres(engine: Engine, tables: list[str], *, full: bool) -> str:
    if not full:
        return (
            "rows deleted; their bytes stay in the table files until VACUUM FULL "
            "(groupmind compact --full)"
        )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in tables:
            conn.execute(text(f"VACUUM FULL {table}"))
    return "VACUUM FULL done"
