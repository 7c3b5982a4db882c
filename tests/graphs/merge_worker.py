"""Runs profile merges for one user from a separate process (the PostgreSQL race test)."""

from __future__ import annotations

import sys
from typing import Any
from zoneinfo import ZoneInfo

from domain.limits import Limits
from nodes.deps import Deps
from nodes.memory.intake import validate_job
from nodes.memory.merge_profile import merge_profile_rules
from state.context import Context
from stores.sql import SqlLexicalIndex, SqlPersonaStore, SqlProfileStore, make_engine
from tests.graphs.helpers import job

SHANGHAI = ZoneInfo("Asia/Shanghai")


def merge_state(deps: Deps, request_id: str, fact: str) -> dict[str, Any]:
    payload = job(request_id, action_summary="", new_info=f"我喜欢{fact}")
    return {
        "job": validate_job(payload, deps).model_dump(mode="json"),
        "persona_name": "小爱",
        "text": f"小明喜欢{fact}",
        "degraded": False,
    }


def sql_deps(url: str) -> Deps:
    engine = make_engine(url)
    return Deps(
        events=SqlLexicalIndex(engine, bot="bot"),
        profiles=SqlProfileStore(engine, bot="bot"),
        personas=SqlPersonaStore(engine),
        limits=Limits(tz=SHANGHAI),
    )


def merge_many(url: str, worker: int, count: int) -> list[str]:
    deps = sql_deps(url)
    return [
        merge_profile_rules(
            merge_state(deps, f"w{worker}-{i}", f"爱好{worker}x{i}"), Context(), deps
        )["profile"]
        for i in range(count)
    ]


if __name__ == "__main__":
    print(merge_many(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
