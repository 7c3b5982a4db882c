"""The PostgreSQL checkpointer's tables survive a crash of the database right after they
were made. Its steps commit without waiting for the disk (``synchronous_commit=off``);
its setup must not: a hard stop right after it lost the last migrations (a column every
write needs), and since the setup does not run again, every memory job then failed."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from sqlalchemy import create_engine, text

from groupmind.checkpoint import make_checkpointer
from groupmind.settings import Settings
from tests.faults import postgres_cluster


@pytest.mark.postgres
def test_the_checkpoint_tables_outlive_a_hard_stop_right_after_the_setup() -> None:
    with postgres_cluster() as pg:
        url = pg.url  # type: ignore[attr-defined]
        settings = Settings(_env_file=None, checkpointer="postgres", checkpoint_url=url)  # type: ignore[call-arg]
        saver = make_checkpointer(settings)
        pg(False)  # -m immediate: what was not on disk is gone
        pg(True)
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "1"}}
        saver.put_writes(config, [("channel", "value")], "task")  # type: ignore[arg-type]
        engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
        with engine.connect() as conn:
            done = conn.execute(text("SELECT count(*) FROM checkpoint_migrations")).scalar()
            written = conn.execute(text("SELECT count(*) FROM checkpoint_writes")).scalar()
        engine.dispose()
        assert done == len(PostgresSaver.MIGRATIONS)
        assert written == 1  # the pool reconnected, and the write found its columns
