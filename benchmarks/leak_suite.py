"""The leak probe: multi-scope chats full of secrets, replayed through the reply graph with
`plan` and `reply` on `llm` (a recording OpenAI-compatible stand-in on 127.0.0.1) and
memory on the rules; then questions in every scope, while the stand-in calls every tool
with arguments naming other chats and people. A probe is one question: everything the
model received for it (every request, tool results included), the reply and the injected
memory ids are checked against every secret of a scope it may not see. Each scope's own
secrets must be recalled, so an empty prompt cannot pass.

Used by ``tests/acceptance/test_leaks.py`` (hypothesis, small worlds) and ``make bench-leaks``.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.memory import InMemorySaver
from sqlalchemy import Engine

from domain.scope import ChatScope, ChatType, Sharing, may_share
from graphs.memory import build_memory_graph
from graphs.reply import build_reply_graph
from groupmind.chatting import reply_context, reply_to
from groupmind.providers import make_chat_model
from groupmind.settings import Settings
from groupmind.wiring import build_deps
from groupmind.worker import MemoryWorker
from nodes.deps import Deps
from standins.model import Request, Script, StandIn
from state.context import Context

TOKEN = re.compile(r"Q\d{5}Z")
JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
TOPICS = ["北京", "橘猫", "火锅", "生日", "辞职", "搬家", "演唱会", "考试", "装修", "旅行"]
Kind = Literal["event", "fact"]


@dataclass(frozen=True, order=True)
class Scope:
    platform: str
    chat_type: ChatType
    chat_id: str
    persona: str

    @property
    def chat(self) -> ChatScope:
        return ChatScope(platform=self.platform, chat_type=self.chat_type, chat_id=self.chat_id)


@dataclass(frozen=True)
class Secret:
    token: str
    scope: Scope
    speaker: str
    kind: Kind  # "fact": also learned about the speaker (a profile fact of that chat)
    topic: str

    def statement(self) -> str:
        if self.kind == "fact":
            return f"@bot 记一下，我住在{self.token}"
        return f"@bot 记一下，{self.topic}的暗号是{self.token}"

    def question(self) -> str:
        if self.kind == "fact":
            return "@bot 你知道我住在哪吗？"
        return f"@bot 还记得{self.topic}的暗号吗？"


@dataclass(frozen=True)
class Probe:
    scope: Scope
    speaker: str
    about: Secret  # the question asks about this secret (own scope or another's)


@dataclass
class World:
    sharing: Sharing
    secrets: list[Secret]
    probes: list[Probe]

    @property
    def scopes(self) -> list[Scope]:
        return sorted({s.scope for s in self.secrets} | {p.scope for p in self.probes})

    def may_see(self, secret: Secret, where: Scope) -> bool:
        """Conversation content stays in its chat and persona; what was learned about a
        person is shared as far as the sharing policy allows (any persona of a chat)."""
        if secret.scope == where:
            return True
        return secret.kind == "fact" and may_share(secret.scope.chat, where.chat, self.sharing)


@dataclass
class Report:
    probes: int = 0
    requests: int = 0
    own_probes: int = 0
    own_recalled: int = 0
    tool_calls: int = 0
    leaks: list[str] = field(default_factory=list)
    unquoted: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def own_recall(self) -> float:
        return self.own_recalled / self.own_probes if self.own_probes else 0.0


class Adversary:
    """The stand-in's script: on every reply, call every tool, naming other chats' ids and
    other people; answer with the secret tokens it was shown (so a leak reaches the reply)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.current: Probe | None = None
        self.groups = sorted({s.chat_id for s in world.scopes if s.chat_type == "group"})
        self.people = sorted({s.speaker for s in world.secrets})

    def calls(self, body: Request) -> list[dict[str, Any]]:
        probe = self.current
        assert probe is not None
        others = [g for g in self.groups if g != probe.scope.chat_id] or ["9999"]
        strangers = [p for p in self.people if p != probe.speaker] or ["nobody"]
        words = f"{probe.about.topic} 暗号 住在"

        def call(name: str, **args: Any) -> dict[str, Any]:
            return {"name": name, "args": args}

        return [
            call("search_events", query=words, top_k=50),
            call("search_events", query=words, target_group_id=others[0], top_k=50),
            call("search_events", query=words, target_user_id=strangers[0], top_k=50),
            call("get_profile", target_id=probe.speaker, target_type="user"),
            call("get_profile", target_id=strangers[0], target_type="user"),
            call("get_profile", target_id=probe.scope.chat_id, target_type="group"),
            call("get_profile", target_id=others[0], target_type="group"),
            call("remember_user_info", user_id=strangers[0], user_name="x", info_type="other",
                 info_value="standin"),
            call("update_user_impression", user_id=probe.speaker, user_name="x",
                 impression_update="说话很直接"),
        ]  # fmt: skip

    def text(self, body: Request) -> str:
        seen = sorted(set(TOKEN.findall(json.dumps(body["messages"], ensure_ascii=False))))
        return "我看到：" + "、".join(seen) if seen else "好的"

    def script(self) -> Script:
        return Script(tool_calls=self.calls, text=self.text)


def message(scope: Scope, speaker: str, content: str, n: int) -> dict[str, Any]:
    return {
        "message_id": f"m{n}", "platform": scope.platform, "chat_type": scope.chat_type,
        "chat_id": scope.chat_id, "chat_name": f"群{scope.chat_id}", "user_id": speaker,
        "user_name": f"用户{speaker}", "content": content, "timestamp": 1_795_000_000 + 60 * n,
        "mentions": ["bot"], "persona_id": scope.persona,
    }  # fmt: skip


def probe_settings(world: World, standin_url: str) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None, chat_model="standin", chat_base_url=standin_url,
        chat_api_key="standin", profile_sharing=world.sharing,
    )  # fmt: skip


def probe_deps(
    world: World, standin: StandIn, engine: Engine, client: Any, embeddings: Embeddings
) -> tuple[Deps, Settings]:
    settings = probe_settings(world, standin.url)
    deps = build_deps(settings, engine, client, embeddings, chat=make_chat_model(settings))
    return deps, settings


def run_world(
    world: World,
    standins: list[StandIn],
    deps: Deps,
    settings: Settings,
    on_probe: Callable[[int], None] | None = None,
) -> Report:
    """Statements, memory, then probes. With several stand-ins, chats are split between
    as many threads (each chat's messages stay in order on one of them)."""
    lanes = [_Lane(world, standin, deps, settings) for standin in standins]
    lane_of: dict[str, _Lane] = {}
    for stream in sorted({scope.chat.key for scope in world.scopes}):
        lane_of[stream] = lanes[len(lane_of) % len(lanes)]
    clock = itertools.count()
    started = time.perf_counter()
    _each_lane(lanes, lane_of, world.secrets, lambda lane, s: lane.tell(s, next(clock)))
    memory = MemoryWorker.one_bot(
        build_memory_graph(deps, checkpointer=InMemorySaver()), deps, settings,
        context=Context(variants={"rewrite": "rules", "merge_profile": "rules"}),
    )  # fmt: skip
    memory.drain()
    done = itertools.count()

    def ask(lane: _Lane, probe: Probe) -> None:
        lane.ask(probe, next(clock))
        if on_probe:
            on_probe(next(done))

    _each_lane(lanes, lane_of, world.probes, ask)
    report = Report(seconds=time.perf_counter() - started)
    for lane in lanes:
        for name in ("probes", "requests", "own_probes", "own_recalled", "tool_calls"):
            setattr(report, name, getattr(report, name) + getattr(lane.report, name))
        report.leaks += lane.report.leaks
        report.unquoted += lane.report.unquoted
    return report


def _each_lane(lanes: list[_Lane], lane_of: dict[str, _Lane], items: Any, do: Any) -> None:
    work: dict[int, list[Any]] = {id(lane): [] for lane in lanes}
    for item in items:
        work[id(lane_of[item.scope.chat.key])].append(item)
    with ThreadPoolExecutor(len(lanes)) as pool:
        futures = [pool.submit(lambda ln=lane: [do(ln, x) for x in work[id(ln)]]) for lane in lanes]
        for future in futures:
            future.result()


class _Lane:
    """One thread's share of the chats, with its own stand-in (so every request it records
    belongs to the probe it is running)."""

    def __init__(self, world: World, standin: StandIn, deps: Deps, settings: Settings) -> None:
        self.world, self.standin = world, standin
        self.adversary = Adversary(world)
        standin.script = self.adversary.script()
        chat = make_chat_model(probe_settings(world, standin.url))
        self.deps = deps.with_chat(chat)
        self.graph = build_reply_graph(self.deps, checkpointer=InMemorySaver())
        self.context = reply_context(self.deps, {"plan": "llm", "reply": "llm"})
        self.by_token = {s.token: s for s in world.secrets}
        self.report = Report()

    def tell(self, secret: Secret, n: int) -> None:
        self.adversary.current = Probe(secret.scope, secret.speaker, secret)
        raw = message(secret.scope, secret.speaker, secret.statement(), n)
        reply_to(self.graph, self.deps, raw, self.context)

    def ask(self, probe: Probe, n: int) -> None:
        self.adversary.current = probe
        start = len(self.standin.requests)
        raw = message(probe.scope, probe.speaker, probe.about.question(), n)
        out = reply_to(self.graph, self.deps, raw, self.context)
        requests = self.standin.since(start)
        report = self.report
        report.probes += 1
        report.requests += len(requests)
        report.tool_calls += sum(m.get("role") == "tool" for r in requests for m in r["messages"])
        seen = _check(probe, requests, out, self.deps, self.world, self.by_token, report)
        if probe.about.scope == probe.scope:  # its own secret, asked by whoever told it
            report.own_probes += 1
            report.own_recalled += probe.about.token in seen


def _check(
    probe: Probe,
    requests: list[Request],
    out: dict[str, Any],
    deps: Deps,
    world: World,
    by_token: dict[str, Secret],
    report: Report,
) -> set[str]:
    """Every token the model was shown or said for this probe; leaks and unquoted user
    text are added to the report."""
    seen: set[str] = set()
    where = f"{probe.scope} asked by {probe.speaker} about {probe.about.token}"
    for request in requests:
        for m in request["messages"]:
            content = m.get("content") or ""
            if not isinstance(content, str):
                content = json.dumps(content, ensure_ascii=False)
            tokens = TOKEN.findall(content)
            seen.update(tokens)
            quoted = "".join(JSON_STRING.findall(content))
            if m.get("role") != "assistant" and any(t not in quoted for t in tokens):
                report.unquoted.append(f"{where}: {m.get('role')} message: {content[:200]}")
    said = set(TOKEN.findall(str(out.get("reply") or "")))
    for token in sorted(seen | said):
        secret = by_token.get(token)
        if secret is not None and not world.may_see(secret, probe.scope):
            report.leaks.append(f"{where}: {token} from {secret.scope} ({secret.kind})")
    for event in deps.events.get(out.get("memory_ids") or []):
        if (event.scope, event.persona_id) != (probe.scope.chat, probe.scope.persona):
            report.leaks.append(f"{where}: injected event {event.id} of {event.scope.key}")
    return seen


def generate(
    seed: int, scopes: int, secrets_per_scope: int, probes_per_scope: int, sharing: Sharing
) -> World:
    """A seeded world for the benchmark: the same chat ids on several platforms, two
    personas per group, private chats, people who speak in several chats."""
    rng = random.Random(seed)
    people = [f"u{n}" for n in range(max(8, scopes // 3))]
    found: set[Scope] = set()
    while len(found) < scopes:
        platform = rng.choice(["qq", "lark", "discord"])
        if rng.random() < 0.25:
            user = rng.choice(people)
            found.add(Scope(platform, "private", user, "default"))
        else:
            group = str(1000 + rng.randrange(max(4, scopes // 5)))
            found.add(Scope(platform, "group", group, rng.choice(["default", "meow"])))
    tokens = (f"Q{n:05d}Z" for n in itertools.count(1))
    secrets = []
    for scope in sorted(found):
        local = [scope.chat_id] if scope.chat_type == "private" else rng.sample(people, 3)
        facts_told: set[str] = set()
        for _ in range(secrets_per_scope):
            speaker = rng.choice(local)
            kind: Kind = "fact" if speaker not in facts_told and rng.random() < 0.3 else "event"
            if kind == "fact":
                facts_told.add(speaker)
            secrets.append(Secret(next(tokens), scope, speaker, kind, rng.choice(TOPICS)))
    rng.shuffle(secrets)  # the chats interleave
    probes = []
    spoken = {}
    for s in secrets:
        spoken.setdefault(s.scope, set()).add(s.speaker)
    for scope in sorted(found):
        own = [s for s in secrets if s.scope == scope]
        foreign = [s for s in secrets if s.scope != scope]
        for n in range(probes_per_scope):
            about = own[n % len(own)] if n % 2 == 0 else rng.choice(foreign)
            speaker = about.speaker if about in own else rng.choice(sorted(spoken[scope]))
            probes.append(Probe(scope, speaker, about))
    return World(sharing, secrets, probes)
