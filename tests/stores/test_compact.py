"""What compaction leaves of deleted rows in a SQLite file and its log: nothing, read byte
by byte. Deleting alone is not enough, even with ``secure_delete`` on: a page rebuilt when
its neighbours are rebalanced keeps old cells in its unallocated space (SQLite 3.40), so
forget rebuilds the file (``VACUUM``). A reader still on an old snapshot keeps the log:
compaction waits for it, then says it is busy."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

import stores.compact as compact
from stores.chroma import sync_often
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


def _chroma(path: Path) -> Any:
    import chromadb

    client = chromadb.PersistentClient(
        path=str(path), settings=chromadb.config.Settings(anonymized_telemetry=False)
    )
    collection = client.get_or_create_collection("events", metadata={"hnsw:space": "cosine"})
    sync_often(collection)  # the index written every 100 adds, as the store's is
    return collection


def _nearest(path: Path, query: np.ndarray) -> tuple[list[str], list[float]]:
    found = _chroma(path).query(query_embeddings=[query.tolist()], n_results=5)
    return found["ids"][0], [round(d, 5) for d in found["distances"][0]]


def test_an_index_files_unused_capacity_is_zeroed_and_the_index_still_answers(
    tmp_path: Path,
) -> None:
    """hnswlib writes an index's whole capacity when it makes it, from memory it never
    cleared: the slots past the last element can hold what the process (Chroma's own
    threads) held before. Those bytes are put there by hand here, as found once in CI."""
    from chromadb.api.client import SharedSystemClient

    path = tmp_path / "chroma"
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((250, 8)).astype(np.float32)
    _chroma(path).add(ids=[f"e{i}" for i in range(250)], embeddings=vectors.tolist(),
                      documents=[f"d{i}" for i in range(250)])  # fmt: skip
    before = _nearest(path, vectors[3])
    SharedSystemClient.clear_system_cache()  # the files let go, as by another process
    (index,) = [h.parent for h in path.glob("*/header.bin")]
    _, _, capacity, count, per_element = compact.HEADER.unpack_from(
        (index / "header.bin").read_bytes()
    )
    assert 0 < count < capacity  # room past the last element
    data, lengths = index / "data_level0.bin", index / "length.bin"
    used = data.read_bytes()[: count * per_element], lengths.read_bytes()[: count * 4]
    for f, at in ((data, count * per_element + 40), (lengths, count * 4 + 4)):
        with f.open("r+b") as out:
            out.seek(at)
            out.write(SECRET.encode())

    assert compact.purge_chroma(path / "chroma.sqlite3").endswith("index capacity zeroed")
    for f, start, kept in ((data, count * per_element, used[0]), (lengths, count * 4, used[1])):
        raw = f.read_bytes()
        assert SECRET.encode() not in raw
        assert raw[:start] == kept and raw[start:].count(0) == len(raw) - start
    assert _nearest(path, vectors[3]) == before

    # an index this code cannot read is left as it is, and said so
    header = (index / "header.bin").read_bytes()
    (index / "header.bin").write_bytes((2).to_bytes(4, "little") + header[4:])
    with data.open("r+b") as out:
        out.seek(count * per_element + 40)
        out.write(SECRET.encode())
    said = compact.purge_chroma(path / "chroma.sqlite3")
    assert said.endswith(f"left as they are: ['{index.name}']")
    assert SECRET.encode() in data.read_bytes()


def test_an_index_file_that_cannot_be_written_is_reported_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    rng = np.random.default_rng(3)
    _chroma(path).add(ids=[f"e{i}" for i in range(150)],
                      embeddings=rng.standard_normal((150, 8)).tolist())  # fmt: skip
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    (index,) = [h.parent for h in path.glob("*/header.bin")]
    (index / "length.bin").unlink()
    (index / "length.bin").mkdir()  # opened for writing: IsADirectoryError, an OSError
    said = compact.purge_chroma(path / "chroma.sqlite3")
    assert said.startswith("log purged, compacted; index capacity not zeroed in")
    assert index.name in said and said.endswith("run groupmind compact")


def test_an_element_written_while_zeroing_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another bot's memory job on the same server can add an element while forget zeroes
    the capacity: hnswlib writes the new count to the header, then the element's slot.
    The count is read again before each chunk, so the new slot is not zeroed."""
    index, per, capacity, count = tmp_path / "idx", 64, 8, 3
    index.mkdir()

    def header(n: int) -> None:
        (index / "header.bin").write_bytes(compact.HEADER.pack(1, 0, capacity, n, per) + bytes(60))

    header(count)
    (index / "data_level0.bin").write_bytes(b"\xab" * per * capacity)  # never cleared
    monkeypatch.setattr(compact, "CHUNK", per)  # a chunk a slot
    reads, elements = [], compact._elements

    def written_meanwhile(path: Path) -> tuple[int, int] | None:
        reads.append(path)
        if len(reads) == 3:  # the job adds element 3 as the first chunk is about to go
            header(count + 1)
            with (index / "data_level0.bin").open("r+b") as f:
                f.seek(count * per)
                f.write(b"\xcd" * per)
        return elements(path)

    monkeypatch.setattr(compact, "_elements", written_meanwhile)
    assert compact._zero_capacity(index)
    data = (index / "data_level0.bin").read_bytes()
    assert data[: count * per] == b"\xab" * per * count  # in use before: untouched
    assert data[count * per : (count + 1) * per] == b"\xcd" * per  # added meanwhile: kept
    assert data[(count + 1) * per :] == bytes(per * (capacity - count - 1))
