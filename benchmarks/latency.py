"""Foreground latency of the reply graph at 1k, 10k and 200k stored events.

Each scale gets a fresh data dir filled with synthetic Chinese events spread over 50 group
chats (texts from a pool whose e5 vectors are computed once and cached; each event's vector
is its text's plus a little noise, so the index holds N distinct points). First the time
until the benchmark chat's vectors and postings are held in memory after its first search
(SQL and Chroma answer meanwhile). Then 200 messages that address the bot (so every node
runs, after 10 unmeasured ones and those sent before the arm's chat is held, timed apart)
go through the reply graph with its SQLite checkpointer, in five arms (see
ARMS; "not held": the store's own rule, exact over the chat's sealed vectors, or Chroma
for a chat large enough and enough of its shard (``HybridEventStore.exact_first``);
"Chroma search": every dense search in Chroma). Per-node times come from LangChain callbacks; "searchable" is the time from the end
of a reply to its memory job's event being found in the store. Then chats whose vectors
are not held, searched both ways (benchmarks/unheld.py); last, the server arms
(benchmarks/servers.py), one chat and then several at once.

    make bench-latency                              # 1k, 10k, 200k
    make bench-latency ARGS="--scales 1000 --messages 50"
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
import uuid
from collections import defaultdict
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from benchmarks.common import NodeTimer, machine, pct
from benchmarks.servers import concurrent_arm, server_arms
from benchmarks.unheld import print_unheld, unheld_searches
from graphs.reply import build_reply_graph
from groupmind.chatting import reply_context, reply_to
from groupmind.checkpoint import make_checkpointer
from groupmind.settings import Settings
from groupmind.wiring import build_runtime
from stores.base import EventQuery, EventRecord, Persona
from stores.hybrid import HybridEventStore

NODES = ("observe", "retrieve", "rank_context", "plan", "reply", "emoji", "hand_off")
USERS = ["小明", "阿强", "莉莉", "老王", "小红", "大刘", "阿杰", "小美"]
THINGS = ["去北京出差", "学 LangGraph 的检查点", "给橘猫打疫苗", "准备考研", "换了新工作", "搬家到杭州",
          "开始跑马拉松", "买了新显卡", "写毕业论文", "去日本旅行", "学做红烧肉", "装修新房子",
          "面试字节跳动", "养了一只柯基", "报名了吉他课", "修好了服务器的 bug", "参加朋友婚礼",
          "准备雅思考试", "研究 Rust 异步", "周末去爬山"]  # fmt: skip
console = Console()
# The memory worker off (as when `groupmind worker` runs in its own process against a
# Chroma server): with the chat's vectors held, and with Chroma answering every dense search
# (a chat not loaded yet, or over the memory budget). Then the in-process worker, yielding to
# replies, with the rule variants and with a stub chat model (plan and reply ``llm``,
# answering at once: the graph's own cost around a model). Messages come back to back.
ARMS = (
    "rules, memory elsewhere",
    "rules, not held",
    "rules, Chroma search",
    "rules",
    "stub model",
)
WARMUP = 10
FIRST_MAX = 300  # replies waited for a chat to be held, at most
RUN = uuid.uuid4().hex[:8]  # in message ids: a reused data dir has handled the last run's


class StubChat(BaseChatModel):
    """Answers at once: a plan (as a tool call) or a short reply. Measures the graph, not a model."""

    @property
    def _llm_type(self) -> str:
        return "stub"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if kw.get("tools") and kw["tools"][0]["function"]["name"] == "Plan":
            call = {
                "name": "Plan",
                "args": {"action": "text_reply", "reason": "stub"},
                "id": "1",
                "type": "tool_call",
            }
            return ChatResult(
                generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))]
            )
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content="好的，我记住了。"))]
        )

    def bind_tools(self, tools: Any, **kw: Any) -> Any:  # type: ignore[override]
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return self.bind(tools=[convert_to_openai_tool(t) for t in tools])


def pool(cache: Path, embeddings: Any, size: int = 2000) -> tuple[list[str], np.ndarray]:
    rng = random.Random(1)
    texts = [f"{rng.choice(USERS)}2026年{rng.randint(1, 12)}月{rng.randint(1, 28)}日{rng.choice(THINGS)}，"
             f"说{rng.choice(['很开心', '有点累', '挺顺利', '还在犹豫', '需要帮忙'])}" for _ in range(size)]  # fmt: skip
    path = cache / f"pool-{size}.npy"
    if path.exists():
        return texts, np.load(path)
    cache.mkdir(parents=True, exist_ok=True)
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("embedding the text pool (cached afterwards)", total=size)
        vectors = []
        for i in range(0, size, 64):
            vectors += embeddings.embed_documents(texts[i : i + 64])
            progress.advance(task, 64)
    np.save(path, np.asarray(vectors, dtype=np.float32))
    return texts, np.load(path)


def populate(runtime: Any, n: int, texts: list[str], vectors: np.ndarray, chats: int = 50) -> float:
    """``n`` events over ``chats`` group chats (1001, 1002, ...), round robin."""
    rng = np.random.default_rng(7)
    t0 = time.perf_counter()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(f"storing {n:,} events", total=n)
        for start in range(0, n, 2000):
            idx = np.arange(start, min(n, start + 2000))
            noisy = vectors[idx % len(texts)] + rng.normal(
                0, 0.01, (len(idx), vectors.shape[1])
            ).astype(np.float32)
            noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
            events = [
                EventRecord(id=f"ev{i}", text=texts[i % len(texts)], timestamp=1_790_000_000.0 + i, user_id=f"u{i % 8}",
                            user_name=USERS[i % 8], platform="qq", chat_type="group", chat_id=str(1001 + i % chats),
                            persona_id="default")
                for i in idx
            ]  # fmt: skip
            runtime.deps.events.upsert_many(events, noisy)
            progress.advance(task, len(idx))
    return time.perf_counter() - t0


def run_arm(
    runtime: Any, graph: Any, deps: Any, variants: dict[str, str], chat_id: str, count: int
) -> dict[str, Any]:
    """``count`` addressed messages in one of the populated chats (its own for each arm, so
    no arm reads another's messages); ``memories``: how many each run injected. After
    ``WARMUP`` unmeasured messages, those sent while the chat is still being read into
    memory in the background (its postings, and its vectors where the arm holds them: a
    20k chat at 1M takes seconds, once a process) are timed apart, as ``first``."""
    context = reply_context(deps, variants)
    timer = NodeTimer(NODES)
    rng = random.Random(3)

    def send(n: int) -> tuple[float, dict[str, Any]]:
        msg = {"message_id": f"{chat_id}-{RUN}-{n}", "platform": "qq", "chat_type": "group", "chat_id": chat_id,
               "chat_name": "技术交流群", "user_id": f"u{n % 8}", "user_name": USERS[n % 8],
               "content": f"@小爱 {rng.choice(USERS)}最近是不是在{rng.choice(THINGS)}？", "mentions": ["bot"],
               "timestamp": 1_795_000_000 + 30 * n}  # fmt: skip
        config: Any = {"configurable": {"thread_id": f"qq:group:{chat_id}"}, "callbacks": [timer]}
        t0 = time.perf_counter()
        out = graph.invoke({"message": msg}, config, context=context, durability="exit")
        return (time.perf_counter() - t0) * 1000, out

    for n in range(WARMUP):
        send(n)
    first: list[float] = []
    while not held(deps, chat_id) and len(first) < FIRST_MAX:
        first.append(send(WARMUP + len(first))[0])
    timer.ms = defaultdict(list)  # measured from here
    whole, memories = [], []
    for n in range(WARMUP + len(first), WARMUP + len(first) + count):
        ms, out = send(n)
        whole.append(ms)
        memories.append(len(out.get("memory_ids") or []))
    return {"whole": whole, "memories": memories, "first": first, **timer.ms}


def held(deps: Any, chat_id: str) -> bool:
    """The chat is held as the arm's store holds chats: its postings, and its vectors unless
    the store holds none."""
    query = EventQuery(
        text="", platform="qq", chat_type="group", chat_id=chat_id, persona_id="default"
    )
    events, postings = deps.events, deps.events.lexical.held
    if postings is not None and not postings.holds(
        (events.lexical.bot, query.scope, query.persona_id)
    ):
        return False
    vectors = events.held
    return vectors.budget == 0 or vectors.holds((events.bot, query.scope, query.persona_id))


def hold_seconds(deps: Any) -> float:
    """From the chat's first search to the chat held in memory (loaded in the background)."""
    query = EventQuery(
        text="预热", platform="qq", chat_type="group", chat_id="1001", persona_id="default"
    )
    t0 = time.perf_counter()
    deps.events.search(query)
    while not held(deps, query.chat_id) and time.perf_counter() - t0 < 120:
        time.sleep(0.01)
    return time.perf_counter() - t0


def searchable(runtime: Any, graph: Any, deps: Any, count: int) -> list[float]:
    context = reply_context(deps)
    waits = []
    for i in range(count):
        msg = {"message_id": f"s-{RUN}-{i}", "platform": "qq", "chat_type": "group", "chat_id": "1050",
               "user_id": "u1", "user_name": "阿强", "content": f"@小爱 我第{i}次说：周末去爬山", "mentions": ["bot"],
               "timestamp": 1_796_000_000 + 30 * i}  # fmt: skip
        out = reply_to(graph, deps, msg, context)
        t0 = time.perf_counter()
        while not deps.events.get(out["handed_off"]) and time.perf_counter() - t0 < 30:
            time.sleep(0.005)
        waits.append((time.perf_counter() - t0) * 1000)
    return waits


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scales", type=int, nargs="*", default=[1000, 10000, 200000])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--work-dir", type=Path, default=Path(".groupmind/bench-latency"))
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--searchable", type=int, default=30,
                        help="hand-offs timed until their memory is searchable")  # fmt: skip
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep a size's data dir once loaded (iterating; its chats keep "
        "the last run's messages, so quote figures from a fresh run)",
    )
    parser.add_argument("--server-messages", type=int, default=100,
                        help="SDK round trips per server arm (0: no server arm)")  # fmt: skip
    parser.add_argument("--server-clients", type=int, default=4,
                        help="chats sending at once to langhost, after the server arms "
                        "(--server-messages each; 0: none)")  # fmt: skip
    args = parser.parse_args()
    console.print(f"[bold]reply-graph latency[/bold] on {machine()}")
    report: dict[str, Any] = {"machine": machine(), "scales": {}}
    texts, vectors = None, None
    for n in args.scales:
        data_dir = args.work_dir / str(n)
        loaded = data_dir / "loaded.json"  # a finished load, reused with --reuse
        if not (args.reuse and loaded.exists()):
            shutil.rmtree(data_dir, ignore_errors=True)
        runtime = build_runtime(Settings(data_dir=data_dir))
        runtime.deps.personas.put_persona(Persona(persona_id="default", name="小爱"))
        if loaded.exists():
            load_s = float(json.loads(loaded.read_text())["load_s"])
        else:
            if texts is None:
                # texts repeat past the pool (a smoke run's few events need few)
                size = min(2000, max(args.scales))
                cache = args.work_dir.parent / "bench-cache"
                texts, vectors = pool(cache, runtime.embeddings, size)
            load_s = populate(runtime, n, texts, vectors)  # type: ignore[arg-type]
            loaded.write_text(json.dumps({"load_s": load_s}))
        hold_s = hold_seconds(runtime.deps)
        checkpointer = make_checkpointer(runtime.settings)
        arms: dict[str, Any] = {}
        stub = runtime.deps.with_chat(StubChat())
        events = runtime.deps.events
        cold = HybridEventStore(  # nothing held: a chat searched by exact_first's rule
            events.vector, events.lexical, bot=runtime.deps.limits.bot_id, max_vectors_held=0
        )
        not_held_deps = replace(runtime.deps, events=cold)
        unheld = replace(
            runtime.deps,
            events=HybridEventStore(
                events.vector,
                events.lexical,
                bot=runtime.deps.limits.bot_id,
                max_vectors_held=0,
                exact_max=0,  # every dense search in Chroma
            ),
        )
        for name, deps, variants, chat_id in (
            ("rules, memory elsewhere", runtime.deps, {}, "1001"),
            ("rules, not held", not_held_deps, {}, "1005"),
            ("rules, Chroma search", unheld, {}, "1002"),
            ("rules", runtime.deps, {}, "1003"),
            ("stub model", stub, {"plan": "llm", "reply": "llm"}, "1004"),
        ):
            if name in ARMS[3:]:  # the worker in this process
                runtime.start_background_worker().drain()
            graph = build_reply_graph(deps, checkpointer=checkpointer)
            arms[name] = run_arm(runtime, graph, deps, variants, chat_id, args.messages)
        graph = build_reply_graph(runtime.deps, checkpointer=checkpointer)
        runtime.background.drain()  # type: ignore[union-attr]
        arms["searchable"] = searchable(runtime, graph, runtime.deps, args.searchable)
        runtime.background.stop()  # type: ignore[union-attr]
        if texts is None:  # a reused data dir: the pool, for the added chats
            texts, vectors = pool(args.work_dir.parent / "bench-cache", runtime.embeddings,
                                  min(2000, max(args.scales)))  # fmt: skip
        not_held = unheld_searches(cold, texts, vectors, n)  # type: ignore[arg-type]
        report["scales"][n] = {"load_s": load_s, "hold_s": hold_s, **arms, "unheld": not_held}
        print_scale(n, load_s, hold_s, arms)
        print_unheld(console, n, not_held)
    if args.server_messages:
        report["servers"] = server_arms(args.server_messages)
        print_servers(report["servers"])
    if args.server_messages and args.server_clients > 0:
        report["concurrent"] = concurrent_arm(args.server_messages, args.server_clients)
        print_concurrent(report["concurrent"])
    args.out.mkdir(exist_ok=True)
    out = args.out / f"latency-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(report, indent=1))
    console.print(f"written: {out}")


def print_servers(servers: dict[str, Any]) -> None:
    table = Table("server", "messages", "round trip p50 (ms)", "p95 (ms)",
                  title="a reply through langgraph_sdk (rules variants), one chat")  # fmt: skip
    measured = {k: v for k, v in servers.items() if isinstance(v, list)}
    for name, value in servers.items():
        if isinstance(value, str):
            table.add_row(name, "–", value, "")
            continue
        table.add_row(name, str(len(value)), f"{pct(value, 50):.1f}", f"{pct(value, 95):.1f}")
    console.print(table)
    if len(measured) == 2:
        (a, dev), (b, pg) = measured.items()
        console.print(f"p50 ratio {a} / {b}: {pct(dev, 50) / pct(pg, 50):.2f}")


def print_concurrent(found: dict[str, Any]) -> None:
    if "skipped" in found:
        console.print(f"langhost, chats at once: skipped: {found['skipped']}")
        return
    console.print(
        f"langhost, {found['clients']} chats sending at once: round trip p50 "
        f"{pct(found['ms'], 50):.1f} ms, p95 {pct(found['ms'], 95):.1f} ms, "
        f"{found['runs_per_s']:.1f} runs/s, server CPU {found['server_cpu_ms_per_run']:.0f} ms a run"
    )


def print_scale(n: int, load_s: float, hold_s: float, arms: dict[str, Any]) -> None:
    table = Table(
        title=f"{n:,} stored events (loaded in {load_s:.0f} s; the first chat held "
        f"{hold_s:.2f} s after its first search) — ms, p50 / p95"
    )
    table.add_column("arm")
    for col in ("whole", *[x for x in NODES if x != "emoji"]):
        table.add_column(col, justify="right")
    for arm in ARMS:
        r = arms[arm]
        cells = [
            f"{pct(r.get(k, []), 50):.1f} / {pct(r.get(k, []), 95):.1f}"
            for k in ("whole", *NODES)
            if k != "emoji"
        ]
        table.add_row(arm, *cells)
    console.print(table)
    for arm in ARMS[:4]:
        r = arms[arm]
        for label, target in (("whole", 60), ("retrieve", 40), ("hand_off", 5)):
            p95 = pct(r[label], 95)
            ok = "[green]met[/]" if p95 <= target else "[red]MISSED[/]"
            console.print(f"  {arm}: {label} p95 {p95:.1f} ms (target ≤ {target}): {ok}")
    for arm in ARMS:
        first = arms[arm]["first"]
        if first:
            console.print(
                f"  {arm}: {len(first)} replies after the warm-up came before the chat was "
                f"held (timed apart): p50 {pct(first, 50):.1f} ms, p95 {pct(first, 95):.1f} ms"
            )
    for arm in ARMS:
        injected = sorted(arms[arm]["memories"])
        console.print(
            f"  {arm}: memories injected per reply, median {injected[len(injected) // 2]}"
        )
    s = arms["searchable"]
    ok = "[green]met[/]" if pct(s, 95) <= 2000 else "[red]MISSED[/]"
    console.print(
        f"  hand-off → searchable p50 {pct(s, 50):.0f} ms, p95 {pct(s, 95):.0f} ms (target ≤ 2000): {ok}"
    )


if __name__ == "__main__":
    main()
