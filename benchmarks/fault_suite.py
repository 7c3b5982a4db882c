"""Fault scenarios on real components (``tests/acceptance/test_faults.py`` runs them small, ``make
bench-faults`` large): memory workers and a bot killed with SIGKILL, a throwaway PostgreSQL
cluster stopped hard and started again, a `chroma run` server and an OpenAI-compatible
endpoint taken down and brought back. Each reports what was lost, what was stored twice,
how long the backlog took to drain and whether the process stayed up.

Lost and twice are read from the stores: every job must end ``done`` with its event in
the keyword index and its profile change applied exactly once (each person's affection is
the sum of one step per job); in the bot scenarios every message's unique token must be in
exactly one remembered event.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from domain.scope import ChatScope
from standins.model import Script, StandIn, serve
from standins.serving import free_port
from stores.sql import SqlJobQueue, make_engine, migrate
from stores.sql.schema import EventDocRow, UserRelationshipRow

ROOT = Path(__file__).resolve().parents[1]
GROUP = ChatScope(platform="qq", chat_type="group", chat_id="1001")
TOKEN = re.compile(r"T\d{5}X")


@dataclass
class Result:
    fault: str
    n: int
    lost: int = 0
    twice: int = 0
    drain_s: float = 0.0
    alive: bool = True
    notes: list[str] = field(default_factory=list)

    def row(self) -> list[str]:
        return [self.fault, str(self.n), str(self.lost), str(self.twice),
                f"{self.drain_s:.1f}", "yes" if self.alive else "NO"]  # fmt: skip


# --- processes ---------------------------------------------------------------------------


def env_for(data: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPMIND_")}
    env.update({"GROUPMIND_DATA_DIR": str(data), "LANGSMITH_TRACING": "false"})
    env.update({f"GROUPMIND_{k.upper()}": v for k, v in settings.items()})
    return env


def start_worker(
    env: dict[str, str], log: Path, prefix: Sequence[str] = ()
) -> subprocess.Popen[bytes]:
    """``prefix``: a command that runs the worker (``nice -n 5``), which execs it: one pid."""
    cmd = [*prefix, sys.executable, "-m", "groupmind.cli", "worker", "--poll", "0.2"]
    with log.open("ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def postgres_cluster() -> Iterator[Callable[[bool], None]]:
    """A throwaway PostgreSQL cluster (initdb / pg_ctl, as the postgres user when run as
    root); yields ``switch(up)`` to start it or stop it hard (``-m immediate``). The URL is
    in ``switch.url``."""
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
    initdb = shutil.which("initdb") or (str(bins[-1] / "initdb") if bins else None)
    if initdb is None:
        raise RuntimeError("PostgreSQL's initdb is not installed")
    pg_ctl = str(Path(initdb).parent / "pg_ctl")
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    home = Path(tempfile.mkdtemp(prefix="gm-pg-"))
    data, sock = home / "data", home / "sock"
    sock.mkdir()
    if as_user:
        shutil.chown(home, "postgres")
        shutil.chown(sock, "postgres")
    port = free_port()
    subprocess.run([*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"],
                   check=True, capture_output=True)  # fmt: skip

    def switch(up: bool) -> None:
        if up:
            opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1"
            subprocess.run([*as_user, pg_ctl, "-D", str(data), "-o", opts, "-w", "-l",
                            str(home / "pg.log"), "start"], check=True, capture_output=True)  # fmt: skip
        else:
            subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                           check=True, capture_output=True)  # fmt: skip

    switch.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"  # type: ignore[attr-defined]
    switch(True)
    try:
        yield switch
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)  # fmt: skip
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def chroma_server(path: Path) -> Iterator[Callable[[bool], None]]:
    """A `chroma run` on a fixed port; yields ``switch(up)`` (down is a SIGKILL)."""
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []
    chroma = str(Path(sys.executable).parent / "chroma")

    def switch(up: bool) -> None:
        if not up:
            procs[-1].kill()
            procs[-1].wait()
            return
        cmd = [chroma, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)]
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        procs.append(
            subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
        _wait_port(port, 60)

    switch.port = port  # type: ignore[attr-defined]
    switch(True)
    try:
        yield switch
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listens on port {port}")


# --- jobs and what became of them --------------------------------------------------------


def jobs(n: int, people: int = 10) -> list[dict[str, Any]]:
    """``n`` memory jobs for ``people`` people; each has a unique token in its words."""
    return [
        {"request_id": f"job-{i:05d}", "action_summary": "", "user_id": f"u{i % people}",
         "new_info": f"记一下：暗号T{i:05d}X", "user_name": f"用户{i % people}",
         "chat_type": "group", "chat_id": "1001", "chat_name": "群", "persona_id": "default",
         "timestamp": 1_795_000_000 + i}
        for i in range(n)
    ]  # fmt: skip


def enqueue(engine: Engine, batch: list[dict[str, Any]]) -> None:
    queue = SqlJobQueue(engine, bot="bot")
    for job in batch:
        queue.enqueue(job["request_id"], job, scope=GROUP, user_id=job["user_id"])


DRAIN_S = 240.0  # under pytest's 300 s: a drain that never ends is reported with what it left


def what_was_left(engine: Engine, batch: list[dict[str, Any]], log: Path) -> list[str]:
    """For a fault that lost a job: the batch's statuses (and last errors), the worker's
    last lines."""
    queue = SqlJobQueue(engine, bot="bot")
    rows = [queue.get(j["request_id"]) for j in batch]
    statuses = Counter(r.status if r else "missing" for r in rows)
    errors = sorted({str(r.last_error)[:200] for r in rows if r is not None and r.last_error})
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
    return [f"statuses {dict(statuses)}", *errors[:5], tail]


def wait_drained(engine: Engine, ids: list[str], timeout: float, proc: Any = None) -> float:
    """Seconds until every job is ``done`` (or the timeout); a database still coming back
    is waited for."""
    start = time.monotonic()
    queue = SqlJobQueue(engine, bot="bot")
    while time.monotonic() - start < timeout:
        try:
            if all((row := queue.get(i)) is not None and row.status == "done" for i in ids):
                return time.monotonic() - start
        except Exception:  # noqa: BLE001 - the database may be restarting
            pass
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.3)
    return time.monotonic() - start


def job_outcome(engine: Engine, batch: list[dict[str, Any]], step: float = 0.01) -> tuple[int, int]:
    """(lost, twice): a job not done or without its event is lost; a person whose affection
    is not one ``step`` per job had a change applied twice (or lost)."""
    queue = SqlJobQueue(engine, bot="bot")
    with engine.connect() as conn:
        events = set(conn.execute(select(EventDocRow.id)).scalars())
        scores = dict(
            conn.execute(
                select(UserRelationshipRow.user_id, UserRelationshipRow.relationship_score)
            ).all()
        )
    lost = sum(1 for j in batch if (r := queue.get(j["request_id"])) is None or r.status != "done"
               or j["request_id"] not in events)  # fmt: skip
    per_person: dict[str, int] = {}
    for j in batch:
        per_person[j["user_id"]] = per_person.get(j["user_id"], 0) + 1
    twice = sum(1 for user, k in per_person.items()
                if round(scores.get(user, 0.0), 4) > round(min(1.0, step * k), 4))  # fmt: skip
    return lost, twice


def token_outcome(engine: Engine, tokens: list[str], waiting: Path) -> tuple[int, int]:
    """(lost, twice) over the tokens of the messages a bot was sent: each must be in
    exactly one remembered event, or still in a thread's buffer (``waiting``) for the next
    hand-off."""
    with engine.connect() as conn:
        texts = list(conn.execute(select(EventDocRow.text)).scalars())
    if waiting.exists():
        texts += json.loads(waiting.read_text("utf-8"))
    found: dict[str, int] = {}
    for text in texts:
        for token in set(TOKEN.findall(text)):
            found[token] = found.get(token, 0) + 1
    lost = sum(1 for t in tokens if t not in found)
    twice = sum(1 for t in tokens if found.get(t, 0) > 1)
    return lost, twice


def sql(url: str) -> Engine:
    engine = make_engine(url)
    migrate(engine)
    return engine


# --- the scenarios -----------------------------------------------------------------------


def worker_kill9(n: int, kills: int, seed: int = 1) -> Result:
    """``groupmind worker`` SIGKILLed at random moments while it drains ``n`` jobs."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        engine = sql(f"sqlite:///{data / 'groupmind.db'}")
        batch = jobs(n)
        enqueue(engine, batch)
        env, log = env_for(data), Path(tmp) / "worker.log"
        proc = start_worker(env, log)
        for _ in range(kills):
            time.sleep(rng.uniform(0.5, 2.0))
            proc.kill()
            proc.wait()
            proc = start_worker(env, log)
        drain = wait_drained(engine, [j["request_id"] for j in batch], DRAIN_S, proc)
        alive = proc.poll() is None
        stop(proc)
        lost, twice = job_outcome(engine, batch)
        notes = what_was_left(engine, batch, log) if lost or twice or not alive else []
        return Result(f"worker kill -9 ×{kills}", n, lost, twice, drain, alive, notes)


def worker_postgres_restart(n: int, down_s: float = 3.0) -> Result:
    """A worker on a PostgreSQL (SQL and checkpoints) that is stopped hard mid-backlog."""
    with postgres_cluster() as pg, tempfile.TemporaryDirectory() as tmp:
        url = pg.url  # type: ignore[attr-defined]
        engine = sql(url)
        env, log = (
            env_for(Path(tmp) / "data", sql_url=url, checkpointer="postgres"),
            Path(tmp) / "w.log",
        )
        proc = start_worker(env, log)
        batch = jobs(n)
        enqueue(engine, batch[: n // 2])
        time.sleep(2.0)
        pg(False)
        time.sleep(down_s)
        pg(True)
        enqueue(engine, batch[n // 2 :])
        drain = wait_drained(engine, [j["request_id"] for j in batch], DRAIN_S, proc)
        alive = proc.poll() is None
        stop(proc)
        lost, twice = job_outcome(engine, batch)
        notes = what_was_left(engine, batch, log) if lost or twice or not alive else []
        engine.dispose()
        return Result("PostgreSQL stopped hard under a worker", n, lost, twice, drain, alive, notes)


def worker_chroma_restart(n: int, down_s: float = 5.0) -> Result:
    """A worker whose `chroma run` server is killed and started again."""
    with tempfile.TemporaryDirectory() as tmp, chroma_server(Path(tmp) / "chroma") as chroma:
        data = Path(tmp) / "data"
        engine = sql(f"sqlite:///{data / 'groupmind.db'}")
        env = env_for(data, chroma_host="127.0.0.1", chroma_port=str(chroma.port),  # type: ignore[attr-defined]
                      job_backoff_base_s="0.5", job_backoff_max_s="3")  # fmt: skip
        log = Path(tmp) / "worker.log"
        proc = start_worker(env, log)
        batch = jobs(n)
        enqueue(engine, batch)
        time.sleep(1.5)
        chroma(False)
        time.sleep(down_s)
        chroma(True)
        drain = wait_drained(engine, [j["request_id"] for j in batch], DRAIN_S, proc)
        alive = proc.poll() is None
        stop(proc)
        lost, twice = job_outcome(engine, batch)
        notes = what_was_left(engine, batch, log) if lost or twice or not alive else []
        return Result("chroma run killed and restarted", n, lost, twice, drain, alive, notes)


def worker_model_outage(n: int, down_s: float = 5.0) -> Result:
    """A worker on `llm` variants whose OpenAI-compatible endpoint goes away and comes back."""
    script = Script(
        structured=lambda body: {
            "impression_text": "话不多",
            "affection_change": 0.01,
            "user_summary": "一位群友",
        },  # fmt: skip
        text=lambda body: (
            "".join(TOKEN.findall(json.dumps(body, ensure_ascii=False))[:1]) + " 是这次记下的暗号。"
        ),
    )
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        engine = sql(f"sqlite:///{data / 'groupmind.db'}")
        env = env_for(data, chat_model="standin", chat_base_url=f"http://127.0.0.1:{port}/v1",
                      chat_api_key="standin", chat_timeout_s="5", job_backoff_base_s="0.5",
                      job_backoff_max_s="3")  # fmt: skip
        batch = jobs(n)
        with serve(script, port=port):
            proc = start_worker(env, Path(tmp) / "worker.log")
            enqueue(engine, batch)
            time.sleep(2.0)
        time.sleep(down_s)  # the endpoint is gone
        standin: StandIn
        with serve(script, port=port) as standin:
            drain = wait_drained(engine, [j["request_id"] for j in batch], DRAIN_S, proc)
            alive = proc.poll() is None
            stop(proc)
        lost, twice = job_outcome(engine, batch)
        return Result("model endpoint down and back", n, lost, twice, drain, alive,
                      [f"{len(standin.requests)} requests after it came back"])  # fmt: skip


def bot_messages(n: int, people: int = 5) -> list[dict[str, Any]]:
    """``n`` messages for a bot, a unique token in each; every fifth addresses the bot."""
    return [
        {"message_id": f"msg-{i:05d}", "platform": "qq", "chat_type": "group",
         "chat_id": f"{1000 + i % 3}", "chat_name": "群", "user_id": f"u{i % people}",
         "user_name": f"用户{i % people}", "content": f"{'@bot ' if i % 5 == 4 else ''}暗号T{i:05d}X",
         "mentions": ["bot"] if i % 5 == 4 else [], "timestamp": 1_795_000_000 + 10 * i}
        for i in range(n)
    ]  # fmt: skip


def start_bot(env: dict[str, str], tmp: Path) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.fault_bot",
        str(tmp / "messages.jsonl"),
        str(tmp / "acked"),
    ]
    with (tmp / "bot.log").open("ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_progress(progress: Path, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    """Until the bot has answered a message (its progress file exists) or has exited."""
    deadline = time.monotonic() + timeout
    while not progress.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)


def wait_bot(proc: subprocess.Popen[bytes], timeout: float) -> tuple[float, int]:
    """Seconds until the bot has answered everything and its memory ran; its exit code."""
    start = time.monotonic()
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = -1
    return time.monotonic() - start, code


def bot_kill9(n: int, kills: int, seed: int = 2) -> Result:
    """An in-process bot SIGKILLed mid-reply; restarted, it is sent what it had not acked."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        messages = bot_messages(n)
        (tmp / "messages.jsonl").write_text(
            "\n".join(json.dumps(m, ensure_ascii=False) for m in messages)
        )
        env = env_for(tmp / "data")
        env["GROUPMIND_CHAT_STATES__BUFFER_MAX"] = "4"  # hand off often: many jobs in flight
        proc = start_bot(env, tmp)
        for _ in range(kills):
            time.sleep(rng.uniform(2.0, 5.0))
            if proc.poll() is not None:
                break
            proc.kill()
            proc.wait()
            proc = start_bot(env, tmp)
        drain, code = wait_bot(proc, 600)
        engine = sql(f"sqlite:///{tmp / 'data' / 'groupmind.db'}")
        tokens = [TOKEN.findall(m["content"])[0] for m in messages]
        lost, twice = token_outcome(engine, tokens, tmp / "pending.json")
        notes = [] if code == 0 else [(tmp / "bot.log").read_text()[-1500:]]
        return Result(f"bot kill -9 ×{kills}", n, lost, twice, drain, code == 0, notes)


def bot_postgres_restart(n: int, down_s: float = 3.0) -> Result:
    """An in-process bot on PostgreSQL (SQL and checkpoints) stopped hard mid-chat."""
    with postgres_cluster() as pg, tempfile.TemporaryDirectory() as tmp_name:
        tmp, url = Path(tmp_name), pg.url  # type: ignore[attr-defined]
        messages = bot_messages(n)
        (tmp / "messages.jsonl").write_text(
            "\n".join(json.dumps(m, ensure_ascii=False) for m in messages)
        )
        env = env_for(tmp / "data", sql_url=url, checkpointer="postgres")
        env["GROUPMIND_CHAT_STATES__BUFFER_MAX"] = "4"
        proc = start_bot(env, tmp)
        wait_progress(tmp / "acked", proc)  # mid-chat, not still starting (a loaded machine)
        pg(False)
        time.sleep(down_s)
        pg(True)
        drain, code = wait_bot(proc, 600)
        engine = sql(url)
        tokens = [TOKEN.findall(m["content"])[0] for m in messages]
        lost, twice = token_outcome(engine, tokens, tmp / "pending.json")
        engine.dispose()
        notes = [] if code == 0 else [(tmp / "bot.log").read_text()[-1500:]]
        return Result(
            "PostgreSQL stopped hard under a bot", n, lost, twice, drain, code == 0, notes
        )


# --- the OneBot bridge -------------------------------------------------------------------


def start_bridge(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "groupmind.cli", "onebot", "--port", str(port)]
    with log.open("ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def bridge_kill9(n: int, chats: int, kills: int = 1, rate: float = 100.0, seed: int = 3) -> Result:
    """A `groupmind onebot` bridge (graphs in-process) SIGKILLed mid-storm and started
    again. A OneBot stand-in pushes ``n`` private messages over ``chats`` chats at ``rate``
    a second and, like NapCat, never sends an event twice: what the bridge had taken must
    be stored and answered, none twice. An event the stand-in wrote into a connection that
    was dying (in the kernel's buffers at the kill) never reached the bridge: counted apart,
    as is an answer that was mid-send at the kill (``unconfirmed``: at most once)."""
    import asyncio

    from standins.onebot import Implementation, private_event
    from stores.journal import Journal, events
    from stores.sql.schema import MessageRow

    rng = random.Random(seed)

    async def storm(tmp: Path) -> tuple[list[str], Implementation, float, bool]:
        data, port = tmp / "data", free_port()
        env, log = env_for(data), tmp / "bridge.log"
        proc = start_bridge(env, port, log)
        url = f"ws://127.0.0.1:{port}/onebot/v11/ws"
        impl = Implementation()

        async def dial() -> None:
            deadline = time.monotonic() + 120
            while True:
                try:
                    await impl.dial(url)
                    return
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise
                    await asyncio.sleep(0.2)

        await dial()
        kill_at = sorted(rng.sample(range(n // 5, n - n // 5), kills))
        written: list[str] = []
        for i in range(n):
            if kill_at and i == kill_at[0]:
                kill_at.pop(0)
                proc.kill()
                proc.wait()
                proc = start_bridge(env, port, log)
                await dial()
            event = private_event(40000 + i % chats, f"第{i}条")
            try:
                await impl.send(event)
                written.append(str(event["message_id"]))
            except Exception:  # noqa: BLE001 - the connection died under it: never delivered
                pass
            await asyncio.sleep(1.0 / rate)
        journal = Journal(data / "onebot-journal.db")
        started = time.monotonic()
        while time.monotonic() - started < 600 and proc.poll() is None:
            open_ = {k: v for k, v in journal.counts().items() if k in ("received", "decided")}
            if not open_:
                break
            await asyncio.sleep(0.5)
        drain = time.monotonic() - started
        await asyncio.sleep(1.0)  # the last confirmations
        alive = proc.poll() is None
        await impl.hang_up()
        stop(proc)
        journal.close()
        return written, impl, drain, alive

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        written, impl, drain, alive = asyncio.run(storm(tmp))
        journal = Journal(tmp / "data" / "onebot-journal.db")
        with journal.engine.connect() as conn:
            states = dict(conn.execute(select(events.c.message_id, events.c.state)).all())
        journal.close()
        engine = sql(f"sqlite:///{tmp / 'data' / 'groupmind.db'}")
        with engine.connect() as conn:
            stored = set(
                conn.execute(
                    select(MessageRow.message_id).where(MessageRow.from_bot.is_(False))
                ).scalars()
            )
        answers: dict[str, int] = {}
        for action in impl.sent("send_"):
            quoted = str(action["params"]["message"][0]["data"]["id"])
            answers[quoted] = answers.get(quoted, 0) + 1
        unconfirmed = [m for m, s in states.items() if s == "unconfirmed"]
        lost = sum(1 for m in states
                   if m not in stored or (answers.get(m, 0) == 0 and m not in unconfirmed))  # fmt: skip
        twice = sum(1 for count in answers.values() if count > 1)
        in_transit = len(set(written) - set(states))
        notes = [f"in transit at the kill: {in_transit}", f"unconfirmed: {len(unconfirmed)}"]
        if lost or twice or not alive:
            notes.append((tmp / "bridge.log").read_text(errors="replace")[-2000:])
        return Result(f"bridge kill -9 ×{kills}", n, lost, twice, drain, alive, notes)


def bot_store_down(n: int, down_s: float = 4.0) -> Result:
    """An in-process bot whose `chroma run` server is killed mid-chat and started again,
    its replies checkpointed at every step as on a LangGraph server: a reply that failed
    after its message was stored is delivered again (as a platform would) and must then be
    answered, once, and the message remembered once."""
    from stores.sql.schema import MessageRow

    with tempfile.TemporaryDirectory() as tmp_name, chroma_server(Path(tmp_name) / "c") as chroma:
        tmp = Path(tmp_name)
        messages = bot_messages(n)
        (tmp / "messages.jsonl").write_text(
            "\n".join(json.dumps(m, ensure_ascii=False) for m in messages)
        )
        env = env_for(tmp / "data", chroma_host="127.0.0.1", chroma_port=str(chroma.port),  # type: ignore[attr-defined]
                      job_backoff_base_s="0.5", job_backoff_max_s="3")  # fmt: skip
        env.update({"GROUPMIND_CHAT_STATES__BUFFER_MAX": "4", "FAULT_BOT_DURABILITY": "async"})
        proc = start_bot(env, tmp)
        wait_progress(tmp / "acked", proc)
        chroma(False)
        time.sleep(down_s)
        chroma(True)
        drain, code = wait_bot(proc, 600)
        engine = sql(f"sqlite:///{tmp / 'data' / 'groupmind.db'}")
        tokens = [TOKEN.findall(m["content"])[0] for m in messages]
        lost, twice = token_outcome(engine, tokens, tmp / "pending.json")
        with engine.connect() as conn:
            replies = list(
                conn.execute(
                    select(MessageRow.reply_to).where(MessageRow.from_bot.is_(True))
                ).scalars()
            )
        addressed = [m["message_id"] for m in messages if m["mentions"]]
        unanswered = [m for m in addressed if m not in replies]
        lost += len(unanswered)
        twice += len(replies) - len(set(replies))
        log = (tmp / "bot.log").read_text(errors="replace")
        failed = len(re.findall(r"WARNING:fault_bot:message \d+:", log))
        notes = [f"replies that failed mid-way and were delivered again: {failed}"]
        if unanswered:
            notes.append(f"unanswered: {unanswered}")
        if code != 0:
            notes.append(log[-1500:])
        return Result("store down mid-reply", n, lost, twice, drain, code == 0, notes)
