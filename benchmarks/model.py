"""`llm` against `rules` on a real local model (the llama-server of `make model`, or any
OpenAI-compatible endpoint given with --url): memory jobs built from public dialogues
(MemoryBank, Chinese; LoCoMo, English) through the memory graph, and the bundled demo chat
through the reply graph.

Memory: gate pass rate (stored clean), degraded rate, what was stored when degraded,
profile merges parsed, tokens per job. Replies: plan parse rate (model plans that needed
no fallback), fallbacks, tool calls made and executed, tokens per reply. Latency per node,
p50 / p95.

    make bench-model
    make bench-model ARGS="--jobs 40 --url http://127.0.0.1:8080/v1 --model qwen2.5"
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from rich.console import Console
from rich.table import Table

from benchmarks.common import SHARED_DATA, NodeTimer, PrefixMeter, machine, pct
from benchmarks.locomo import conversation_jobs
from graphs.memory import build_memory_graph
from groupmind.chatting import reply_context, reply_to
from groupmind.session import open_session
from groupmind.settings import Settings
from nodes.reply.hand_off import reply_summary
from scripts import localmodel
from state.context import Context
from state.validation import InputError

console = Console(width=170)
MEMORY_NODES = ("rewrite", "quality_gate", "embed", "merge_profile")
REPLY_NODES = ("plan", "reply", "tools")


def memorybank_jobs(n: int) -> list[dict[str, Any]]:
    """Chinese exchanges: the user's words are new_info, the companion's reply the action."""
    data = json.loads((SHARED_DATA / "memorybank" / "cn" / "memory_bank_cn.json").read_text())
    jobs = []
    for name, person in data.items():
        for day, turns in sorted(person.get("history", {}).items()):
            for i, turn in enumerate(turns[:2]):
                jobs.append(
                    {
                        "request_id": f"mb:{name}:{day}:{i}", "user_id": f"mb-{name}",
                        "user_name": name, "new_info": turn["query"],
                        "action_summary": reply_summary(name, turn["response"][:200]),
                        "chat_type": "private", "persona_id": "default", "new_info_by": "user",
                        "timestamp": f"{day}T20:00:00+08:00",
                    }
                )  # fmt: skip
            break  # one day per person: more people, more variety
    return jobs[:n]


def locomo_jobs(n: int) -> list[dict[str, Any]]:
    data = json.loads((SHARED_DATA / "locomo" / "locomo10.json").read_text())
    tz = Settings(_env_file=None).tz  # type: ignore[call-arg]
    jobs = [job for conv in data[:3] for job in conversation_jobs(conv, tz)[5:60:7]]
    return jobs[:n]


@contextmanager
def endpoint(url: str | None) -> Iterator[str]:
    """The given endpoint, or the local llama-server started for the run."""
    if url:
        yield url
        return
    if not localmodel.check():
        raise SystemExit("no model: run `make model`, or pass --url")
    port = int(os.environ.get("GROUPMIND_MODEL_PORT", 8089))
    proc = subprocess.Popen(
        localmodel.serve_command(port, 4096, os.cpu_count() or 2, 1),
        env=localmodel.server_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        localmodel.wait_ready(f"http://127.0.0.1:{port}", proc)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def settings_for(data: Path, url: str, model: str) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=data, chat_model=model, chat_base_url=url, chat_api_key="local",
        chat_temperature=0.0, chat_timeout_s=180, chat_max_tokens=1024, chat_max_retries=0,
    )  # fmt: skip


def run_memory(settings: Settings, jobs: list[dict[str, Any]], arm: str) -> dict[str, Any]:
    session = open_session(settings)
    variants = {"rewrite": arm, "merge_profile": arm}
    graph = build_memory_graph(session.deps, checkpointer=InMemorySaver())
    timer = NodeTimer(MEMORY_NODES)
    outcomes, walls = [], []
    for n, job in enumerate(jobs, 1):
        config: Any = {"configurable": {"thread_id": job["request_id"]}, "callbacks": [timer]}
        started = time.perf_counter()
        try:
            out = graph.invoke(job, config, context=Context(variants=variants))
        except Exception as exc:  # noqa: BLE001 - a failed job is a figure too
            out = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        walls.append((time.perf_counter() - started) * 1000)
        outcomes.append(out)
        console.print(
            f"  {arm} job {n}/{len(jobs)}: {out.get('status')} {out.get('text', '')[:60]}",
            markup=False,
        )
    return {"outcomes": outcomes, "ms": timer.ms, "walls": walls}


def run_replay(settings: Settings, messages: list[dict[str, Any]], arm: str) -> dict[str, Any]:
    session = open_session(settings)
    graph = session.reply_graph()
    context = reply_context(
        session.deps, {"plan": arm, "reply": arm, "rewrite": "rules", "merge_profile": "rules"}
    )
    timer, meter = NodeTimer(REPLY_NODES), PrefixMeter(("plan", "reply"))
    outs = []
    for raw in messages:
        try:
            outs.append(reply_to(graph, session.deps, raw, context, callbacks=[timer, meter]))
        except InputError:  # the demo chat's deliberately bad line
            continue
        session.worker.drain()
        r = outs[-1]
        said = (r.get("reply") or "")[:60]
        console.print(f"  {arm} {r['message_id']}: {r['action']} {said}", markup=False)
    return {"outs": outs, "ms": timer.ms, "prefix": meter}


def again(message: dict[str, Any], k: int) -> dict[str, Any]:
    """The demo chat's message in its ``k``-th replay: its own ids, an hour later per round."""
    if k == 0:
        return message
    out = {**message, "message_id": f"{message.get('message_id')}-r{k}"}
    if message.get("reply_to"):
        out["reply_to"] = f"{message['reply_to']}-r{k}"
    if isinstance(message.get("timestamp"), str):
        when = datetime.fromisoformat(message["timestamp"])
        out["timestamp"] = (when + timedelta(hours=k)).isoformat()
    return out


def lat(ms: list[float]) -> str:
    return f"{pct(ms, 50) / 1000:.1f} / {pct(ms, 95) / 1000:.1f}" if ms else "–"


def memory_table(results: dict[str, dict[str, Any]]) -> Table:
    table = Table("memory", *results, title="memory jobs (rewrite + merge_profile)")
    rows: dict[str, list[str]] = defaultdict(list)
    for r in results.values():
        outs = r["outcomes"]
        status = Counter(o.get("status") for o in outs)
        n = len(outs)
        merged = Counter(
            "parsed" if o.get("profile") in ("updated", "duplicate") else "malformed"
            for o in outs
            if o.get("profile")
        )
        rules_kept = sum(
            1 for o in outs if "stored the rules rewrite" in " ".join(o.get("notes", []))
        )
        usage = [o.get("usage", {}) for o in outs]
        first = sum(1 for o in outs if o.get("status") == "stored" and o.get("attempts") == 1)
        rows["jobs"].append(str(n))
        rows["gate pass (stored clean)"].append(f"{status['stored'] / n:.0%} ({status['stored']})")
        rows["  on the first attempt"].append(f"{first / n:.0%} ({first})")
        rows["degraded"].append(f"{status['degraded'] / n:.0%} ({status['degraded']})")
        rows["the rules rewrite stood in (stored, passing)"].append(str(rules_kept))
        rows["failed"].append(str(status["failed"]))
        rows["profile merges parsed"].append(
            f"{merged['parsed']}/{sum(merged.values())}" if merged else "–"
        )
        rows["model calls per job"].append(f"{sum(u.get('calls', 0) for u in usage) / n:.1f}")
        rows["tokens per job (prompt / completion)"].append(
            f"{sum(u.get('prompt_tokens', 0) for u in usage) / n:.0f} / "
            f"{sum(u.get('completion_tokens', 0) for u in usage) / n:.0f}"
        )
        rows["job wall s p50 / p95"].append(lat(r["walls"]))
        for node in MEMORY_NODES:
            rows[f"{node} s p50 / p95"].append(lat(r["ms"].get(node, [])))
    for name, values in rows.items():
        table.add_row(name, *values)
    return table


def reply_table(results: dict[str, dict[str, Any]]) -> Table:
    table = Table("replay", *results, title="the demo chat (plan + reply)")
    rows: dict[str, list[str]] = defaultdict(list)
    for arm, r in results.items():
        outs = r["outs"]
        planned = [o for o in outs if o.get("usage", {}).get("nodes", {}).get("plan")]
        fallbacks = Counter(f["slot"] for o in outs for f in o.get("fallback", []))
        calls = [c for o in outs for c in o.get("tool_calls", [])]
        replies = [o for o in outs if o["action"] == "text_reply"]
        usage = [o.get("usage", {}) for o in replies]
        model_plans = len(planned) if arm == "llm" else 0
        rows["messages"].append(str(len(outs)))
        rows["actions (text / emoji / none)"].append(
            "/".join(str(sum(o["action"] == a for o in outs)) for a in ("text_reply", "emoji_reply", "no_reply"))
        )  # fmt: skip
        rows["plans by the model, parsed"].append(
            f"{model_plans - fallbacks['plan']}/{model_plans}" if model_plans else "–"
        )
        rows["fallbacks (plan / reply)"].append(f"{fallbacks['plan']} / {fallbacks['reply']}")
        rows["tool calls made / executed"].append(
            f"{len(calls)} / {sum(1 for c in calls if c.get('result'))}"
        )
        rows["tokens per reply (prompt / completion)"].append(
            f"{sum(u.get('prompt_tokens', 0) for u in usage) / max(1, len(usage)):.0f} / "
            f"{sum(u.get('completion_tokens', 0) for u in usage) / max(1, len(usage)):.0f}"
        )
        for node in REPLY_NODES:
            rows[f"{node} s p50 / p95"].append(lat(r["ms"].get(node, [])))
        meter: PrefixMeter = r["prefix"]
        for node in ("plan", "reply"):
            shares, same = meter.shares.get(node, []), meter.same_system.get(node, [])
            rows[f"{node}: identical prefix of the chat's previous request, p50 / min"].append(
                f"{pct(shares, 50):.0%} / {min(shares):.0%} ({len(shares)})" if shares else "–"
            )
            rows[f"{node}: system message unchanged"].append(
                f"{sum(same)}/{len(same)}" if same else "–"
            )
    for name, values in rows.items():
        table.add_row(name, *values)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=18, help="memory jobs (2/3 Chinese)")
    parser.add_argument("--url", help="an OpenAI-compatible base URL (default: make model's)")
    parser.add_argument("--model", default=localmodel.MODEL_NAME)
    parser.add_argument("--messages", type=int, default=15, help="of the demo chat")
    parser.add_argument("--replies-only", action="store_true", help="no memory jobs")
    parser.add_argument("--rounds", type=int, default=1,
                        help="replay the demo chat this many times, an hour apart")  # fmt: skip
    args = parser.parse_args()
    console.print(f"machine: {machine()}")
    chinese = (args.jobs * 2) // 3
    jobs = memorybank_jobs(chinese) + locomo_jobs(args.jobs - chinese)
    chat = resources.files("groupmind.demo_data").joinpath("chat.jsonl").read_text("utf-8")
    once = [json.loads(line) for line in chat.splitlines() if line.strip()][: args.messages]
    messages = [again(m, k) for k in range(args.rounds) for m in once]
    work = Path(tempfile.mkdtemp(prefix="bench-model-"))
    started = datetime.now()
    with endpoint(args.url) as url:
        console.print(f"model: {args.model} at {url}")
        memory, replies = {}, {}
        for arm in ("rules", "llm"):
            if not args.replies_only:
                settings = settings_for(work / f"memory-{arm}", url, args.model)
                memory[arm] = run_memory(settings, jobs, arm)
            settings = settings_for(work / f"reply-{arm}", url, args.model)
            replies[arm] = run_replay(settings, messages, arm)
    if memory:
        console.print(memory_table(memory))
    console.print(reply_table(replies))
    console.print(f"took {(datetime.now() - started).total_seconds() / 60:.1f} min")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
