"""Hostile input: every CLI command judges each line alone (a bad byte, bad JSON, a NUL, a
lone surrogate, a control character, an out-of-range time, an impossible private chat),
names the line and the field, stores nothing of a refused line and goes on; the graphs,
called directly, refuse or store whatever text they are given, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver
from sqlalchemy import Engine, func, select
from typer.testing import CliRunner

from graphs.memory import build_memory_graph
from groupmind.cli import app
from groupmind.settings import Settings
from groupmind.worker import MemoryWorker
from nodes.deps import Deps
from state.validation import InputError
from stores.sql.schema import EventDocRow, MessageRow
from tests.conftest import make_deps
from tests.graphs.helpers import job
from tests.graphs.reply_helpers import Chat, message

GOOD, LATER = message("第一条好消息"), message("最后一条好消息")
BAD: list[tuple[Any, str]] = [  # (line, what its error must name)
    (b'{"message_id": "x1", "content": "\xff\xfe"}', "not valid UTF-8 (byte 0xff"),
    ('{"message_id": "x2", "content": ', "not valid JSON"),
    (message("NUL\x00inside", message_id="x3"), "content: contains a control character"),
    (
        '{"message_id": "x4", "content": "lone \\ud800 surrogate", "platform": "qq", "chat_type":'
        ' "group", "chat_id": "1", "user_id": "1", "user_name": "a", "timestamp": 1795000000}',
        "content: contains a lone surrogate",
    ),  # fmt: skip
    (message("hi", message_id="x5", user_name="bell\x07"), "user_name: contains a control"),
    (message("hi", message_id="x6", timestamp="0001-01-01T00:00:00+00:00"), "out of range"),
    (message("hi", message_id="x7", timestamp="9999-12-31T00:00:00+00:00"), "out of range"),
    (
        message("hi", message_id="x8", chat_type="private", chat_id="someone-else"),
        "chat_id: a private chat's id is the user's id",
    ),  # fmt: skip
    ([1, 2, 3], "must be a JSON object"),
]


def write(path: Path, rows: list[Any]) -> Path:
    encoded = [
        r if isinstance(r, bytes) else (r if isinstance(r, str) else json.dumps(r)).encode()
        for r in rows
    ]
    path.write_bytes(b"\n".join(encoded))
    return path


def cli(data: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, ["--data-dir", str(data), *args], env=env)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """Environment for the CLI: its SQL on SQLite (default) or on a PostgreSQL database."""
    if request.param == "sqlite":
        return {}
    url = request.getfixturevalue("pg_database")
    request.getfixturevalue("pg_engine")  # emptied for this test
    return {"GROUPMIND_SQL_URL": url}


def test_replay_and_rank_judge_each_line_alone(tmp_path: Path, backend: dict[str, str]) -> None:
    rows = [GOOD, *(line for line, _ in BAD), LATER]
    for command in ("replay", "rank"):
        data = tmp_path / command
        result = cli(data, command, str(write(tmp_path / "in.jsonl", rows)), "--json", env=backend)
        assert result.exit_code == 1, result.output  # refused lines: non-zero, after all lines
        out = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(out) == len(rows)
        assert out[0]["message_id"] == GOOD["message_id"] and "error" not in out[0]
        assert out[-1]["message_id"] == LATER["message_id"] and "error" not in out[-1]
        for (_, why), got in zip(BAD, out[1:-1], strict=True):
            assert why in got["error"] and got["error"].startswith("line "), got
        stored = _stored_messages(data, backend)
        assert GOOD["message_id"] in stored and LATER["message_id"] in stored
        assert not stored & {f"x{n}" for n in range(1, 9)}  # nothing of a refused line


def _stored_messages(data: Path, backend: dict[str, str]) -> set[str]:
    from stores.sql import make_engine

    url = backend.get("GROUPMIND_SQL_URL") or f"sqlite:///{data / 'groupmind.db'}"
    engine = make_engine(url)
    with engine.connect() as conn:
        ids = set(conn.execute(select(MessageRow.message_id)).scalars())
    engine.dispose()
    return ids


def test_remember_and_search_judge_each_line_alone(tmp_path: Path, backend: dict[str, str]) -> None:
    jobs = [
        job("ok-1"),
        b'{"request_id": "bad-1", "new_info": "\xc3\x28"}',
        job("bad-2", new_info="NUL\x00"),
        job("bad-3", user_name="tab\tname"),
        job("bad-4", timestamp="1066-10-14T09:00:00+00:00"),
        job("bad-5", chat_type="private", chat_id="not-the-user"),
        job("ok-2"),
    ]
    result = cli(
        tmp_path, "remember", str(write(tmp_path / "j.jsonl", jobs)), "--json", env=backend
    )
    assert result.exit_code == 1
    out = {o.get("request_id", "?"): o for o in map(json.loads, result.stdout.splitlines())}
    assert out["ok-1"]["status"] == out["ok-2"]["status"] == "stored"
    assert "line 2: not valid UTF-8" in out["?"]["error"]
    assert "new_info: contains a control character" in out["bad-2"]["error"]
    assert "user_name: contains a control character" in out["bad-3"]["error"]
    assert "out of range" in out["bad-4"]["error"]
    assert "a private chat's id is the user's id" in out["bad-5"]["error"]
    queries = [{"query": "北京", "chat_type": "group", "chat_id": "1001"}, b"\xff",
               {"query": "\x00", "chat_type": "group", "chat_id": "1001"}]  # fmt: skip
    found = cli(
        tmp_path, "search", "--batch", str(write(tmp_path / "q.jsonl", queries)), env=backend
    )
    first, second, third = map(json.loads, found.stdout.splitlines())
    assert {h["id"] for h in first} <= {"ok-1", "ok-2"} and first
    assert "not valid UTF-8" in second["error"] and "query: contains" in third["error"]
    assert found.exit_code == 1


def test_remember_queue_only_queues_for_a_worker(tmp_path: Path) -> None:
    result = cli(tmp_path, "remember", "--queue-only", "--json",
                 str(write(tmp_path / "j.jsonl", [job("q-1"), job("q-2", user_id="")])))  # fmt: skip
    first, second = map(json.loads, result.stdout.splitlines())
    assert first == {"request_id": "q-1", "status": "queued"}
    assert second["status"] == "failed" and "user_id" in second["error"]
    worked = cli(tmp_path, "worker", "--once")
    assert json.loads(worked.stdout.splitlines()[0])["request_id"] == "q-1"


def test_limits_are_the_deployments_everywhere(deps: Deps) -> None:
    """A message observe accepts under MAX_TEXT_CHARS=8000 is answered and remembered."""
    roomy = replace(deps, limits=replace(deps.limits, max_text_chars=8000))
    long = "我下周三要去北京出差。" * 500  # 5,500 characters
    out = Chat(roomy).send(message(f"@bot {long}", mentions=["bot"]))
    assert out["action"] == "text_reply" and out["handed_off"]
    _drain(roomy)
    row = roomy.jobs.get(out["handed_off"][0])  # type: ignore[union-attr]
    assert row is not None and row.status == "done", row


def _drain(deps: Deps) -> None:
    graph = build_memory_graph(deps, checkpointer=InMemorySaver())
    MemoryWorker.one_bot(graph, deps, Settings(_env_file=None)).drain()  # type: ignore[call-arg]


TEXT = st.text(min_size=0, max_size=60)  # every code point, lone surrogates and NUL included


@pytest.mark.parametrize("sql", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@settings(
    max_examples=25, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(content=TEXT, name=TEXT, chat_name=st.none() | TEXT)
def test_any_text_is_refused_by_field_or_remembered(
    sql: str,
    content: str,
    name: str,
    chat_name: str | None,
    request: pytest.FixtureRequest,
    chroma_client: Any,
    embeddings: Any,
) -> None:
    engine: Engine = request.getfixturevalue("sqlite_engine" if sql == "sqlite" else "pg_engine")
    deps = make_deps(engine, chroma_client, embeddings)
    raw = message(f"@bot {content}", user_name=name, chat_name=chat_name, mentions=["bot"])
    with engine.connect() as conn:
        before = conn.execute(select(func.count()).select_from(MessageRow)).scalar_one()
    try:
        out = Chat(deps).send(raw)
    except InputError as exc:
        assert exc.field == "message" and ":" in exc.reason  # names the field at fault
        with engine.connect() as conn:  # and nothing of it was stored
            assert conn.execute(select(func.count()).select_from(MessageRow)).scalar_one() == before
        return
    _drain(deps)
    for request_id in out["handed_off"]:
        row = deps.jobs.get(request_id)  # type: ignore[union-attr]
        assert row is not None and row.status == "done", row
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(EventDocRow)).scalar_one() >= 1


@pytest.mark.parametrize("sql", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@settings(
    max_examples=25, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(said=TEXT, name=TEXT, recent=TEXT)
def test_the_memory_graph_refuses_by_field_or_stores(
    sql: str, said: str, name: str, recent: str, request: pytest.FixtureRequest,
    chroma_client: Any, embeddings: Any,
) -> None:  # fmt: skip
    engine: Engine = request.getfixturevalue("sqlite_engine" if sql == "sqlite" else "pg_engine")
    deps = make_deps(engine, chroma_client, embeddings)
    raw = job(f"h-{abs(hash((said, name, recent)))}", new_info=said, user_name=name,
              recent_messages=[{"user_name": "阿强", "content": recent}])  # fmt: skip
    graph = build_memory_graph(deps, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": raw["request_id"]}}
    try:
        out = graph.invoke(raw, config, durability="sync")
    except InputError as exc:
        assert exc.field == "job" and ":" in exc.reason
        assert deps.events.get([raw["request_id"]]) == []  # nothing partial stored
        return
    assert out["status"] in ("stored", "degraded")
    assert [e.id for e in deps.events.get([raw["request_id"]])] == [raw["request_id"]]
