"""The fault suite on real components and real processes (``benchmarks/fault_suite.py``): nothing
lost, nothing stored twice, the backlog drained, the process alive. ``make bench-faults``
runs the same at larger N."""

from __future__ import annotations

import pytest

from benchmarks import fault_suite as faults

pytestmark = pytest.mark.slow


def check(result: faults.Result) -> None:
    assert (result.lost, result.twice, result.alive) == (0, 0, True), result


def test_worker_killed_10_times_over_100_jobs() -> None:
    check(faults.worker_kill9(100, kills=10))


@pytest.mark.postgres
def test_postgres_stopped_hard_under_a_worker() -> None:
    check(faults.worker_postgres_restart(40))


@pytest.mark.chroma_server
def test_chroma_server_killed_and_restarted_under_a_worker() -> None:
    check(faults.worker_chroma_restart(30))


def test_model_endpoint_down_and_back_under_a_worker() -> None:
    result = faults.worker_model_outage(20)
    check(result)


def test_bot_killed_mid_reply() -> None:
    check(faults.bot_kill9(40, kills=3))


@pytest.mark.postgres
def test_postgres_stopped_hard_under_a_bot() -> None:
    check(faults.bot_postgres_restart(40))


@pytest.mark.postgres
def test_processes_starting_together_on_an_empty_database_all_come_up(
    pg_database: str, tmp_path: faults.Path
) -> None:
    """Our migrations and the checkpointer's run once, under locks."""
    import subprocess
    import sys
    import uuid

    from sqlalchemy import create_engine, text

    admin = create_engine(pg_database.replace("postgresql://", "postgresql+psycopg://"),
                          isolation_level="AUTOCOMMIT")  # fmt: skip
    name = f"gm_race_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = pg_database.rsplit("/", 1)[0] + f"/{name}"
    env = faults.env_for(tmp_path / "data", sql_url=url, checkpointer="postgres")
    code = "from groupmind.session import open_session; from groupmind.settings import Settings; open_session(Settings())"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=faults.ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for _ in range(4)
    ]
    outcomes = [(p.wait(timeout=180), p.stderr.read().decode()[-800:]) for p in procs]  # type: ignore[union-attr]
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    assert [code for code, _ in outcomes] == [0, 0, 0, 0], outcomes


def test_bridge_killed_mid_storm_loses_nothing_it_took_and_answers_once() -> None:
    """A OneBot stand-in that never resends (as NapCat, Lagrange and LLOneBot do not)."""
    check(faults.bridge_kill9(150, chats=10, rate=60.0))


@pytest.mark.chroma_server
def test_store_down_mid_reply_every_message_answered_and_remembered_once() -> None:
    check(faults.bot_store_down(40))
