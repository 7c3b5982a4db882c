"""What a busy bot costs as its memory grows: 1k -> 1M events over up to 10k chats.

Each scale gets a fresh data dir filled with generated Chinese events (deterministic: the
text pool and noise of ``benchmarks.latency``), spread round robin over ``n / 100`` group
chats (at most 10,000). Then, in this one process:

- disk per stored memory, all included (SQL with its keyword index, Chroma, the reply
  threads' checkpoints), as loaded and after ``groupmind compact``;
- search p50/p95 in chats whose vectors are held (200 searches, 20 chats), and what the
  held vectors take;
- reply p50/p95 through the reply graph (rules, memory worker elsewhere; 100 addressed
  messages over 5 chats);
- the process's resident memory (RSS) at the end;
- a bot process started afresh on the data dir (as after a restart): its replies, its RSS.

Then the memory worker's throughput: the same rule jobs queued once, drained by 1, 2 and 4
``groupmind worker --once`` processes of 1 and of 4 threads each (``WORKER_THREADS``),
taking up to 8 of a chat's jobs at once (``JOB_BATCH``; the jobs are queued over 20 chats,
a backlog of each), over a Chroma server, with SQL and checkpoints in
SQLite, then in PostgreSQL (jobs/s from the first job done to the last; a worker's CPU a
job counted after its first job, its start-up apart). And replies while a worker drains
jobs beside them, at niceness 0 and at ``WORKER_NICE``'s default (benchmarks/beside.py).
And the OneBot
bridge's messages/s end to end, as a `groupmind onebot` process answers a burst from a
protocol stand-in, and until its own worker has remembered them (benchmarks/bridge_rate.py).
And whether int8 vectors keep exact search's rankings, on LoCoMo (benchmarks/packed_recall.py).
And what claiming a job costs behind 0, 50k and 200k finished ones (benchmarks/claims.py).
And what one Chroma server takes in upserts, from one writer and from two at once
(benchmarks/chroma_writes.py).

    make bench-scale                                 # 1k, 10k, 100k, 1M; workers 1/2/4
    make bench-scale ARGS="--scales 1000 10000 --jobs 120"
    make bench-scale ARGS="--smoke"                  # what `make test` runs
    make bench-scale ARGS="--scales --workers --bridge-messages 0"   # int8 recall alone
    make bench-scale ARGS="--scales --workers 1 2 --threads 1 --pin"  # worker i on core i
    make bench-scale ARGS="--scales --workers 1 2 --threads 1 --job-batch 8 1"  # and one by one
    make bench-scale ARGS="--from-report bench-results/scale-X.json --plot docs/bench-scale.svg"
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.beside import arm_name, replies_beside
from benchmarks.bridge_rate import bridge_rate
from benchmarks.chroma_writes import chroma_writes
from benchmarks.chroma_writes import rows as chroma_write_rows
from benchmarks.claims import claim_cost
from benchmarks.common import machine, pct, process_cpu_s, sched_s
from benchmarks.latency import USERS, pool, populate
from benchmarks.packed_recall import recall
from benchmarks.workload import CHROMA_PIDS, TOPICS, chroma_server, jobs, replies
from groupmind.plot import lines_svg, side_by_side
from groupmind.providers import make_embeddings
from groupmind.settings import Settings
from groupmind.wiring import build_runtime
from stores.base import EventQuery, Persona

ROOT = Path(__file__).resolve().parents[1]
SCALES = (1_000, 10_000, 100_000, 1_000_000)
console = Console()


def chats_for(n: int) -> int:
    return max(10, min(10_000, n // 100))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def searches(runtime: Any, chats: int, count: int) -> tuple[list[float], float]:
    """``count`` searches over 20 chats, each chat's vectors held first; and the MB held."""
    events, rng = runtime.deps.events, random.Random(5)
    asked = [str(1001 + c) for c in range(min(20, chats))]
    for chat in asked:
        query = EventQuery(text="预热", platform="qq", chat_type="group", chat_id=chat,
                           persona_id="default")  # fmt: skip
        key = (runtime.deps.limits.bot_id, query.scope, query.persona_id)
        events.search(query)
        deadline = time.monotonic() + 120
        while not events.held.holds(key) and time.monotonic() < deadline:
            time.sleep(0.01)
    ms = []
    for i in range(count):
        query = EventQuery(
            text=f"{rng.choice(USERS)}最近在忙{rng.choice(TOPICS)}吗", platform="qq",
            chat_type="group", chat_id=asked[i % len(asked)], persona_id="default",
        )  # fmt: skip
        t0 = time.perf_counter()
        events.search(query)
        ms.append((time.perf_counter() - t0) * 1000)
    return ms, events.held.held_bytes() / 2**20


def one_scale(n: int, work: Path, search_n: int, reply_n: int) -> dict[str, Any]:
    data = work / f"events-{n}"
    shutil.rmtree(data, ignore_errors=True)
    runtime = build_runtime(Settings(data_dir=data))
    runtime.deps.personas.put_persona(Persona(persona_id="default", name="小爱"))
    texts, vectors = pool(work / "cache", runtime.embeddings, min(2000, n))
    chats = chats_for(n)
    load_s = populate(runtime, n, texts, vectors, chats=chats)
    search_ms, held_mb = searches(runtime, chats, search_n)
    reply_ms = replies(runtime, reply_n)
    loaded_rss = rss_mb()
    loaded = disk_bytes(data)
    compacted = runtime.compact()
    runtime.background.stop() if runtime.background else None
    row = {
        "events": n, "chats": chats, "load_s": load_s, "events_per_s": n / load_s,
        "search_ms": search_ms, "reply_ms": reply_ms, "held_mb": held_mb, "rss_mb": loaded_rss,
        "disk_bytes": loaded, "disk_compacted_bytes": disk_bytes(data), "compacted": compacted,
        "bot": bot_process(data, reply_n),
    }  # fmt: skip
    return row


def bot_process(data: Path, reply_n: int) -> dict[str, Any]:
    """A bot process started afresh on the data dir (as after a restart): its replies in
    five chats, and its RSS then. The loading process's RSS also holds what loading took."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", "--bot-process", str(data),
         "--replies", str(reply_n)],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=1800,
    )  # fmt: skip
    return dict(json.loads(done.stdout.splitlines()[-1]))


def as_bot(data: Path, reply_n: int) -> None:
    runtime = build_runtime(Settings(data_dir=data))
    ms = replies(runtime, reply_n, prefix=f"bot{uuid.uuid4().hex[:6]}-")  # new messages
    print(json.dumps({"reply_ms": ms, "rss_mb": rss_mb()}))
    runtime.background.stop() if runtime.background else None


# --- the worker's throughput ---------------------------------------------------------------


def machine_cpu_s() -> tuple[float, float]:
    """(busy, idle) CPU seconds of the whole machine since boot, every core (/proc/stat)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields) - idle) / tick, idle / tick


@contextmanager
def postgres() -> Iterator[tuple[str, str]]:
    from standins.langhost import databases

    with databases("gm_scale_sql", "gm_scale_ckpt") as urls:
        yield urls["gm_scale_sql"], urls["gm_scale_ckpt"]


def drain(env: dict[str, str], workers: int, count: int, pin: bool = False) -> dict[str, Any]:
    """Queue ``count`` jobs, then run ``workers`` worker processes until the queue is empty;
    ``pin``: worker i on core i (mod cores), started by ``taskset -c i``."""
    runtime = build_runtime(Settings(_env_file=None, **settings_of(env)))  # type: ignore[call-arg]
    worker = runtime.memory_worker()
    for job in jobs(count):
        worker.submit({**job, "request_id": f"{job['request_id']}-{uuid.uuid4().hex[:6]}"})
    cmd = [str(Path(sys.executable).parent / "groupmind"), "worker", "--once"]
    ncores = os.cpu_count() or 1
    # Where the cores go: the workers (reaped children), the Chroma server, the machine.
    chroma0 = sum(map(process_cpu_s, CHROMA_PIDS))
    children0 = _children_cpu_s()
    busy0, idle0 = machine_cpu_s()
    t0 = time.monotonic()
    # Each prints a line per job it ran, to a file: a pipe read one worker after another
    # would fill and stall the others (64 KB is ~150 jobs' lines).
    statuses: dict[str, int] = {}
    with ExitStack() as files:  # closed even when a worker fails to start
        outs = [files.enter_context(tempfile.TemporaryFile("w+")) for _ in range(workers)]
        procs = [
            subprocess.Popen(
                (["taskset", "-c", str(i % ncores)] if pin else []) + cmd,
                env=env,
                stdout=out,
                stderr=subprocess.DEVNULL,
                text=True,
                cwd=ROOT,
            )
            for i, out in enumerate(outs)
        ]
        cores = [_cores(proc) for proc in procs]
        steady = _steady_cpu(procs, outs)
        wall = time.monotonic() - t0
        for out in outs:
            out.seek(0)
            for line in out:
                status = json.loads(line).get("status", "?")
                statuses[status] = statuses.get(status, 0) + 1
    busy1, idle1 = machine_cpu_s()
    cpu = {"wall_s": wall, "workers_s": _children_cpu_s() - children0,
           "chroma_s": sum(map(process_cpu_s, CHROMA_PIDS)) - chroma0,
           "machine_busy_s": busy1 - busy0, "machine_s": busy1 + idle1 - busy0 - idle0,
           "steady": steady}  # fmt: skip
    # when each job was done, from its row: the span excludes the processes' start-up
    rows = runtime.board.list("done", count + 10)
    finished = sorted(r.updated_at for r in rows)
    span = finished[-1] - finished[0] if len(finished) > 1 else float("nan")
    return {"workers": workers, "pinned": pin, "cores": cores, "jobs": len(finished),
            "statuses": statuses, "cpu": cpu,
            "jobs_per_s": (len(finished) - 1) / span if span else float("nan")}  # fmt: skip


def _steady_cpu(procs: list[subprocess.Popen[str]], outs: list[Any]) -> list[dict[str, float]]:
    """Wait for the workers; per worker, its CPU seconds up to its first job's line (start-up:
    imports, models, the first job) and after it, with the jobs after it. A worker's CPU a
    job is the latter over those jobs: start-up, paid once by each worker, is not a job's.
    And where its time after the first job went, by the scheduler's count (sampled every
    5 ms, the last sample before it ended): on a core, runnable and waiting for a core, and
    the rest of the wall time blocked (on Chroma, SQL, a lock, the disk)."""
    first: dict[int, float] = {}
    ended: dict[int, float] = {}
    # per worker: when first and last sampled, and each thread's counts then (a thread
    # that ends keeps its last; one born after the first sample counts from 0; one that
    # lived between two samples is missed: its time reads as blocked)
    times: dict[int, list[float]] = {}
    base: dict[int, dict[int, tuple[float, float]]] = {}
    last: dict[int, dict[int, tuple[float, float]]] = {}
    while len(ended) < len(procs):
        for proc, out in zip(procs, outs, strict=True):
            if proc.pid in ended:
                continue
            if proc.pid not in first and os.fstat(out.fileno()).st_size:
                try:  # taskset execs the worker: the same pid
                    first[proc.pid] = process_cpu_s(proc.pid)
                except OSError:  # it ended meanwhile: its start-up is unknown
                    pass
            if proc.pid in first and (threads := sched_s(proc.pid)):  # {}: it ended
                now = time.monotonic()
                times.setdefault(proc.pid, [now, now])[1] = now
                base.setdefault(proc.pid, threads)
                last.setdefault(proc.pid, {}).update(threads)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                ended[proc.pid] = usage.ru_utime + usage.ru_stime
        time.sleep(0.005)
    steady = []
    for proc, out in zip(procs, outs, strict=True):
        out.seek(0)
        jobs = sum(1 for _ in out)
        start = first.get(proc.pid, float("nan"))
        one = {"startup_s": start, "after_s": ended[proc.pid] - start, "jobs": jobs - 1}
        if proc.pid in times:
            t0, t1 = times[proc.pid]
            was = base[proc.pid]
            on, waiting = (
                sum(
                    counts[i] - was.get(tid, (0.0, 0.0))[i]
                    for tid, counts in last[proc.pid].items()
                )
                for i in (0, 1)
            )
            one |= {"sched_wall_s": t1 - t0, "on_core_s": on, "waiting_s": waiting}
        steady.append(one)
    return steady


def _cores(proc: subprocess.Popen[str], timeout_s: float = 30) -> list[int]:
    """The cores a worker process may run on, read once it is the worker (``taskset`` sets
    them before it starts the worker); [] if it ended first."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if Path(f"/proc/{proc.pid}/comm").read_text().strip() == "groupmind":
                return sorted(os.sched_getaffinity(proc.pid))
        except OSError:
            break
        time.sleep(0.01)
    return []


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def settings_of(env: dict[str, str]) -> dict[str, Any]:
    keys = {"GROUPMIND_DATA_DIR": "data_dir", "GROUPMIND_SQL_URL": "sql_url",
            "GROUPMIND_CHROMA_HOST": "chroma_host", "GROUPMIND_CHROMA_PORT": "chroma_port",
            "GROUPMIND_CHECKPOINTER": "checkpointer", "GROUPMIND_CHECKPOINT_URL": "checkpoint_url"}  # fmt: skip
    return {name: env[key] for key, name in keys.items() if key in env}


def throughput(
    work: Path,
    counts: tuple[int, ...],
    per_run: int,
    backends: list[str],
    threads: list[int],
    pin: bool = False,
    batches: tuple[int, ...] = (8,),
) -> list[Any]:
    """Per backend, threads a worker (``WORKER_THREADS``), jobs a batch (``JOB_BATCH``)
    and number of worker processes: jobs/s and where the CPU went."""
    out = []
    for backend, each, batch, workers in itertools.product(backends, threads, batches, counts):
        run = work / f"workers-{backend}-{each}-{batch}-{workers}"
        shutil.rmtree(run, ignore_errors=True)
        run.mkdir(parents=True)
        with (
            chroma_server(run) as port,
            postgres() if backend == "postgresql" else _none() as pg,
        ):
            env = {**os.environ, "GROUPMIND_DATA_DIR": str(run / "data"),
                   "GROUPMIND_CHROMA_HOST": "127.0.0.1", "GROUPMIND_CHROMA_PORT": str(port),
                   "GROUPMIND_WORKER_THREADS": str(each), "GROUPMIND_JOB_BATCH": str(batch)}  # fmt: skip
            if pg:
                env |= {"GROUPMIND_SQL_URL": pg[0], "GROUPMIND_CHECKPOINTER": "postgres",
                        "GROUPMIND_CHECKPOINT_URL": pg[1]}  # fmt: skip
            result = {"backend": backend, "threads": each, "job_batch": batch,
                      **drain(env, workers, per_run, pin)}  # fmt: skip
        console.print(f"  {backend}, {workers} worker(s) of {each} thread(s), batch {batch}: "
                      f"{result['jobs_per_s']:.1f} jobs/s")  # fmt: skip
        out.append(result)
    return out


@contextmanager
def _none() -> Iterator[None]:
    yield None


# --- report --------------------------------------------------------------------------------


def print_report(report: dict[str, Any]) -> None:
    table = Table(title=f"groupmind at scale — {report['machine']}")
    for col in ("events", "chats", "load (events/s)", "search p50 / p95 ms", "reply p50 / p95 ms",
                "held vectors MB", "RSS MB", "bot process: reply p50 / p95 ms, RSS MB",
                "disk / memory KB", "after compact KB"):  # fmt: skip
        table.add_column(col, justify="right")
    for r in report["scales"]:
        table.add_row(
            f"{r['events']:,}", f"{r['chats']:,}", f"{r['events_per_s']:,.0f}",
            f"{pct(r['search_ms'], 50):.1f} / {pct(r['search_ms'], 95):.1f}",
            f"{pct(r['reply_ms'], 50):.1f} / {pct(r['reply_ms'], 95):.1f}",
            f"{r['held_mb']:.1f}", f"{r['rss_mb']:.0f}", bot_cell(r.get("bot")),
            f"{r['disk_bytes'] / r['events'] / 1024:.1f}",
            f"{r['disk_compacted_bytes'] / r['events'] / 1024:.1f}",
        )  # fmt: skip
    console.print(table)
    if report["workers"]:
        pinned = ", worker i on core i" if any(r.get("pinned") for r in report["workers"]) else ""
        t = Table(title=f"memory worker throughput (rule jobs; Chroma server{pinned})")
        for col in ("SQL + checkpoints", "threads a worker, jobs a batch", "workers", "jobs",
                    "jobs/s", "× one worker", "cores busy", "CPU ms a job: workers / Chroma / rest",
                    "worker CPU ms a job after its first", "worker start-up CPU s"):  # fmt: skip
            t.add_column(col, justify="right")
        one = {run_key(r): r for r in report["workers"] if r["workers"] == 1}
        for r in report["workers"]:
            base = one[run_key(r)]["jobs_per_s"] if run_key(r) in one else float("nan")
            _, threads, batch = run_key(r)
            t.add_row(r["backend"], f"{threads}, {batch}", str(r["workers"]), str(r["jobs"]),
                      f"{r['jobs_per_s']:.1f}", f"{r['jobs_per_s'] / base:.2f}", *cpu_cells(r))  # fmt: skip
        console.print(t)
        for r in report["workers"]:
            if split := time_split(r):
                console.print(
                    f"  {r['backend']}, {r['workers']} worker(s) of {run_key(r)[1]} thread(s), "
                    f"batch {run_key(r)[2]}: "
                    f"a job's wall time after the first, ms: on a core {split[0]:.1f} / "
                    f"waiting for a core {split[1]:.1f} / "
                    f"blocked (Chroma, SQL, locks, disk) {split[2]:.1f}"
                )
        for (backend, threads, _), r in one.items():
            if ceiling := cpu_ceiling(r):
                console.print(
                    f"  {backend}: one worker of {threads} thread(s) keeps {ceiling[0]:.2f} of "
                    f"{ceiling[1]} cores busy, so N such workers can reach at most "
                    f"{ceiling[1] / ceiling[0]:.2f}× one here"
                )
    if beside := report.get("beside"):
        t = Table(title="replies with a `groupmind worker` draining jobs beside them "
                  "(its default threads, not pinned; a Chroma server)")  # fmt: skip
        for col in ("worker", "replies", "reply p50 / p95 ms", "worker jobs/s meanwhile"):
            t.add_column(col, justify="right")
        for nice in dict.fromkeys(b["nice"] for b in beside):
            arm = [b for b in beside if b["nice"] == nice]
            ms = [m for b in arm for m in b["reply_ms"]]
            rates = " / ".join(f"{b['jobs_per_s']:.1f}" for b in arm)
            t.add_row(arm_name(nice), str(len(ms)), f"{pct(ms, 50):.1f} / {pct(ms, 95):.1f}",
                      "-" if nice is None else rates)  # fmt: skip
        console.print(t)
    if writes := report.get("chroma_writes"):
        t = Table(
            title="one Chroma server's upserts (client processes; a memory job makes one of 1)"
        )
        for col in ("events a call", "clients", "calls", "events/s", "× one client",
                    "call p50 / p95 ms"):  # fmt: skip
            t.add_column(col, justify="right")
        for row in chroma_write_rows(writes):
            t.add_row(*row)
        console.print(t)
        alone = max(w["items_per_s"] for w in writes if w["batch"] == 1)
        console.print(
            f"  one event a call, the server took {alone:.0f}/s at best: the memory jobs "
            "of every worker that shares it, at most that many a second here"
        )
    if claims := report.get("claims"):
        t = Table(title=f"claiming a job ({len(claims[0]['claim_ms'])} claims after N done jobs)")
        for col in ("SQL", "done jobs", "claim p50 / p95 ms"):
            t.add_column(col, justify="right")
        for c in claims:
            ms = c["claim_ms"]
            t.add_row(c["backend"], f"{c['done']:,}", f"{pct(ms, 50):.2f} / {pct(ms, 95):.2f}")
        console.print(t)
    if p := report.get("packed"):
        console.print(
            f"held vectors as int8 ({p['bytes_per_vector']['int8']} bytes, float32 "
            f"{p['bytes_per_vector']['float32']}), {p['questions']} LoCoMo questions over "
            f"{p['passages']} turns: overlap@10 {p['overlap_at_10']:.3f}, same top 1 "
            f"{p['same_top1']:.3f}, evidence recall@10 {p['evidence_recall_at_10']['int8']:.3f} "
            f"(float32 {p['evidence_recall_at_10']['float32']:.3f})"
        )
    if b := report.get("bridge"):
        t = Table(title="OneBot bridge, end to end (graphs and memory worker in its process)")
        for col in ("messages", "chats", "replies", "answered msgs/s", "remembered msgs/s",
                    "bridge RSS MB"):  # fmt: skip
            t.add_column(col, justify="right")
        t.add_row(str(b["messages"]), str(b["chats"]), str(b["replies"]),
                  f"{b['messages_per_s']:.1f}", f"{b['remembered_per_s']:.1f}", f"{b['rss_mb']:.0f}")  # fmt: skip
        console.print(t)


def run_key(r: dict[str, Any]) -> tuple[str, int, int]:
    """A worker run's backend, threads a worker and jobs a batch (reports from before
    either: one)."""
    return r["backend"], r.get("threads", 1), r.get("job_batch", 1)


def cpu_cells(r: dict[str, Any]) -> list[str]:
    cpu = r.get("cpu")
    if not cpu or not r["jobs"]:
        return ["-", "-", "-", "-"]
    rest = cpu["machine_busy_s"] - cpu["workers_s"] - cpu["chroma_s"]
    per = [1000 * x / r["jobs"] for x in (cpu["workers_s"], cpu["chroma_s"], rest)]
    cells = [f"{cpu['machine_busy_s'] / cpu['wall_s']:.2f}", " / ".join(f"{x:.0f}" for x in per)]
    if steady := cpu.get("steady"):  # reports before stop 46 have no split
        after = sum(w["after_s"] for w in steady) / max(1, sum(w["jobs"] for w in steady))
        startup = sum(w["startup_s"] for w in steady) / len(steady)
        return [*cells, f"{1000 * after:.0f}", f"{startup:.1f}"]
    return [*cells, "-", "-"]


def time_split(r: dict[str, Any]) -> tuple[float, float, float] | None:
    """A job's ms after each worker's first, on its job thread: on a core, waiting for
    one, blocked; over the run's workers and their jobs. A worker of N threads has N
    times its wall time to spend (reports before stop 48 have none)."""
    steady = [w for w in (r.get("cpu") or {}).get("steady", []) if "sched_wall_s" in w]
    jobs = sum(w["jobs"] for w in steady)
    if not steady or not jobs:
        return None
    wall, on, waiting = (
        sum(w[k] for w in steady) for k in ("sched_wall_s", "on_core_s", "waiting_s")
    )
    wall *= run_key(r)[1]
    return 1000 * on / jobs, 1000 * waiting / jobs, 1000 * (wall - on - waiting) / jobs


def cpu_ceiling(r: dict[str, Any]) -> tuple[float, int] | None:
    """(cores one worker's run keeps busy, the machine's cores), from its CPU accounting."""
    cpu = r.get("cpu")
    if not cpu or not cpu["wall_s"]:
        return None
    cores = round(cpu["machine_s"] / cpu["wall_s"])
    return cpu["machine_busy_s"] / cpu["wall_s"], cores


def bot_cell(bot: dict[str, Any] | None) -> str:
    if not bot:
        return "-"
    ms = bot["reply_ms"]
    return f"{pct(ms, 50):.1f} / {pct(ms, 95):.1f}, {bot['rss_mb']:.0f}"


def plot(report: dict[str, Any]) -> str:
    """The curves 1k -> 1M: reply and search p95, RSS, disk per memory; worker jobs/s."""
    rows = report["scales"]

    def curve(key: str, q: float = 95) -> list[tuple[float, float]]:
        return [(r["events"], pct(r[key], q)) for r in rows]

    def per(key: str, scale: float = 1.0) -> list[tuple[float, float]]:
        return [(r["events"], r[key] * scale) for r in rows]

    bots = [(r["events"], r["bot"]["rss_mb"]) for r in rows if r.get("bot")]
    charts = [
        lines_svg({"reply p95": curve("reply_ms"), "reply p50": curve("reply_ms", 50)},
                  "reply (rules, memory elsewhere)", "ms", target=60),
        lines_svg({"search p95": curve("search_ms"), "search p50": curve("search_ms", 50)},
                  "search in a held chat", "ms"),
        lines_svg({"loading process": per("rss_mb"), "bot process": bots, "held vectors": per("held_mb")},
                  "RSS", "MB",
                  target=1024),
        lines_svg({"as loaded": [(r["events"], r["disk_bytes"] / r["events"] / 1024) for r in rows],
                   "after compact": [(r["events"], r["disk_compacted_bytes"] / r["events"] / 1024)
                                     for r in rows]}, "disk per memory", "KB", target=8),
    ]  # fmt: skip
    return side_by_side(charts)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scales", type=int, nargs="*", default=list(SCALES))
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--replies", type=int, default=100)
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4])
    parser.add_argument("--jobs", type=int, default=240, help="jobs per worker run")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 4],
                        help="threads a worker process runs jobs on (WORKER_THREADS)")  # fmt: skip
    parser.add_argument("--job-batch", type=int, nargs="*", default=[8],
                        help="a chat's due jobs a worker runs and writes at once (JOB_BATCH)")  # fmt: skip
    parser.add_argument("--pin", action="store_true",
                        help="worker i on core i (mod cores), each started by taskset")  # fmt: skip
    parser.add_argument("--backends", nargs="*", default=["sqlite", "postgresql"])
    parser.add_argument("--claim-history", type=int, nargs="*", default=[0, 50_000, 200_000],
                        help="done jobs in the queue before 100 claims are timed; none: skip")  # fmt: skip
    parser.add_argument("--chroma-writes", type=int, default=300,
                        help="upserts a Chroma writer makes (1 and 2 at once); 0: skip")  # fmt: skip
    parser.add_argument("--beside", type=int, default=2,
                        help="rounds of replies with no worker, and a worker at nice 0 and at "
                        "WORKER_NICE's default, draining jobs beside them; 0: skip")  # fmt: skip
    parser.add_argument("--bridge-messages", type=int, default=600, help="0: no bridge run")
    parser.add_argument("--bridge-chats", type=int, default=20)
    parser.add_argument("--packed-recall", type=int, default=10,
                        help="LoCoMo conversations for int8 against float32 rankings; 0: none")  # fmt: skip
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (make test)")
    parser.add_argument("--work-dir", type=Path, default=Path(".groupmind/bench-scale"))
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--plot", type=Path, help="also write the curves here (SVG)")
    parser.add_argument("--from-report", type=Path, help="print and plot a report, run nothing")
    parser.add_argument("--bot-process", type=Path, help=argparse.SUPPRESS)  # bot_process's
    args = parser.parse_args()
    if args.bot_process:
        as_bot(args.bot_process, args.replies)
        return
    if args.from_report:
        report = json.loads(args.from_report.read_text())
        print_report(report)
        if args.plot:
            args.plot.write_text(plot(report))
        return
    if args.smoke:
        args.scales, args.searches, args.replies = [300, 1200], 20, 10
        args.workers, args.jobs, args.backends, args.threads = [1, 2], 12, ["sqlite"], [1, 2]
        args.claim_history, args.chroma_writes = [0, 2_000], 10
        args.bridge_messages, args.bridge_chats, args.packed_recall = 40, 4, 1
        args.beside = 1
    console.print(f"[bold]groupmind at scale[/bold] on {machine()}")
    report: dict[str, Any] = {"machine": machine(), "scales": [], "workers": [], "bridge": None,
                              "packed": None, "claims": [], "chroma_writes": [],
                              "beside": []}  # fmt: skip
    for n in args.scales:
        console.print(f"{n:,} events over {chats_for(n):,} chats ...")
        report["scales"].append(one_scale(n, args.work_dir, args.searches, args.replies))
    if args.workers:
        console.print("worker throughput ...")
        if args.pin and not shutil.which("taskset"):
            raise SystemExit("--pin starts the workers with taskset (util-linux): not found")
        report["workers"] = throughput(
            args.work_dir,
            tuple(args.workers),
            args.jobs,
            args.backends,
            args.threads,
            args.pin,
            tuple(args.job_batch),
        )
    if args.beside:
        console.print("replies with a worker draining jobs beside them ...")
        small = {"events": 200, "jobs_n": 60} if args.smoke else {}
        report["beside"] = replies_beside(args.work_dir, args.beside, args.replies, **small)
    if args.chroma_writes:
        console.print("one Chroma server's writes, one writer and two ...")
        (args.work_dir / "chroma-writes").mkdir(parents=True, exist_ok=True)
        with chroma_server(args.work_dir / "chroma-writes") as port:
            report["chroma_writes"] = chroma_writes(port, args.chroma_writes)
    if args.claim_history:
        console.print("claiming a job as finished jobs pile up ...")
        report["claims"] = claim_cost(args.work_dir, args.claim_history, args.backends)
    if args.packed_recall:
        console.print("held vectors as int8 against float32 (LoCoMo) ...")
        report["packed"] = recall(make_embeddings(Settings()), args.packed_recall)
    if args.bridge_messages:
        console.print("the bridge, end to end ...")
        report["bridge"] = bridge_rate(args.work_dir, args.bridge_messages, args.bridge_chats)
    print_report(report)
    args.out.mkdir(exist_ok=True)
    out = args.out / f"scale-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(report, indent=1))
    svg = args.plot or out.with_suffix(".svg")
    svg.write_text(plot(report))
    console.print(f"written: {out}, {svg}")


if __name__ == "__main__":
    main()
