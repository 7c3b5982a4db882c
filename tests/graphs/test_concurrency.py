"""Concurrent merges for the same user never lose an update (seed 003 §4.4)."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from domain.scope import ChatScope
from nodes.memory.merge_profile import merge_profile_rules
from state.context import Context
from stores.sql.schema import ProfileMergeRow
from tests.graphs.merge_worker import merge_state, sql_deps

ROOT = Path(__file__).resolve().parents[2]
CHAT = ChatScope(platform="qq", chat_type="group", chat_id="1001")


def test_threads_racing_on_one_user_lose_nothing(sqlite_engine: Engine) -> None:
    url = sqlite_engine.url.render_as_string(hide_password=False)
    deps = sql_deps(url)
    states = [merge_state(deps, f"r{i}", f"爱好{i}") for i in range(12)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(lambda s: merge_profile_rules(s, Context(), deps), states))
    assert [o["profile"] for o in outcomes] == ["updated"] * 12
    rel = deps.profiles.get_relationship("qq", "10001")
    learned = deps.profiles.get_learned(CHAT, "10001")
    assert rel is not None and learned is not None
    assert sorted(learned.preference_keywords) == sorted(f"爱好{i}" for i in range(12))
    assert rel.relationship_score == pytest.approx(0.12)
    assert rel.version == 12


@pytest.mark.postgres
@pytest.mark.slow
def test_processes_racing_on_postgres_lose_nothing(pg_engine: Engine) -> None:
    url = pg_engine.url.render_as_string(hide_password=False)
    workers, per_worker = 4, 5
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.graphs.merge_worker", url, str(w), str(per_worker)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
        assert stdout.strip() == str(["updated"] * per_worker)
    rel = sql_deps(url).profiles.get_relationship("qq", "10001")
    learned = sql_deps(url).profiles.get_learned(CHAT, "10001")
    assert rel is not None and learned is not None
    expected = {f"爱好{w}x{i}" for w in range(workers) for i in range(per_worker)}
    assert set(learned.preference_keywords) == expected  # every update is there
    assert rel.relationship_score == pytest.approx(0.01 * workers * per_worker)
    with pg_engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(ProfileMergeRow)).scalar() == 20
