"""What the PostgreSQL checkpointer commits lasts through a crash of the database: its
tables, a step's writes, a forget's deletes. With the pool's connections committing
without waiting for the disk (``synchronous_commit=off``, as they once did), a hard stop
right after the setup lost its last migrations (a column every write needs; the setup
does not run again, so every memory job then failed: 7 of 10 here on that code). A write
and a forget's delete must last too; with commits that do not wait, whether one is lost
depends on the WAL writer's next flush (within 200 ms), so this test does not always
catch that."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from sqlalchemy import create_engine, text

from benchmarks.fault_suite import postgres_cluster
from groupmind.checkpoint import make_checkpointer
from groupmind.settings import Settings


def after_a_crash(pg: Any, query: str) -> Any:
    pg(False)  # -m immediate: what was not on disk is gone
    pg(True)
    engine = create_engine(pg.url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            return conn.execute(text(query)).scalar()
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_the_tables_a_write_and_a_delete_outlive_a_hard_stop() -> None:
    with postgres_cluster() as pg:
        url = pg.url  # type: ignore[attr-defined]
        settings = Settings(_env_file=None, checkpointer="postgres", checkpoint_url=url)  # type: ignore[call-arg]
        saver = make_checkpointer(settings)
        migrations = after_a_crash(pg, "SELECT count(*) FROM checkpoint_migrations")
        assert migrations == len(PostgresSaver.MIGRATIONS)
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "1"}}
        saver.put_writes(config, [("channel", "value")], "task")  # type: ignore[arg-type]
        assert after_a_crash(pg, "SELECT count(*) FROM checkpoint_writes") == 1
        saver.delete_thread("t")  # as forget does
        assert after_a_crash(pg, "SELECT count(*) FROM checkpoint_writes") == 0
