"""A server's reply threads keep their history short, whoever sends the runs: on the
production recipe's server (langhost, PostgreSQL) through langgraph_sdk, counted in its
checkpoint tables; on `langgraph dev`'s saver, through a graph of its own. The state a
chat carries on (its buffer, what it has handled) survives every prune.

Needs deploy/.venv (`make deploy-venv`); `.ci/run` builds it.
"""

from __future__ import annotations

import asyncio
import json
import operator
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import aiosqlite
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph_sdk import get_sync_client
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from sqlalchemy import create_engine, text

from groupmind.checkpoint import serde
from groupmind.server.checkpoint import ServerSqliteSaver
from groupmind.server.pg_checkpoint import KeepLatestPostgresSaver
from groupmind.threads import stream_thread_id
from standins import langhost

REDIS_DB = 13
KEY = "key-of-the-history-bot-0123456789"
BOTS = json.dumps([{"id": "bot", "api_key": KEY, "platforms": ["qq"]}])
STREAM = "qq:group:hist1"


def message(k: int) -> dict[str, Any]:
    return {
        "message_id": f"h{k}", "platform": "qq", "chat_type": "group", "chat_id": "hist1",
        "chat_name": "群", "user_id": "u1", "user_name": "小明", "mentions": ["bot"],
        "content": f"@bot 暗号H{k}X", "timestamp": 1_795_000_000 + 60 * k,
    }  # fmt: skip


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    langhost.available()
    with langhost.databases("hist_lh", "hist_gm") as urls:
        langhost.redis_flush(REDIS_DB)
        env = langhost.base_env(
            urls["hist_lh"], REDIS_DB, sql_url=urls["hist_gm"], bots=BOTS, reply_history="4",
            server_memory_worker="false", data_dir=str(tmp_path / "data"),
        )  # fmt: skip
        url, proc = langhost.serve(tmp_path, env)
        try:
            yield url, urls["hist_lh"]
        finally:
            langhost.stop(proc)


def counts(db: str, thread: str) -> dict[str, int]:
    engine = create_engine(db.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as conn:
        out = {
            table: conn.execute(
                text(f"SELECT count(*) FROM {table} WHERE thread_id = :t"), {"t": thread}
            ).scalar_one()
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
        }
    engine.dispose()
    return out


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(600)
def test_langhost_prunes_reply_threads_every_few_runs_and_on_request(
    server: tuple[str, str],
) -> None:
    url, db = server
    client = get_sync_client(url=url, api_key=KEY, timeout=60)
    thread = stream_thread_id(STREAM, "bot")

    def send(k: int) -> dict[str, Any]:
        return client.runs.wait(thread, "reply", input={"message": message(k)},
                                if_not_exists="create", multitask_strategy="enqueue")  # type: ignore[return-value]  # fmt: skip

    first = send(0)
    per_run = counts(db, thread)["checkpoints"]
    assert per_run >= 3, per_run  # a run writes several checkpoints
    for k in range(1, 13):
        send(k)
    kept = counts(db, thread)
    # 13 runs, pruned at the start of the 4th, 8th and 12th: at most the last two runs'
    assert kept["checkpoints"] <= 2 * per_run < 13 * per_run, kept
    again = send(5)  # a redelivery is still known as handled, as it was answered
    assert again["reply"] and again["reason"].startswith("already handled")
    latest = send(13)  # and the chat carries on from its buffer
    assert first["action"] == latest["action"] == "text_reply"
    assert "h12" in latest["context_ids"]

    client.threads.prune([thread], strategy="keep_latest")  # the SDK's prune works too
    pruned = counts(db, thread)
    assert pruned["checkpoints"] == 1 and pruned["checkpoint_writes"] <= kept["checkpoint_writes"]
    state = client.threads.get_state(thread)
    assert state["values"]["handled"]["h13"]["action"] == "text_reply"
    assert send(14)["action"] == "text_reply"


class Count(TypedDict):
    n: Annotated[int, operator.add]
    log: Annotated[list[str], operator.add]


def count_graph() -> StateGraph[Count]:
    """Two steps a run; ``log`` is a channel kept as a blob by PostgreSQL's saver."""
    builder = StateGraph(Count)
    builder.add_node("a", lambda s: {"n": 1, "log": [f"a{s['n']}"]})
    builder.add_node("b", lambda s: {"n": 1, "log": [f"b{s['n']}"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    return builder


@pytest.mark.postgres
def test_postgres_saver_keeps_the_latest_with_its_values_and_drops_rolled_back_runs(
    pg_database: str,
) -> None:
    async def main() -> None:
        url = pg_database.replace("postgresql+psycopg://", "postgresql://")
        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        async with AsyncConnectionPool(url, kwargs=kwargs, open=False) as pool:
            saver = KeepLatestPostgresSaver(pool, serde=serde())  # every=0: on request only
            await saver.setup()
            graph = count_graph().compile(checkpointer=saver)
            config: Any = {"configurable": {"thread_id": f"pg-{uuid.uuid4().hex[:6]}"}}
            thread = config["configurable"]["thread_id"]
            for run in range(3):
                await graph.ainvoke(
                    {"n": 0, "log": []}, {**config, "metadata": {"run_id": f"r{run}"}}
                )
            rows = await table_counts(pool, thread)
            assert rows["checkpoints"] == 12 and rows["checkpoint_blobs"] > 3, rows
            await saver.adelete_for_runs(["r2"])  # rolled back: its state is gone
            assert (await graph.aget_state(config)).values["n"] == 4
            await saver.aprune([thread])
            rows = await table_counts(pool, thread)
            assert rows["checkpoints"] == 1 and rows["checkpoint_writes"] == 0, rows
            assert rows["checkpoint_blobs"] == 1, rows  # log's latest value, and no other
            state = await graph.aget_state(config)
            assert state.values == {"n": 4, "log": ["a0", "b1", "a2", "b3"]}
            await graph.ainvoke({"n": 0, "log": []}, config)  # and the thread goes on
            assert (await graph.aget_state(config)).values["n"] == 6
            with pytest.raises(ValueError, match="keep_latest or delete"):
                await saver.aprune([thread], strategy="everything")
            await saver.aprune([thread], strategy="delete")
            assert (await table_counts(pool, thread))["checkpoints"] == 0

    asyncio.run(main())


@pytest.mark.postgres
def test_postgres_saver_over_a_pool_lets_runs_read_while_one_statement_is_in_flight(
    pg_database: str,
) -> None:
    """Over a pool, one run's statement in flight does not hold up another run's read
    (the stock saver's single lock would, until the first finished)."""

    async def main() -> None:
        url = pg_database.replace("postgresql+psycopg://", "postgresql://")
        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        async with AsyncConnectionPool(url, kwargs=kwargs, open=False, max_size=4) as pool:
            saver = KeepLatestPostgresSaver(pool, serde=serde())
            await saver.setup()
            config: Any = {"configurable": {"thread_id": "t0", "checkpoint_ns": ""}}
            await saver.aput(config, empty_checkpoint(), {}, {})
            holding, release = asyncio.Event(), asyncio.Event()

            async def hold() -> None:
                async with saver._cursor() as cur:
                    await cur.execute("SELECT 1")
                    holding.set()
                    await release.wait()

            holder = asyncio.create_task(hold())
            await asyncio.wait_for(holding.wait(), 10)
            try:
                got = await asyncio.wait_for(saver.aget_tuple(config), 10)
                assert got is not None and got.config["configurable"]["thread_id"] == "t0"
            finally:
                release.set()
                await holder
            writes = [saver.aput({"configurable": {"thread_id": f"w{i}", "checkpoint_ns": ""}},
                                 empty_checkpoint(), {}, {}) for i in range(12)]  # fmt: skip
            await asyncio.gather(*writes)
            for i in range(12):
                thread = {"configurable": {"thread_id": f"w{i}", "checkpoint_ns": ""}}
                assert await saver.aget_tuple(thread) is not None

    asyncio.run(main())


async def table_counts(pool: AsyncConnectionPool[Any], thread: str) -> dict[str, int]:
    out = {}
    async with pool.connection() as conn:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            cur = await conn.execute(
                f"SELECT count(*) AS n FROM {table} WHERE thread_id = %s", (thread,)
            )
            out[table] = (await cur.fetchone())["n"]
    return out


def test_dev_saver_prunes_every_few_runs(tmp_path: Path) -> None:
    """`langgraph dev`'s saver: runs told apart by the run id in their metadata."""

    async def main() -> tuple[list[int], int]:
        builder = count_graph()
        async with aiosqlite.connect(str(tmp_path / "c.db")) as conn:
            saver = ServerSqliteSaver(conn, serde=serde(), every=3)
            await saver.setup()
            graph = builder.compile(checkpointer=saver)
            config: Any = {"configurable": {"thread_id": "t"}}
            sizes = []
            for run in range(7):
                await graph.ainvoke(
                    {"n": 0, "log": []}, {**config, "metadata": {"run_id": f"r{run}"}}
                )
                await asyncio.sleep(0.05)  # the prune runs in a task of its own
                sizes.append(len([c async for c in saver.alist(config)]))
            state = await graph.aget_state(config)
            return sizes, state.values["n"]

    sizes, total = asyncio.run(main())
    assert total == 14  # every run's sum survived the prunes
    # 4 checkpoints a run; pruned to the latest as runs 3 and 6 start (0-based 2 and 5),
    # in a task of its own, so maybe a step or two into the run
    assert sizes[:2] == [4, 8] and sizes[2] <= 4 and sizes[5] <= 4, sizes
    assert sizes[3:5] == [sizes[2] + 4, sizes[2] + 8] and sizes[6] == sizes[5] + 4, sizes
