"""The whole stack on PostgreSQL by URL: SQL stores, the Postgres checkpointer, the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphs.memory import build_memory_graph
from groupmind.checkpoint import make_checkpointer
from groupmind.cli import app
from groupmind.session import open_session
from groupmind.settings import Settings
from groupmind.wiring import build_runtime
from groupmind.worker import MemoryWorker
from stores.base import job_thread_id
from tests.graphs.helpers import job
from tests.helpers.fakes import DownEvents

pytestmark = pytest.mark.postgres


def test_remember_search_and_resume_on_postgres(
    pg_engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = pg_engine.url.render_as_string(hide_password=False)
    monkeypatch.setenv("GROUPMIND_SQL_URL", url)
    monkeypatch.setenv("GROUPMIND_CHECKPOINTER", "postgres")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps(job("pg-1"), ensure_ascii=False), encoding="utf-8")
    runner = CliRunner()
    data = str(tmp_path / "data")
    result = runner.invoke(app, ["--data-dir", data, "remember", str(jobs), "--json"])
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["status"] == "stored"
    found = runner.invoke(
        app,
        [
            "--data-dir",
            data,
            "search",
            "北京",
            "--chat-type",
            "group",
            "--chat-id",
            "1001",
            "--json",
        ],
    )
    assert [h["id"] for h in json.loads(found.stdout)] == ["pg-1"]
    assert not (tmp_path / "data" / "groupmind.db").exists()  # nothing went to SQLite

    session = open_session(Settings(data_dir=tmp_path / "data"))
    done = session.jobs.get("pg-1")
    assert done is not None and done.status == "done" and done.result["status"] == "stored"  # type: ignore[index]
    # A job that is done keeps its outcome in the queue; its checkpoints are pruned.
    config: Any = {"configurable": {"thread_id": job_thread_id(session.bot, "pg-1")}}
    assert session.memory_graph.get_state(config).values == {}


def test_a_failed_run_resumes_from_the_postgres_checkpointer(
    pg_engine: Any, tmp_path: Path
) -> None:
    url = pg_engine.url.render_as_string(hide_password=False)
    settings = Settings(data_dir=tmp_path / "data", sql_url=url, checkpointer="postgres")
    runtime = build_runtime(settings)
    flaky = replace(runtime.deps, events=DownEvents(runtime.deps.events, failures=1))
    graph = build_memory_graph(flaky, checkpointer=make_checkpointer(settings))
    worker = MemoryWorker.one_bot(graph, flaky, settings)
    worker.submit(job("pg-2"))
    first = worker.run_next()
    assert first is not None and first.status == "failed"
    config: Any = {"configurable": {"thread_id": job_thread_id(settings.bot_id, "pg-2")}}
    assert graph.get_state(config).next == ("embed",)  # kept in PostgreSQL
    worker.jobs.fail("pg-2", "retry now", retry_at=0.0)  # due at once
    second = worker.run_next()
    assert second is not None and second.status == "stored"
