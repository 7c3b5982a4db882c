"""The whole stack on PostgreSQL by URL: SQL stores, the Postgres checkpointer, the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from groupmind.cli import app
from groupmind.session import open_session
from groupmind.settings import Settings
from tests.graphs.helpers import job

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
    config: Any = {"configurable": {"thread_id": "pg-1"}}
    snapshot = session.memory_graph.get_state(config)
    assert snapshot.values["status"] == "stored" and snapshot.next == ()
    assert session.jobs.get("pg-1").status == "done"  # type: ignore[union-attr]
