"""The services a suite needs (PostgreSQL, a built environment, public data): reached, or
the test skipped, except in CI (``GROUPMIND_REQUIRE_SERVICES=1``), where it fails."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import create_engine, text

REQUIRE = os.environ.get("GROUPMIND_REQUIRE_SERVICES") == "1"
PG_ADMIN_URL = os.environ.get("GROUPMIND_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def unavailable(reason: str) -> None:
    if REQUIRE:
        pytest.fail(f"{reason} (GROUPMIND_REQUIRE_SERVICES=1: CI must run these tests)")
    pytest.skip(reason)


def pg_reachable(url: str) -> bool:
    try:
        with create_engine(url.replace("postgresql://", "postgresql+psycopg://")).connect() as c:
            c.execute(text("SELECT 1"))
        return True
    except Exception:
        return False
