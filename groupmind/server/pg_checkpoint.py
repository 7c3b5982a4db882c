"""The checkpointer of the production recipe's server (deploy/langgraph.json
``checkpointer``): langhost's own PostgreSQL saver, on its pool and tables, which keeps a
thread's history short. langhost pins langgraph-checkpoint-postgres 3.1.0, whose saver
cannot prune (``threads.prune(strategy="keep_latest")`` answers 422), so every reply
thread gained a ~30 KB checkpoint per message, for good."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg_pool import AsyncConnectionPool

from groupmind.checkpoint import serde
from groupmind.server.checkpoint import PruneSchedule
from groupmind.settings import process_settings

HEADS = (
    "SELECT checkpoint_ns, MAX(checkpoint_id) AS checkpoint_id FROM checkpoints "
    "WHERE thread_id = %s GROUP BY checkpoint_ns"
)
# Older than the head read once: a run writing meanwhile only adds newer checkpoints and
# higher channel versions (zero-padded, so they compare as text), which stay.
OLDER_WRITES = (
    "DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s "
    "AND checkpoint_id < %s"
)
OLDER_BLOBS = (
    "DELETE FROM checkpoint_blobs b USING checkpoints c WHERE c.thread_id = %s "
    "AND c.checkpoint_ns = %s AND c.checkpoint_id = %s AND b.thread_id = c.thread_id "
    "AND b.checkpoint_ns = c.checkpoint_ns "
    "AND b.version < (c.checkpoint -> 'channel_versions' ->> b.channel)"
)
OLDER_CHECKPOINTS = (
    "DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id < %s"
)
RUNS_WRITES = (
    "DELETE FROM checkpoint_writes w USING checkpoints c WHERE c.metadata ->> 'run_id' = ANY(%s) "
    "AND w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns "
    "AND w.checkpoint_id = c.checkpoint_id"
)
# The values only those runs' checkpoints point at (newer than any head: a prune keeps them).
RUNS_BLOBS = (
    "DELETE FROM checkpoint_blobs b USING checkpoints c WHERE c.metadata ->> 'run_id' = ANY(%s) "
    "AND b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns "
    "AND b.version = (c.checkpoint -> 'channel_versions' ->> b.channel) AND NOT EXISTS ("
    "SELECT 1 FROM checkpoints k WHERE k.thread_id = b.thread_id "
    "AND k.checkpoint_ns = b.checkpoint_ns AND COALESCE(k.metadata ->> 'run_id', '') <> ALL(%s) "
    "AND b.version = (k.checkpoint -> 'channel_versions' ->> b.channel))"
)
RUNS_CHECKPOINTS = "DELETE FROM checkpoints WHERE metadata ->> 'run_id' = ANY(%s)"


class KeepLatestPostgresSaver(AsyncPostgresSaver):
    """PostgreSQL's saver that prunes a thread to its latest checkpoint (with the channel
    values it reads): when asked, and every ``every`` runs of a thread. It also drops what
    a rolled-back run wrote (``multitask_strategy="rollback"``), which langhost's own
    saver leaves in the thread."""

    def __init__(self, *args: Any, every: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schedule = PruneSchedule(every)
        if isinstance(self.conn, AsyncConnectionPool):
            # The saver holds one lock around every statement, which a single shared
            # connection needs; over a pool each run has its own connection, so concurrent
            # runs would only queue behind each other's statements.
            self.lock = asyncio.Semaphore(self.conn.max_size)  # type: ignore[assignment]

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = await super().aput(config, checkpoint, metadata, new_versions)
        self.schedule.after_put(config, metadata, self.aprune)
        return saved

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        ids = [str(r) for r in run_ids]
        if ids:
            async with self._cursor() as cur:
                await cur.execute(RUNS_WRITES, (ids,))
                await cur.execute(RUNS_BLOBS, (ids, ids))
                await cur.execute(RUNS_CHECKPOINTS, (ids,))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids: a sequence of thread ids, not one str")
        for thread_id in map(str, thread_ids):
            if strategy == "delete":
                await self.adelete_thread(thread_id)
                continue
            if strategy != "keep_latest":
                raise ValueError(f"unknown prune strategy {strategy!r}: keep_latest or delete")
            async with self._cursor() as cur:
                await cur.execute(HEADS, (thread_id,))
                for head in await cur.fetchall():
                    key = (thread_id, head["checkpoint_ns"], head["checkpoint_id"])
                    for sql in (OLDER_WRITES, OLDER_BLOBS, OLDER_CHECKPOINTS):
                        await cur.execute(sql, key)


@asynccontextmanager
async def checkpointer() -> AsyncIterator[BaseCheckpointSaver[str]]:
    """langhost's saver, as ours: the same pool (opened by the runtime, or here first; it
    is set up once) and the same tables, so everything the runtime reads it finds."""
    runtime: Any = importlib.import_module("langgraph_runtime_pg.checkpoint")  # deploy venv
    base = await runtime.setup_checkpointer()
    yield KeepLatestPostgresSaver(base.conn, serde=serde(), every=process_settings().reply_history)
