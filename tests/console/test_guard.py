"""The console refuses what a hostile page would send it (Starlette's test client over the
real app, stores and SQLite): a foreign Host, another origin's form, a form without its
session's token, a proxy in front of a keyless console; its cookie is a session, never a
key; forget says its scope and never widens; pages come in pages."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from domain.scope import ChatScope
from groupmind.console.access import Access
from groupmind.console.app import Host, make_console
from groupmind.console.forgetting import in_process
from groupmind.settings import BotKey, Settings
from groupmind.wiring import Deployment, build_runtime
from stores.base import Persona, StoredMessage

KEY_A, KEY_B = "key-of-bot-a-0123456789", "key-of-bot-b-0123456789"
HOME = "http://127.0.0.1:8765"
LOCAL = ("127.0.0.1", 50000)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    data = tmp_path_factory.mktemp("console-guard")
    built = build_runtime(Settings(_env_file=None, data_dir=data), checkpoints=False)  # type: ignore[call-arg]
    yield built
    built.engine.dispose()


def console(
    runtime: Deployment, keys: tuple[BotKey, ...] = (), bound: str = "127.0.0.1", **kw: Any
) -> TestClient:
    access = Access(keys, open_bot="bot")
    host = Host(runtime=lambda: runtime, access=lambda: access,
                forget=in_process(runtime, lambda bot: None), bound=bound)  # type: ignore[arg-type,return-value]  # fmt: skip
    return TestClient(make_console(host), base_url=HOME, client=LOCAL, follow_redirects=False, **kw)


def keys() -> tuple[BotKey, ...]:
    return (
        BotKey.model_validate({"id": "bot-a", "api_key": KEY_A}),
        BotKey.model_validate({"id": "bot-b", "api_key": KEY_B, "platforms": ["lark"]}),
    )


def csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page's forms carry no token"
    return found.group(1)


def said(runtime: Deployment, bot: str, stream: str, n: int, user: str = "u1") -> None:
    scope = ChatScope.from_key(stream)
    for i in range(n):
        runtime.deps_for(bot).messages.add(StoredMessage(
            stream=stream, message_id=f"{stream}-{i}", platform=scope.platform,
            chat_type=scope.chat_type, chat_id=scope.chat_id, user_id=user, user_name="小明",
            content=f"第{i}条", timestamp=1_795_000_000.0 + i,
        ))  # fmt: skip


def test_a_foreign_host_is_refused_and_its_own_names_are_served(runtime: Deployment) -> None:
    local = console(runtime)
    assert local.get("/console/chats").status_code == 200
    assert local.get("/console/chats", headers={"host": "localhost:8765"}).status_code == 200
    for foreign in ("evil.example", "evil.example:8765", "10.1.2.3:8765", "127.0.0.1.nip.io"):
        refused = local.get("/console/chats", headers={"host": foreign})
        assert refused.status_code == 400, foreign
    assert local.get("/console/chats/", headers={"host": "evil.example"}).status_code == 400
    wide = console(runtime, keys(), bound="0.0.0.0")
    assert wide.get("/console/login", headers={"host": "10.1.2.3:8765"}).status_code == 200
    assert wide.get("/console/login", headers={"host": "rebind.evil:8765"}).status_code == 400


def test_every_console_answer_refuses_framing_and_sniffing(runtime: Deployment) -> None:
    for path in ("/console/chats", "/console/login", "/console/forget", "/metrics"):
        got = console(runtime).get(path)
        assert got.headers["x-frame-options"] == "DENY", path
        assert "frame-ancestors 'none'" in got.headers["content-security-policy"]
        assert got.headers["x-content-type-options"] == "nosniff"


def test_a_keyless_console_takes_forms_only_from_its_own_pages(runtime: Deployment) -> None:
    local = console(runtime)
    page = local.get("/console/personas")
    token = csrf(page.text)
    form = {"persona_id": "p1", "name": "原名", "csrf": token}
    assert local.post("/console/personas", data={**form, "csrf": ""}).status_code == 403
    assert local.post("/console/personas", data={**form, "csrf": "x" * 43}).status_code == 403
    for hostile in ({"origin": "http://evil.example"}, {"origin": "http://127.0.0.1:9999"},
                    {"origin": "null"}, {"sec-fetch-site": "same-site"},
                    {"sec-fetch-site": "cross-site"}, {"referer": "http://127.0.0.1:9999/x"}):  # fmt: skip
        assert local.post("/console/personas", data=form, headers=hostile).status_code == 403
    fresh = TestClient(local.app, base_url=HOME, client=LOCAL, follow_redirects=False)
    assert fresh.post("/console/personas", data=form).status_code == 403  # no session
    assert runtime.deps.personas.get_persona("p1") is None
    own = {"origin": HOME, "sec-fetch-site": "same-origin"}
    assert local.post("/console/personas", data=form, headers=own).status_code == 303
    assert runtime.deps.personas.get_persona("p1").name == "原名"  # type: ignore[union-attr]


def test_a_keyless_console_behind_a_proxy_answers_nobody(runtime: Deployment) -> None:
    local = console(runtime)
    for header in ("x-forwarded-for", "forwarded", "x-real-ip"):
        assert local.get("/console/chats", headers={header: "203.0.113.9"}).status_code == 401
    far = TestClient(local.app, base_url=HOME, client=("203.0.113.9", 1), follow_redirects=False)
    assert far.get("/console/chats").status_code == 401


def test_the_login_cookie_is_a_session_not_the_key(runtime: Deployment) -> None:
    keyed = console(runtime, keys(), bound="0.0.0.0")
    assert keyed.get("/console/chats").status_code == 401
    short = keyed.post("/console/login", data={"key": "not-a-key-of-anyone-000"})
    assert short.status_code == 401
    got = keyed.post("/console/login", data={"key": KEY_A})
    assert got.status_code == 303
    cookies = got.headers.get_list("set-cookie")
    assert all(KEY_A not in c for c in cookies)
    assert all(c.startswith('groupmind_key=""') for c in cookies if "groupmind_key" in c)
    cookie = next(c for c in cookies if c.startswith("groupmind_session="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=" in cookie
    page = keyed.get("/console/chats")
    assert page.status_code == 200 and '<b id="bot">bot-a</b>' in page.text
    session_id = keyed.cookies["groupmind_session"]
    stored = runtime.engine.raw_connection()
    try:
        rows = stored.cursor().execute("SELECT * FROM console_sessions").fetchall()
    finally:
        stored.close()
    assert all(session_id not in map(str, row) and KEY_A not in map(str, row) for row in rows)
    assert keyed.post("/console/logout", data={"csrf": csrf(page.text)}).status_code == 303
    again = TestClient(keyed.app, base_url=HOME, client=LOCAL, follow_redirects=False)
    again.cookies.set("groupmind_session", session_id)
    assert again.get("/console/chats").status_code == 401  # logged out is out


def test_a_session_ends_when_its_key_is_taken_away(runtime: Deployment) -> None:
    keyed = console(runtime, keys(), bound="0.0.0.0")
    keyed.post("/console/login", data={"key": KEY_A})
    session_id = keyed.cookies["groupmind_session"]
    rotated = (BotKey.model_validate({"id": "bot-a", "api_key": "a-new-key-of-bot-a-000"}),)
    later = console(runtime, rotated, bound="0.0.0.0")
    later.cookies.set("groupmind_session", session_id)
    assert later.get("/console/chats").status_code == 401


def test_a_notice_in_the_url_is_not_shown(runtime: Deployment) -> None:
    page = console(runtime).get("/console/chats?notice=%E4%BD%A0%E7%9A%84%E5%AF%86%E9%92%A5PWNED")
    assert "PWNED" not in page.text


@pytest.mark.parametrize("key", [" " * 16, "short-key", " " * 10 + "abcdefghij", "k" * 15 + " "])
def test_a_weak_key_is_refused_at_start(key: str) -> None:
    with pytest.raises(ValueError, match="key"):
        Settings(_env_file=None, bots=[{"id": "bot-a", "api_key": key}])  # type: ignore[call-arg]


def test_forget_refuses_a_chat_that_does_not_parse_and_says_its_scope(runtime: Deployment) -> None:
    said(runtime, "bot", "qq:group:2001", 2, user="u9")
    said(runtime, "bot", "qq:group:2002", 2, user="u9")
    local = console(runtime)
    page = local.get("/console/forget?user_id=u9&chat=qq:group:2001")
    assert 'value="u9"' not in page.text and 'value="qq:group:2001"' not in page.text
    token = csrf(page.text)
    bad = local.post("/console/forget", data={"csrf": token, "step": "erase", "confirm": "yes",
                                               "user_id": "u9", "chat": "group:2001"})  # fmt: skip
    assert bad.status_code == 200 and "chat: &#39;group:2001&#39; is not" in bad.text
    assert "removed" not in bad.text
    stores = runtime.deps.messages
    assert len(stores.older("qq:group:2001", "default", before_seq=None, limit=10)) == 2
    everywhere = local.post("/console/forget", data={"csrf": token, "step": "review",
                                                     "user_id": "u9", "platform": "qq"})  # fmt: skip
    chats = re.findall(r'<b class="chat">([^<]+)</b>', everywhere.text)
    assert chats == ["qq:group:2001", "qq:group:2002"] and "u9" in everywhere.text
    one = local.post("/console/forget", data={"csrf": token, "step": "review", "user_id": "u9",
                                              "chat": "qq:group:2001"})  # fmt: skip
    assert re.findall(r'<b class="chat">([^<]+)</b>', one.text) == ["qq:group:2001"]
    unconfirmed = local.post("/console/forget", data={"csrf": token, "step": "erase",
                                                      "user_id": "u9", "chat": "qq:group:2001"})  # fmt: skip
    assert "not confirmed" in unconfirmed.text
    done = local.post("/console/forget", data={"csrf": token, "step": "erase", "confirm": "yes",
                                                "user_id": "u9", "chat": "qq:group:2001"})  # fmt: skip
    assert 'id="removed"' in done.text
    assert stores.older("qq:group:2001", "default", before_seq=None, limit=10) == []
    assert len(stores.older("qq:group:2002", "default", before_seq=None, limit=10)) == 2


def test_editing_a_persona_keeps_its_opening_dialogue(runtime: Deployment) -> None:
    runtime.deps.personas.put_persona(
        Persona(persona_id="meow", name="阿喵", begin_dialogs=["你好", "喵～我是阿喵"])
    )
    local = console(runtime)
    page = local.get("/console/personas?edit=meow")
    assert "喵～我是阿喵" in page.text  # the form holds it
    form = {"csrf": csrf(page.text), "persona_id": "meow", "name": "阿喵二号", "aliases": "",
            "system_prompt": "你是一只猫。"}  # fmt: skip
    assert local.post("/console/personas", data=form).status_code == 303  # an older form
    kept = runtime.deps.personas.get_persona("meow")
    assert kept is not None and kept.name == "阿喵二号"
    assert kept.begin_dialogs == ["你好", "喵～我是阿喵"]
    form["opening"] = "在吗\n在的喵"
    local.post("/console/personas", data=form)
    assert runtime.deps.personas.get_persona("meow").begin_dialogs == ["在吗", "在的喵"]  # type: ignore[union-attr]


def test_a_bots_console_shows_its_own_personas_only(runtime: Deployment, tmp_path: Path) -> None:
    keyed = console(runtime, keys(), bound="0.0.0.0")
    runtime.deps_for("bot-a").personas.put_persona(
        Persona(persona_id="aa", name="A的人格", system_prompt="A的秘密提示")
    )
    keyed.post("/console/login", data={"key": KEY_B})
    page = keyed.get("/console/personas")
    assert "A的人格" not in page.text and "A的秘密提示" not in page.text
    form = {"csrf": csrf(page.text), "persona_id": "aa", "name": "B改的名字", "opening": ""}
    assert keyed.post("/console/personas", data=form).status_code == 303
    assert runtime.deps_for("bot-a").personas.get_persona("aa").name == "A的人格"  # type: ignore[union-attr]
    assert runtime.deps_for("bot-b").personas.get_persona("aa").name == "B改的名字"  # type: ignore[union-attr]


def test_a_key_sees_only_its_platforms(runtime: Deployment) -> None:
    said(runtime, "bot-b", "qq:group:3001", 1)
    said(runtime, "bot-b", "lark:group:3002", 1)
    keyed = console(runtime, keys(), bound="0.0.0.0", headers={"x-api-key": KEY_B})
    listed = keyed.get("/console/chats").text
    assert "lark:group:3002" in listed and "qq:group:3001" not in listed
    assert keyed.get("/console/chats/qq:group:3001").status_code == 403
    assert keyed.get("/console/memory?chat=qq:group:3001&q=x").status_code == 403
    assert keyed.get("/console/people?user_id=u1&platform=qq").status_code == 403
    review = keyed.post("/console/forget", data={"step": "review", "chat": "qq:group:3001"})
    assert "not one of bot &#39;bot-b&#39;" in review.text and "confirm-form" not in review.text


def test_chats_and_messages_come_in_pages_with_their_zone(runtime: Deployment) -> None:
    for n in range(120):
        said(runtime, "bot-p", f"qq:group:{9000 + n}", 1)
    said(runtime, "bot-p", "qq:group:8000", 130)
    access = Access((), open_bot="bot-p")
    host = Host(runtime=lambda: runtime, access=lambda: access,
                forget=in_process(runtime, lambda bot: None), bound="127.0.0.1")  # type: ignore[arg-type,return-value]  # fmt: skip
    keyed = TestClient(make_console(host), base_url=HOME, client=LOCAL)
    first = keyed.get("/console/chats").text
    assert first.count('<a href="/console/chats/') == 50 and "(121)" in first
    last = keyed.get("/console/chats?page=3").text
    assert last.count('<a href="/console/chats/') == 21
    chat = keyed.get("/console/chats/qq:group:8000?persona=default").text
    assert "第129条" in chat and "第79条" not in chat and "+0800" in chat
    older = re.search(r'id="older" href="([^"]+)"', chat)
    assert older is not None
    page2 = keyed.get(older.group(1).replace("&amp;", "&")).text
    assert "第79条" in page2 and "第30条" in page2 and "第80条" not in page2
    oldest = keyed.get(
        re.search(r'id="older" href="([^"]+)"', page2).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    ).text
    assert "第0条" in oldest and 'id="older"' not in oldest


def test_metrics_take_a_header_key_and_nothing_else(runtime: Deployment) -> None:
    keyed = console(runtime, keys(), bound="0.0.0.0")
    assert keyed.get("/metrics").status_code == 401
    got = keyed.get("/metrics", headers={"authorization": f"Bearer {KEY_A}"})
    assert got.status_code == 200 and 'bot="bot-a"' in got.text
    assert json.dumps(KEY_A) not in got.text
