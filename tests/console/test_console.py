"""The console in a real headless Chromium (Debian's ``chromium``, driven by Playwright; no
browser is downloaded): ``groupmind console`` serving two bots' keys beyond loopback, over a
replayed chat of bot A's. Screenshots go to ``GROUPMIND_CONSOLE_SHOTS`` (docs/console/ is
made with it) or the test's own directory."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from domain.scope import ChatScope
from standins.onebot import SELF_ID, Implementation
from standins.serving import free_port
from stores.sql import SqlJobQueue
from tests.acceptance.test_forget_scan import traces
from tests.conftest import CHROMIUM
from tests.groupmind.test_cli import cli_on
from tests.groupmind.test_experiment_cli import context_dataset

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None and not os.environ.get("GROUPMIND_REQUIRE_SERVICES"),
        reason="Debian's chromium is not installed (apt-get install chromium)",
    ),
]
ROOT = Path(__file__).resolve().parents[2]
KEY_A, KEY_B = "console-key-of-a-0123456789", "console-key-of-b-0123456789"
BOTS = [{"id": "bot-a", "api_key": KEY_A}, {"id": "bot-b", "api_key": KEY_B}]
SAID = [
    ("10001", "小明", "大家早，我下周三要去北京出差", []),
    ("10002", "阿强", "去几天？记得带伞", []),
    ("10001", "小明", "@小爱 我下周三去北京出差，有什么推荐的吗", ["bot-a"]),
    ("10002", "阿强", "我最近在学 LangGraph 的检查点", []),
    ("10002", "阿强", "@小爱 你知道小明去哪出差吗", ["bot-a"]),
    ("10003", "莉莉", "我养了一只暹罗猫叫芝麻糊", []),
]
CHAT = [
    {"message_id": f"m{n}", "platform": "qq", "chat_type": "group", "chat_id": "1001",
     "chat_name": "技术交流群", "user_id": uid, "user_name": name, "content": text,
     "timestamp": 1_795_000_000 + 60 * n, "mentions": mentions}
    for n, (uid, name, text, mentions) in enumerate(SAID)
]  # fmt: skip


def fetch(url: str, key: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"x-api-key": key} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("console")
    data = tmp / "data"
    env = {**os.environ, "GROUPMIND_DATA_DIR": str(data), "GROUPMIND_BOTS": json.dumps(BOTS)}
    cli = cli_on(data)
    chat = tmp / "chat.jsonl"
    chat.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in CHAT), encoding="utf-8")
    assert cli("--bot", "bot-a", "persona", "set", "default", "--name", "小爱").exit_code == 0
    replayed = cli("--bot", "bot-a", "replay", str(chat), "--wait-memory")
    assert replayed.exit_code == 0, replayed.output
    known = tmp / "mofox.jsonl"  # what the bot knew of 小明 before (groupmind import mofox)
    known.write_text(json.dumps({"user_id": "10001", "user_name": "小明", "relationship_score": 0.65,
                                 "relationship_stage": "friend", "impression_text": "小明是后端程序员，说话直爽。",
                                 "key_facts": [{"type": "job", "value": "腾讯后端程序员"}]},
                                ensure_ascii=False), encoding="utf-8")  # fmt: skip
    imported = cli("--bot", "bot-a", "import", "mofox", str(known), "--chat", "group:1001")
    assert imported.exit_code == 0, imported.output
    arms = ["--arm", "weighted:rank_context=weighted", "--arm", "recent:rank_context=recent"]
    ran = cli("--bot", "bot-a", "experiment", str(context_dataset(tmp / "d.jsonl")), "--mode",
              "rank", *arms, "--name", "ctx", "--bootstrap", "200", "--local")  # fmt: skip
    assert ran.exit_code == 0, ran.output
    queue = SqlJobQueue(create_engine(f"sqlite:///{data / 'groupmind.db'}"), bot="bot-a")
    job = {"request_id": "broken-1", "platform": "qq", "chat_type": "group", "chat_id": "1001",
           "user_id": "10001", "user_name": "小明", "new_info": "我明天去上海",
           "action_summary": "", "timestamp": "2026-11-16T10:05:00+08:00"}  # fmt: skip
    queue.enqueue(
        "broken-1",
        job,
        scope=ChatScope(platform="qq", chat_type="group", chat_id="1001"),
        user_id="10001",
    )
    queue.fail("broken-1", "ConnectionError: model endpoint gone", retry_at=None)
    bridge_port, port = free_port(), free_port()
    bridge = subprocess.Popen(
        [sys.executable, "-m", "groupmind.cli", "onebot", "--port", str(bridge_port),
         "--access-token", "onebot-token"],
        env={**env, "GROUPMIND_DATA_DIR": str(tmp / "bridge"), "GROUPMIND_BOT_ID": "bot-a"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    account = linked(f"ws://127.0.0.1:{bridge_port}/onebot/v11/ws", "onebot-token")
    env["GROUPMIND_BRIDGES"] = json.dumps([f"http://127.0.0.1:{bridge_port}"])
    cmd = [sys.executable, "-m", "groupmind.cli", "console", "--host", "0.0.0.0",
           "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if fetch(f"{url}/console/login")[0] == 200:
                break
        except OSError:
            pass
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        time.sleep(0.1)
    yield url, tmp
    proc.terminate()
    proc.wait(timeout=20)
    account.set()
    bridge.terminate()
    bridge.wait(timeout=20)


def linked(ws_url: str, token: str) -> threading.Event:
    """A OneBot account (the stand-in) connected to the bridge until the event is set."""
    done, up = threading.Event(), threading.Event()

    async def hold() -> None:
        impl = Implementation()
        for _ in range(300):
            try:
                await impl.dial(ws_url, token)
                break
            except OSError:
                await asyncio.sleep(0.1)
        up.set()
        while not done.is_set():
            await asyncio.sleep(0.1)
        await impl.hang_up()

    threading.Thread(target=asyncio.run, args=(hold(),), daemon=True).start()
    assert up.wait(60)
    return done


def shots(tmp: Path) -> Path:
    out = Path(os.environ.get("GROUPMIND_CONSOLE_SHOTS") or tmp / "shots")
    out.mkdir(parents=True, exist_ok=True)
    return out


def login(browser: Any, url: str, key: str) -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/console/login")
    page.fill("#key", key)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/console/chats")
    return page


def test_every_page_renders_with_a_replayed_chat(console: tuple[str, Path], browser: Any) -> None:
    url, tmp = console
    out = shots(tmp)
    page = login(browser, url, KEY_A)
    assert page.inner_text("#bot") == "bot-a"
    assert "qq:group:1001" in page.inner_text("#chats")
    page.screenshot(path=str(out / "chats.png"), full_page=True)

    page.click("text=qq:group:1001")
    page.goto(f"{url}/console/chats/qq:group:1001?persona=default")
    rows = page.inner_text("#messages")
    assert "小明" in rows and "北京出差" in rows
    assert page.locator(".action").count() > 0  # what the plan decided, from the usage records
    page.screenshot(path=str(out / "chat.png"), full_page=True)

    page.goto(f"{url}/console/people?user_id=10001&chat=qq:group:1001")
    assert "小明" in page.inner_text("#relationship")
    learned = page.inner_text(".learned")
    assert "qq:group:1001" in learned and "imported" in learned  # with its provenance
    assert "腾讯后端程序员" in learned and "小明是后端程序员" in learned
    page.screenshot(path=str(out / "people.png"), full_page=True)

    page.goto(f"{url}/console/personas")
    assert "qq:group:1001" in page.inner_text("#personas")  # the chat it serves
    form = page.locator("#persona-form")
    form.locator("[name=persona_id]").fill("meow")
    form.locator("[name=name]").fill("阿喵")
    form.locator("[name=aliases]").fill("喵喵, 猫猫")
    form.locator("button").click()
    page.wait_for_selector("#notice")
    assert "阿喵" in page.inner_text("#personas") and "喵喵、猫猫" in page.inner_text("#personas")
    page.screenshot(path=str(out / "personas.png"), full_page=True)

    page.goto(f"{url}/console/status")
    assert str(SELF_ID) in page.inner_text("#bridges .connected")  # the bridge's own account
    assert int(page.inner_text("#messages")) == len(CHAT)
    assert int(page.inner_text("#replies")) >= 2  # the two that addressed the bot
    page.screenshot(path=str(out / "status.png"), full_page=True)

    page.goto(f"{url}/console/experiments")
    report = page.inner_text(".experiment")
    assert "ctx" in report and "context_R@1" in report and "recent" in report
    plot = page.locator(".experiment img")
    assert plot.evaluate("img => img.complete && img.naturalWidth > 0")  # the SVG loaded
    page.screenshot(path=str(out / "experiments.png"), full_page=True)

    page.goto(f"{url}/console/forget")
    page.screenshot(path=str(out / "forget.png"), full_page=True)
    page.goto(f"{url}/console/chats?lang=en")
    assert "Chats" in page.inner_text("header")
    page.close()


def test_search_finds_a_memory_and_forget_removes_it(
    console: tuple[str, Path], browser: Any
) -> None:
    url, tmp = console
    page = login(browser, url, KEY_A)
    page.goto(f"{url}/console/memory?chat=qq:group:1001")
    page.fill("#q", "小明 北京 出差")
    page.click("#search button")
    hits = page.inner_text("#hits")
    assert "北京" in hits
    page.screenshot(path=str(shots(tmp) / "memory.png"), full_page=True)
    first = page.locator("#hits tr").nth(1)
    text = first.locator("td").first.inner_text().splitlines()[0]
    first.locator("button.forget").click()
    page.wait_for_selector("#notice")
    assert page.inner_text("#notice").endswith("1")
    assert text not in page.inner_text("#hits")  # gone from the same search
    page.close()


def test_retry_requeues_a_failed_job(console: tuple[str, Path], browser: Any) -> None:
    url, tmp = console
    page = login(browser, url, KEY_A)
    page.goto(f"{url}/console/jobs?status=failed")
    assert "model endpoint gone" in page.inner_text("#jobs")
    page.screenshot(path=str(shots(tmp) / "jobs.png"), full_page=True)
    page.click("button.retry")
    page.wait_for_selector("#notice")
    assert "queued: broken-1" in page.inner_text("#notice")
    page.goto(f"{url}/console/jobs?status=queued")
    assert "broken-1" in page.inner_text("#jobs")
    page.close()


def test_no_key_is_refused_and_bot_b_sees_nothing_of_a(
    console: tuple[str, Path], browser: Any
) -> None:
    url, _ = console
    page = browser.new_page()
    response = page.goto(f"{url}/console/chats")
    assert response.status == 401 and page.locator("#key").count() == 1  # the login form
    page.fill("#key", "not-a-key-of-anyone-000")
    page.click("button[type=submit]")
    assert page.locator("#refused").count() == 1
    page.close()
    assert fetch(f"{url}/metrics")[0] == 401

    b = login(browser, url, KEY_B)
    assert b.inner_text("#bot") == "bot-b"
    assert "qq:group:1001" not in b.inner_text("#chats")
    b.goto(f"{url}/console/memory?chat=qq:group:1001&q=北京")
    assert "北京" not in b.inner_text("#hits")
    b.goto(f"{url}/console/people?user_id=10001")
    assert b.locator("#relationship").count() == 0
    b.goto(f"{url}/console/jobs")
    assert "broken-1" not in b.inner_text("#jobs")
    b.goto(f"{url}/console/experiments")
    assert b.locator(".experiment").count() == 0
    assert b.goto(f"{url}/console/experiments/ctx/plot.svg").status == 404
    b.close()
    b = login(browser, url, KEY_B)
    b.goto(f"{url}/console/status")
    bridges = b.inner_text("#bridges")
    assert str(SELF_ID) not in bridges and "HTTP 401" in bridges  # A's bridge does not answer B
    b.close()
    status, body = fetch(f"{url}/metrics", KEY_B)
    assert status == 200 and 'groupmind_messages_total{bot="bot-b"} 0.0' in body


def test_metrics_count_the_replayed_chat(console: tuple[str, Path]) -> None:
    url, _ = console
    status, body = fetch(f"{url}/metrics", KEY_A)
    assert status == 200 and f'groupmind_messages_total{{bot="bot-a"}} {float(len(CHAT))}' in body
    assert 'groupmind_replies_total{bot="bot-a"}' in body and "groupmind_memories" in body


def test_a_console_beyond_loopback_without_keys_will_not_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GROUPMIND_BOTS"}
    env["GROUPMIND_DATA_DIR"] = str(tmp_path / "data")
    cmd = [sys.executable, "-m", "groupmind.cli", "console", "--host", "0.0.0.0", "--port", "1"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "needs a key" in done.stderr


def test_forget_a_person_in_a_chat_after_a_confirmation(
    console: tuple[str, Path], browser: Any
) -> None:
    url, tmp = console
    page = login(browser, url, KEY_A)
    said = ["暹罗猫", "芝麻糊"]  # only 莉莉 (10003) said them (the experiment's demo chat neither)
    assert traces(tmp / "data", said)  # in the stores before

    def ask(confirm: bool) -> None:
        page.goto(f"{url}/console/forget")
        form = page.locator("#forget-form")
        form.locator("[name=user_id]").fill("10003")
        form.locator("[name=chat]").fill("qq:group:1001")
        form.locator("button").click()
        scope = page.inner_text("#scope")  # exactly what goes, before anything goes
        assert "10003" in scope and "qq:group:1001" in scope and "莉莉" in scope
        if confirm:
            page.check("#confirm")
        page.locator("#confirm-form button").click()

    ask(confirm=False)
    assert "not confirmed" in page.inner_text("#error")  # nothing without the confirmation
    page.goto(f"{url}/console/memory?chat=qq:group:1001&q=暹罗猫")
    assert "暹罗猫" in page.inner_text("#hits")
    ask(confirm=True)
    removed = page.inner_text("#removed")
    page.screenshot(path=str(shots(tmp) / "forgotten.png"), full_page=True)
    counts = dict(line.split("\t") for line in removed.splitlines()[1:])
    assert int(counts["events"]) >= 1 and int(counts["messages"]) >= 1
    page.goto(f"{url}/console/memory?chat=qq:group:1001&q=暹罗猫")
    assert "暹罗猫" not in page.inner_text("#hits")
    page.close()
    # every file of the data dir read byte by byte: their words are gone from the disk too
    assert traces(tmp / "data", said) == {}
