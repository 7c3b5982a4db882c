"""The checkpointer `langgraph dev` keeps reply threads in (``langgraph.json``
``checkpointer``): SQLite in the data dir, beside groupmind's own data, so a thread
deleted is deleted (the dev server's in-memory one leaves a deleted thread's channel
values in its files) and forget's compaction reaches it. The production recipe's server
keeps its own, in PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from groupmind.checkpoint import NOT_LATEST, serde
from groupmind.settings import Settings

_RUNS = "json_extract(CAST(metadata AS TEXT), '$.run_id')"


class ServerSqliteSaver(AsyncSqliteSaver):
    """What the server asks of a checkpointer beyond the saver's own: dropping the
    checkpoints of runs it rolled back (``multitask_strategy="rollback"``), and keeping
    only a thread's latest checkpoint when it prunes."""

    async def adelete_for_runs(self, run_ids: Iterable[str]) -> None:
        ids = [str(r) for r in run_ids]
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        await self._delete(f"{_RUNS} IN ({marks})", ids)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        for thread_id in map(str, thread_ids):
            if strategy == "delete_all":
                await self.adelete_thread(thread_id)
                continue
            await self._delete(NOT_LATEST, [thread_id, thread_id])

    async def _delete(self, where: str, params: list[Any]) -> None:
        async with self.lock:
            keys = await (
                await self.conn.execute(
                    f"SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                    f"WHERE {where}",
                    params,
                )
            ).fetchall()
            for key in keys:
                match = "thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
                await self.conn.execute(f"DELETE FROM writes WHERE {match}", tuple(key))
                await self.conn.execute(f"DELETE FROM checkpoints WHERE {match}", tuple(key))
            await self.conn.commit()


@asynccontextmanager
async def checkpointer() -> AsyncIterator[BaseCheckpointSaver[str]]:
    import aiosqlite

    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(str(settings.server_checkpoints_path)) as conn:
        await conn.execute("PRAGMA journal_mode=WAL")
        saver = ServerSqliteSaver(conn, serde=serde())
        await saver.setup()
        yield saver
