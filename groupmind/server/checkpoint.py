"""The checkpointer `langgraph dev` keeps reply threads in (``langgraph.json``
``checkpointer``): SQLite in the data dir, beside groupmind's own data, so a thread
deleted is deleted (the dev server's in-memory one leaves a deleted thread's channel
values in its files) and forget's compaction reaches it. The production recipe's server
keeps them in its PostgreSQL (``groupmind.server.pg_checkpoint``).

Both keep a thread's history short on their own: a server's runs come from anywhere (the
bridge, the SDK, Studio), so it is the saver that notices every ``REPLY_HISTORY``-th run
of a thread and prunes it to its latest checkpoint, in a task of its own."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from groupmind.checkpoint import NOT_LATEST, serde
from groupmind.settings import process_settings

log = logging.getLogger(__name__)
_RUNS = "json_extract(CAST(metadata AS TEXT), '$.run_id')"


class PruneSchedule:
    """Which checkpoint starts the ``every``-th run of a thread seen by this process (runs
    told apart by the run id the server puts in each checkpoint's metadata); 0: none."""

    def __init__(self, every: int, threads: int = 10_000) -> None:
        self.every, self.threads = every, threads
        self._seen: OrderedDict[str, tuple[str, int]] = OrderedDict()  # thread: (run, runs)
        self._lock = threading.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    def due(self, config: RunnableConfig, metadata: CheckpointMetadata) -> str | None:
        conf = config.get("configurable", {})
        if not self.every or conf.get("checkpoint_ns") or "thread_id" not in conf:
            return None
        thread = str(conf["thread_id"])
        # The server's run id (merged into the metadata by the saver, so read it where the
        # run's config has it); without one, a run starts with its "input" checkpoint.
        run = metadata.get("run_id") or config.get("metadata", {}).get("run_id")
        run = run or conf.get("run_id")
        with self._lock:
            last, runs = self._seen.pop(thread, ("", 0))
            new = last != str(run) if run else metadata.get("source") == "input"
            runs += new
            self._seen[thread] = (str(run or ""), runs)
            if len(self._seen) > self.threads:  # the least recently active forget their count
                self._seen.popitem(last=False)
        return thread if new and runs % self.every == 0 else None

    def after_put(
        self,
        config: RunnableConfig,
        metadata: CheckpointMetadata,
        prune: Callable[[Sequence[str]], Coroutine[Any, Any, None]],
    ) -> None:
        """Called by a saver after each put: when it starts a due run, ``prune`` that thread
        in a task of its own."""
        if thread := self.due(config, metadata):
            task = asyncio.get_running_loop().create_task(quietly(prune([thread]), thread))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


async def quietly(prune: Coroutine[Any, Any, None], thread_id: str) -> None:
    """Disk space, never a reply, is at stake: a thread left unpruned is pruned next time."""
    try:
        await prune
    except Exception:  # noqa: BLE001
        log.warning("could not prune the checkpoints of thread %s", thread_id, exc_info=True)


class ServerSqliteSaver(AsyncSqliteSaver):
    """What the server asks of a checkpointer beyond the saver's own: dropping the
    checkpoints of runs it rolled back (``multitask_strategy="rollback"``), and keeping
    only a thread's latest checkpoint when it prunes, which it does every ``every`` runs
    of a thread."""

    def __init__(self, *args: Any, every: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schedule = PruneSchedule(every)

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

    settings = process_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(str(settings.server_checkpoints_path)) as conn:
        await conn.execute("PRAGMA journal_mode=WAL")
        saver = ServerSqliteSaver(conn, serde=serde(), every=settings.reply_history)
        await saver.setup()
        yield saver
