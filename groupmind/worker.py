"""Runs memory jobs from the durable queue through the memory graph.

Each job is one graph run on thread = request id. A job that calls a model is checkpointed
at every step (``durability="sync"``), so a process killed mid-run resumes at the step that
did not finish; a job on the rule baselines only when it stops (``JOB_STEP_CHECKPOINTS``:
on PostgreSQL a step's checkpoint is ~1 ms of the worker's CPU), and, unless
``KEEP_CHECKPOINTS``, only when it fails: a done job's checkpoints would be pruned. A
model, embedding or Chroma error leaves the job queued with its error and a retry time
(exponential backoff); after ``job_max_attempts`` it is marked ``failed`` and kept for an
operator.

Leases are short and renewed by a heartbeat while a job runs, so the job of a worker that
died is taken up again within a lease. When the queue itself is unreachable (the database
is down), ``serve`` backs off and tries again; it never exits for it.

One worker serves every bot: it takes the next due job of any bot and runs it through that
bot's own memory graph (its stores), on a checkpoint thread of that bot's. A rules job
comes with up to ``JOB_BATCH - 1`` more due jobs of its chat (``run_batch``): they run in
order and their memories are written in one go after the last, each job done only then.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Durability

from groupmind.leases import LeaseKeeper
from groupmind.settings import Settings
from nodes.deps import Deps, need
from nodes.memory.intake import validate_job
from nodes.reply.hand_off import enqueue
from nodes.variants import UnknownVariant, memory_arms
from state.context import Context
from state.memory import MemoryJob
from state.slots import SLOTS, graph_slots
from state.validation import InputError
from stores.base import JobQueue, JobRow, job_thread_id

log = logging.getLogger("groupmind.worker")
Graph = CompiledStateGraph[Any, Any, Any, Any]


def lower_priority(nice: int) -> None:
    """Raise the niceness of every thread of this process to at least ``nice``, never
    lower it (an operator's ``nice -n 15`` stays). On Linux niceness is a thread's: threads
    already running (numpy's BLAS pool starts at import) are set one by one, and threads
    started later inherit the caller's. Where the kernel groups by session (autogroup) and
    this process leads its own session, as a supervisor such as honcho starts each process,
    the niceness of threads only orders them among themselves: the session's group gets it."""
    tasks = Path("/proc/self/task")
    for tid in [int(t) for t in os.listdir(tasks)] if tasks.exists() else [0]:
        try:
            if nice > os.getpriority(os.PRIO_PROCESS, tid):
                os.setpriority(os.PRIO_PROCESS, tid, nice)
        except ProcessLookupError:  # that thread ended meanwhile
            pass
    group = Path("/proc/self/autogroup")  # "/autogroup-42 nice 0"
    if os.getsid(0) == os.getpid() and group.exists():
        try:
            if nice > int(group.read_text().split()[-1]):
                group.write_text(str(nice))
        except (OSError, ValueError):  # not allowed here, or not Linux's format
            log.warning("could not lower the CPU priority of this session's group")


def on_baselines(chosen: dict[str, str]) -> bool:
    """Every slot runs its baseline (the rules): no model is called, nothing is paid twice."""
    return all(variant == SLOTS[slot].baseline for slot, variant in chosen.items())


@dataclass
class Outcome:
    request_id: str
    status: Literal["stored", "degraded", "failed"]
    text: str = ""
    attempts: int = 0
    profile: str = ""
    offending: list[str] | None = None  # the relative words the gate found last
    reasons: list[str] | None = None  # why the gate did not pass the stored text
    written_by: str | None = None  # what wrote the stored text (a variant, or "raw")
    notes: list[str] | None = None  # how it came to be stored (a fallback)
    usage: dict[str, Any] | None = None  # model tokens (and cost) per node and in all
    variants: dict[str, str] | None = None  # the variant that ran in each slot
    error: str | None = None
    retry_at: float | None = None  # failed but queued again

    def as_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v not in (None, "")}
        out.setdefault("text", self.text)
        out.setdefault("attempts", self.attempts)
        return out


@dataclass
class _Steps:
    """A run's stream as it goes: the state after its last finished step, and that step."""

    values: dict[str, Any] = field(default_factory=dict)
    last: str | None = None

    def see(self, mode: str, chunk: Any) -> None:
        if mode == "values":
            self.values = chunk
        elif chunk:  # {node: its update}
            self.last = next(iter(chunk))


@dataclass
class _Run:
    """A claimed job as it runs: its bot's queue and graph, its thread, and how it runs."""

    row: JobRow
    bot: str
    jobs: JobQueue
    graph: Graph
    config: Any
    durability: Durability
    bare: bool  # without a checkpointer: a failure saves its resume point by hand
    saved: bool  # its thread holds a checkpoint (pruned when it is done)
    resume: bool  # it resumes at a step left unfinished
    steps: _Steps = field(default_factory=_Steps)

    @property
    def unchecked(self) -> bool:
        """It runs without its checkpointer (a resume runs on it): nothing of it is saved
        while it runs, so its memory may be written after it, in a batch's one write."""
        return self.bare and not self.resume


class Tenants(Protocol):
    """Each bot's stores and memory graph (``groupmind.wiring.Deployment``)."""

    def deps_for(self, bot: str) -> Deps: ...
    def memory_graph(self, bot: str) -> CompiledStateGraph[Any, Any, Any, Any]: ...


class JobBoard(Protocol):
    """Every bot's jobs (``stores.sql.SqlJobBoard``)."""

    def queue(self, bot: str) -> JobQueue: ...
    def claim(self, worker: str, *, lease_s: float) -> JobRow | None: ...
    def counts(self) -> dict[str, int]: ...
    def list(self, status: Any = None, limit: int = 50) -> list[JobRow]: ...


@dataclass
class OneBot:
    """One bot's stores and memory graph, for a worker that serves only that bot."""

    deps: Deps
    graph: CompiledStateGraph[Any, Any, Any, Any]

    def deps_for(self, bot: str) -> Deps:
        if bot != self.deps.limits.bot_id:
            raise KeyError(f"bot {bot!r}: this worker serves bot {self.deps.limits.bot_id!r} only")
        return self.deps

    def memory_graph(self, bot: str) -> CompiledStateGraph[Any, Any, Any, Any]:
        self.deps_for(bot)
        return self.graph


class MemoryWorker:
    @classmethod
    def one_bot(
        cls,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        deps: Deps,
        settings: Settings,
        **options: Any,
    ) -> MemoryWorker:
        """A worker of one bot's jobs only (its queue is ``deps.jobs``)."""
        jobs: Any = need(deps.jobs, "jobs")
        return cls(OneBot(deps, graph), jobs, settings, bot=deps.limits.bot_id, **options)

    def __init__(
        self,
        tenants: Tenants,
        board: JobBoard,
        settings: Settings,
        *,
        bot: str,
        context: Context | None = None,
        worker_id: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.tenants = tenants
        # Called after each step of a job's graph: the in-process worker (BackgroundWorker)
        # waits there while a reply is in flight, so a reply meets one step of a job at most.
        self.between_steps: Callable[[], None] | None = None
        self.board = board
        self.bot = bot  # whose jobs ``submit`` queues and ``run_next(request_id)`` takes
        self.deps = deps = tenants.deps_for(bot)
        self.jobs = board.queue(bot)
        self.settings = settings
        base = context or Context()
        # Resolve every slot's variant once, so the run metadata names the exact arm.
        self.context = replace(base, variants=memory_arms(base.variants, None, deps))
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        self.leases = LeaseKeeper(self.worker_id, settings.job_lease_s)
        self.clock = clock
        self._bare_graphs: dict[str, Graph] = {}
        self.bots = {bot}  # whose chats ``prune`` keeps under the cap: ours, and whose jobs ran

    def submit(self, raw: dict[str, Any]) -> MemoryJob:
        """Validate and queue a job; raises InputError (nothing queued) for a bad one. A job
        that names no variants is queued with this worker's."""
        if not isinstance(raw, dict):
            raise InputError("job", f"must be a JSON object, got {type(raw).__name__}")
        job = validate_job(raw, self.deps)
        self.deps.allow([job.platform])
        unknown = sorted(set(job.variants) - set(graph_slots("memory")))
        if unknown:
            raise InputError("job", f"variants: {unknown[0]!r} is not a memory-graph slot")
        try:
            variants = memory_arms(self.context.variants, job.variants, self.deps)
        except UnknownVariant as exc:
            raise InputError("job", str(exc)) from None
        job = job.model_copy(update={"variants": variants})
        enqueue(self.deps, [job])
        return job

    @property
    def graph(self) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The memory graph of this worker's own bot."""
        return self.tenants.memory_graph(self.bot)

    def run_next(self, request_id: str | None = None) -> Outcome | None:
        """The next due job of any bot; with ``request_id``, that job of this worker's bot."""
        lease = self.settings.job_lease_s
        if request_id is None:
            row = self.board.claim(self.worker_id, lease_s=lease)
        else:
            row = self.jobs.claim(self.worker_id, lease_s=lease, request_id=request_id)
        return None if row is None else self.run(row)

    def run_batch(self) -> list[Outcome]:
        """The next due job of any bot, and, when it runs on the rule baselines, up to
        ``JOB_BATCH - 1`` more due jobs of its chat, run in order: their memories are
        written in one go after the last (``MemoryStore.deferred``), and the jobs are done,
        in one transaction, only once they are. A chat's backlog so costs one embedding
        call, one Chroma upsert and one SQL write for the batch; with no backlog, a batch
        is one job."""
        row = self.board.claim(self.worker_id, lease_s=self.settings.job_lease_s)
        if row is None:
            return []
        plan = self._plan(row)
        if isinstance(plan, Outcome):
            return [plan]
        if not plan.unchecked or self.settings.job_batch == 1:
            return [self._run(plan)]
        more = plan.jobs.claim_more(
            self.worker_id,
            lease_s=self.settings.job_lease_s,
            after=row.request_id,
            limit=self.settings.job_batch - 1,
        )
        outcomes: list[Outcome] = []
        batch = [plan]
        for extra in map(self._plan, more):
            if isinstance(extra, Outcome):
                outcomes.append(extra)
            elif extra.unchecked:
                batch.append(extra)
            else:  # the chat's order holds: what came before it is written first
                outcomes += self._together(batch) + [self._run(extra)]
                batch = []
        return outcomes + self._together(batch)

    def run(self, row: JobRow) -> Outcome:
        plan = self._plan(row)
        return plan if isinstance(plan, Outcome) else self._run(plan)

    def _plan(self, row: JobRow) -> _Run | Outcome:
        """How a claimed job runs: its bot's queue and graph, its thread, and whether it
        resumes; an Outcome when this worker cannot run it, or cannot read its thread."""
        bot = row.bot_id or self.bot
        self.bots.add(bot)
        jobs, graph = self.board.queue(bot), self.tenants.memory_graph(bot)
        # The graph runs the job's own variants (graphs/memory.py); the metadata says so.
        own = row.payload.get("variants") or {}
        try:
            chosen = memory_arms(self.context.variants, own, self.tenants.deps_for(bot))
        except UnknownVariant as exc:  # not transient: retrying here cannot help
            return self._unrunnable(jobs, row, exc)
        config: Any = {
            "configurable": {"thread_id": job_thread_id(bot, row.request_id)},
            "run_name": "memory",
            "metadata": {
                "bot_id": bot,
                "request_id": row.request_id,
                "variants": chosen,
            },
        }
        durability: Durability = "sync"
        if self.settings.job_step_checkpoints == "model" and on_baselines(chosen):
            durability = "exit"  # a kill -9 runs it again whole: idempotent, milliseconds
        # A run that stopped mid-way (error or kill -9) resumes at the unfinished step; a
        # thread left by an earlier submission of the job is pruned when it is done.
        try:
            found = graph.get_state(config)
        except Exception as exc:  # noqa: BLE001 - the checkpointer is down: retried later
            return self._failed(jobs, row, exc)
        return _Run(
            row=row,
            bot=bot,
            jobs=jobs,
            graph=graph,
            config=config,
            durability=durability,
            # A rules job whose checkpoints would be pruned when it is done writes none
            # while it runs: only a failure saves its resume point; on PostgreSQL that
            # saves statements and the worker's CPU on every job (docs/benchmarks/constants.md).
            bare=durability == "exit" and not self.settings.keep_checkpoints,
            saved=found.created_at is not None,
            resume=bool(found.next),
        )

    def _run(self, plan: _Run) -> Outcome:
        try:
            with self.leases.hold(plan.jobs, plan.row.request_id):
                self._stream(plan)
        except InputError as exc:  # the job itself is refused (or NotAllowed): no retry helps
            return self._refused(plan, exc)
        except Exception as exc:  # noqa: BLE001 - any failure is recorded on the job
            self._save_resume_point(plan)
            return self._failed(plan.jobs, plan.row, exc)
        return self._done(plan)

    def _together(self, batch: list[_Run]) -> list[Outcome]:
        """Rules jobs of one chat, in order, their memories written after the last. A job
        that failed is given its resume point once they are written; if they cannot be,
        none is stored and every job of the batch runs again from its start."""
        if not batch:
            return []
        events = self.tenants.deps_for(batch[0].bot).events
        outcomes: list[Outcome] = []
        ran: list[tuple[_Run, Exception | None]] = []
        with ExitStack() as held:
            for plan in batch:
                held.enter_context(self.leases.hold(plan.jobs, plan.row.request_id))
            with events.deferred() as pending:
                for plan in batch:
                    try:
                        self._stream(plan)
                    except InputError as exc:
                        outcomes.append(self._refused(plan, exc))
                        continue
                    except Exception as exc:  # noqa: BLE001 - recorded on the job below
                        ran.append((plan, exc))
                        continue
                    ran.append((plan, None))
            try:
                if pending:
                    events.upsert_many(pending)
            except Exception as exc:  # noqa: BLE001 - each runs again; the writes are idempotent
                return outcomes + [self._failed(plan.jobs, plan.row, exc) for plan, _ in ran]
        done = self._all_done([plan for plan, error in ran if error is None])
        by_id = {outcome.request_id: outcome for outcome in done}
        for plan, error in ran:  # in the batch's order
            if error is None:
                outcomes.append(by_id[plan.row.request_id])
            else:
                self._save_resume_point(plan)
                outcomes.append(self._failed(plan.jobs, plan.row, error))
        return outcomes

    def _stream(self, plan: _Run) -> None:
        runner = self._bare(plan.bot, plan.graph) if plan.unchecked else plan.graph
        for mode, chunk in runner.stream(
            None if plan.resume else plan.row.payload,
            plan.config,
            context=self.context,
            durability=plan.durability if runner is plan.graph else None,
            stream_mode=["updates", "values"],
        ):
            plan.steps.see(mode, chunk)
            if mode == "values" and self.between_steps is not None:
                self.between_steps()

    def _refused(self, plan: _Run, exc: InputError) -> Outcome:
        plan.jobs.fail(plan.row.request_id, str(exc), retry_at=None)
        return Outcome(plan.row.request_id, "failed", error=str(exc), attempts=plan.row.attempts)

    def _done(self, plan: _Run) -> Outcome:
        return self._all_done([plan])[0]

    def _all_done(self, plans: list[_Run]) -> list[Outcome]:
        """A batch's jobs done in one SQL transaction (they are one bot's)."""
        outcomes = [self._outcome(plan) for plan in plans]
        if plans:
            plans[0].jobs.complete_many({o.request_id: o.as_json() for o in outcomes})
        for plan in plans:
            self._prune(plan)
        return outcomes

    @staticmethod
    def _outcome(plan: _Run) -> Outcome:
        out = plan.steps.values
        return Outcome(
            request_id=plan.row.request_id,
            status=out.get("status", "stored"),
            text=out.get("text", ""),
            attempts=out.get("attempts", 0),
            profile=out.get("profile", ""),
            offending=out.get("offending") or None,
            reasons=out.get("reasons") or None,
            written_by=out.get("written_by") or None,
            notes=out.get("notes") or None,
            usage=out.get("usage") or None,
            variants=out.get("variants") or None,
        )

    def _prune(self, plan: _Run) -> None:
        keep = self.settings.keep_checkpoints or not plan.graph.checkpointer
        if (plan.saved or not plan.bare) and not keep:
            # The outcome is durable in the queue; the run's steps are only needed to resume.
            try:
                plan.graph.checkpointer.delete_thread(  # type: ignore[union-attr]
                    plan.config["configurable"]["thread_id"]
                )
            except Exception:  # noqa: BLE001 - a leftover checkpoint is harmless
                log.warning(
                    "could not prune the checkpoints of %s", plan.row.request_id, exc_info=True
                )

    def _bare(self, bot: str, graph: Graph) -> Graph:
        """The bot's memory graph without its checkpointer (made once a bot)."""
        if (bare := self._bare_graphs.get(bot)) is None:
            bare = self._bare_graphs.setdefault(bot, graph.copy({"checkpointer": None}))
        return bare

    def _save_resume_point(self, plan: _Run) -> None:
        """What a bare run checkpointed at its end would have saved on failing: the state
        after its last finished step, so the retry resumes at the step that failed."""
        saver, steps = plan.graph.checkpointer, plan.steps
        if not plan.unchecked:
            return  # it ran on its checkpointer, which saved it
        if steps.last is None or not isinstance(saver, BaseCheckpointSaver):
            return  # the first step failed: the retry starts over, as it would resume
        try:
            # the saved state is this run's alone, not merged into an earlier submission's
            saver.delete_thread(plan.config["configurable"]["thread_id"])
            plan.graph.update_state(plan.config, steps.values, as_node=steps.last)
        except Exception:  # noqa: BLE001 - then the retry runs it from the start
            log.warning("could not save the resume point of a memory job", exc_info=True)

    def _unrunnable(self, jobs: JobQueue, row: JobRow, exc: UnknownVariant) -> Outcome:
        """``JOB_UNRUNNABLE``: give the job back for a worker that can run it, or fail it."""
        reason = f"this worker cannot run it: {exc}"
        if self.settings.job_unrunnable == "fail":
            jobs.fail(row.request_id, reason, retry_at=None)
            log.warning("memory job %s failed: %s", row.request_id, reason)
            return Outcome(row.request_id, "failed", error=reason, attempts=row.attempts)
        until = self.clock() + self.settings.job_unrunnable_wait_s
        jobs.defer(row.request_id, reason, until=until)
        log.info("memory job %s waits for another worker: %s", row.request_id, reason)
        return Outcome(
            row.request_id, "failed", error=reason, retry_at=until, attempts=row.attempts - 1
        )

    def _failed(self, jobs: JobQueue, row: JobRow, exc: Exception) -> Outcome:
        error = f"{type(exc).__name__}: {exc}"
        retry_at = None
        if row.attempts < self.settings.job_max_attempts:
            delay = min(
                self.settings.job_backoff_base_s * 2 ** (row.attempts - 1),
                self.settings.job_backoff_max_s,
            )
            retry_at = self.clock() + delay * random.uniform(0.8, 1.2)  # jitter
        jobs.fail(row.request_id, error, retry_at=retry_at)
        log.warning("memory job %s failed (attempt %d): %s", row.request_id, row.attempts, error)
        return Outcome(
            row.request_id, "failed", error=error, retry_at=retry_at, attempts=row.attempts
        )

    def drain(self, on_done: Callable[[Outcome], None] | None = None) -> list[Outcome]:
        """Run every job that is due now, ``worker_threads`` at a time, then return."""
        done: list[Outcome] = []
        lock, halt = threading.Lock(), threading.Event()

        def loop() -> None:
            while not halt.is_set() and (outcomes := self.run_batch()):
                with lock:
                    done.extend(outcomes)
                    for outcome in outcomes:
                        if on_done:
                            on_done(outcome)

        self._on_threads(loop, halt)
        return done

    def _on_threads(self, loop: Callable[[], None], halt: threading.Event) -> None:
        """``loop`` on this thread and ``worker_threads - 1`` more; returns when all end.
        An error on a helper thread is raised here, after the others end; an interrupt
        here sets ``halt`` and waits for the helpers' jobs to end."""
        errors: list[BaseException] = []

        def helper() -> None:
            try:
                loop()
            except BaseException as exc:  # noqa: BLE001 - raised on the calling thread
                errors.append(exc)

        helpers = [
            threading.Thread(target=helper, name=f"memory-worker-{i}", daemon=True)
            for i in range(1, self.settings.worker_threads)
        ]
        for thread in helpers:
            thread.start()
        try:
            loop()
        except BaseException:
            halt.set()
            raise
        finally:
            for thread in helpers:
                thread.join()
        if errors:
            raise errors[0]

    def prune(self) -> dict[str, dict[str, int]]:
        """The decay pass (stores/decay.py): every chat of the bots this worker serves,
        beyond ``DECAY__CAP``, loses its weakest prunable memories. Per bot and chat, how
        many went."""
        done: dict[str, dict[str, int]] = {}
        for bot in sorted(self.bots):
            pruned = self.tenants.deps_for(bot).events.prune(now=self.clock())
            if pruned:
                log.info("prune %s: %s", bot, pruned)
                done[bot] = pruned
        return done

    def serve(
        self, stop: threading.Event, poll_s: float = 1.0, max_backoff_s: float = 30.0
    ) -> None:
        """Poll the queue until ``stop`` is set (``groupmind worker``), on
        ``worker_threads`` threads, and prune every ``DECAY__INTERVAL_S`` when a cap is set.
        A lost database, Chroma or model never ends it: it logs, waits (doubling, up to
        ``max_backoff_s``) and tries again; the job it held is taken up again when its lease
        runs out. Interrupted, each thread ends its job first."""
        first = threading.get_ident()

        def loop() -> None:
            self._poll(stop, poll_s, max_backoff_s, prunes=threading.get_ident() == first)

        self._on_threads(loop, stop)

    def _poll(
        self, stop: threading.Event, poll_s: float, max_backoff_s: float, *, prunes: bool
    ) -> None:
        backoff = 0.0
        decay = self.settings.decay
        next_prune = time.monotonic() if decay.cap and prunes else float("inf")
        while not stop.is_set():
            try:
                if time.monotonic() >= next_prune:
                    self.prune()
                    next_prune = time.monotonic() + decay.interval_s
                ran = bool(self.run_batch())
            except Exception as exc:  # noqa: BLE001 - a dependency is down: wait, retry
                backoff = min(max_backoff_s, max(poll_s, backoff * 2))
                log.warning(
                    "memory worker: %s: %s; retrying in %.0f s", type(exc).__name__, exc, backoff
                )
                stop.wait(backoff)
                continue
            if backoff:
                log.warning("memory worker: reconnected")
                backoff = 0.0
            if not ran:
                stop.wait(poll_s)
