"""Forget leaves nothing: after erasing a person, every file under the data dir (SQLite and
its logs, Chroma's database and index files, the checkpoints, and a LangGraph server's own
storage) is read byte by byte for what they said, raw and as JSON escapes; the group's
topics and summary are rebuilt without their words. In-process through the CLI, and on
`langgraph dev` through the forget graph."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from typer.testing import CliRunner

from domain.scope import ChatScope
from groupmind.cli import app
from groupmind.session import open_session
from groupmind.settings import Settings
from groupmind.threads import stream_thread_id
from stores.base import EventRecord
from stores.chroma import ChromaEventVectors
from stores.hybrid import HybridEventStore
from tests.graphs.reply_helpers import message
from tests.server.test_langgraph_dev import start
from tests.stores.old_rows import write_old_rows

U = {"user_id": "10001", "user_name": "小明"}  # the person to forget
B = {"user_id": "10002", "user_name": "阿强"}
# What 小明 says: tokens no one else says, so any trace of them is theirs.
SAID = ["ZQXJ7731", "QPWM4490", "猫头鹰咖啡馆", "KVBN5512", "QJZX8820"]
TOPIC = "冲浪板"  # said by 小明 and once by 阿强: a group topic, until 小明 is forgotten


def conversation() -> list[dict[str, Any]]:
    said = [
        message(f"@bot 我的暗号是 {SAID[0]}，我常去{SAID[2]}", mentions=["bot"], **U),
        message(f"收到，我也想买{TOPIC}", **B),  # 阿强 answers 小明
        message(f"@bot 我周末去买{TOPIC}，还有 {SAID[1]}", mentions=["bot"], **U),
        message("我觉得不错", **B),
        message(f"私下说：{SAID[3]} 是我的新密码", chat_type="private", chat_id=None, **U),
        message(f"@bot 再说一次 {SAID[1]} 和{TOPIC}", mentions=["bot"], **U),
        message("明天见", **B),
        message(f"阿强是{SAID[4]}工程师", **U),  # a fact about 阿强, told by 小明
        message("@bot 我是什么工程师", mentions=["bot"], **B),  # the answer quotes 小明
    ]
    # fixed ids and times: whether the bot answers a message is rolled on its id
    return [{**m, "message_id": f"scan-{i}", "timestamp": 1_795_000_000 + 60 * i}
            for i, m in enumerate(said)]  # fmt: skip


def forms(text: str) -> list[bytes]:
    """How a string can sit in a file: UTF-8, JSON's \\u escapes, UTF-16 (SQLite can)."""
    escaped = json.dumps(text)[1:-1].encode()
    return list({text.encode(), escaped, text.encode("utf-16-le")})


def traces(root: Path, strings: list[str]) -> dict[str, list[str]]:
    """Every file under ``root`` holding one of ``strings``, in any of its forms."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = [s for s in strings if any(f in data for f in forms(s))]
        if hits:
            found[str(path.relative_to(root))] = hits
    return found


def group_profile(data: Path, bot: str = "bot") -> Any:
    session = open_session(Settings(_env_file=None, data_dir=data), worker=False, bot=bot)  # type: ignore[call-arg]
    return session.deps.profiles.get_group("qq", "1001")


def told_about_qiang(data: Path) -> list[dict[str, str]]:
    """What the group learned of 阿强 from 小明's words."""
    session = open_session(Settings(_env_file=None, data_dir=data), worker=False)  # type: ignore[call-arg]
    scope = ChatScope(platform="qq", chat_type="group", chat_id="1001")
    learned = session.deps.profiles.get_learned(scope, B["user_id"])
    return [f for f in (learned.key_facts if learned else []) if f.get("by") == U["user_id"]]


def test_forget_leaves_nothing_on_disk_in_process(tmp_path: Path) -> None:
    data = tmp_path / "data"
    lines = tmp_path / "chat.jsonl"
    lines.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in conversation()))
    runner = CliRunner()
    replayed = runner.invoke(app, ["--data-dir", str(data), "replay", str(lines), "--json",
                                   "--wait-memory"])  # fmt: skip
    assert replayed.exit_code == 0, replayed.output
    before = traces(data, SAID)
    assert any("groupmind.db" in f for f in before)
    assert not any("chroma" in f for f in before)  # Chroma's rows carry no text
    group = group_profile(data)
    assert group is not None and TOPIC in group.traits["topics"]
    assert [(f["type"], f["value"]) for f in told_about_qiang(data)] == [
        ("job", f"{SAID[4]}工程师")
    ]

    erased = runner.invoke(app, ["--data-dir", str(data), "forget", "--user-id", "10001",
                                 "--yes", "--json"])  # fmt: skip
    assert erased.exit_code == 0, erased.output
    result = json.loads(erased.stdout)
    compacted = dict(result["compacted"])
    assert compacted.pop("history").endswith("threads pruned to their latest checkpoint")
    assert compacted == {"sql": "compacted", "checkpoints": "compacted",
                         "chroma": "log purged, compacted, index capacity zeroed"}  # fmt: skip
    assert result["removed"]["contexts_blanked"] >= 1 and result["removed"]["jobs_scrubbed"] >= 1
    assert traces(data, [*SAID, "小明"]) == {}
    assert told_about_qiang(data) == []
    group = group_profile(data)  # 阿强 alone said it once: his count, no topic any more
    assert group is not None and TOPIC not in group.traits["topics"] and TOPIC not in group.summary
    assert list(group.traits["_topics_by"]) == ["10002"]
    # 阿强's memory stays, his words without 小明's
    out = runner.invoke(app, ["--data-dir", str(data), "search", "明天见 不错", "--chat-type",
                              "group", "--chat-id", "1001", "--json"])  # fmt: skip
    assert out.exit_code == 0 and json.loads(out.stdout), out.output


def test_compact_leaves_no_words_in_chroma_rows_written_before_they_were_lean(
    tmp_path: Path,
) -> None:
    """A data dir from before: Chroma's rows hold the text and names. ``groupmind compact``
    rewrites them lean and purges Chroma's log; the memories are still found, from SQL."""
    data = tmp_path / "data"
    session = open_session(Settings(_env_file=None, data_dir=data), worker=False)  # type: ignore[call-arg]
    events = session.deps.events
    assert isinstance(events, HybridEventStore) and isinstance(events.vector, ChromaEventVectors)
    old = [
        EventRecord(
            id=f"old-{i}",
            text=f"小明说{word}",
            timestamp=1_795_000_000.0 + i,
            user_id=U["user_id"],
            user_name=U["user_name"],
            platform="qq",
            chat_type="group",
            chat_id="1001",
            persona_id="default",
        )  # fmt: skip
        for i, word in enumerate(SAID)
    ]
    write_old_rows(events.vector, old)
    events.lexical.upsert_many(old)
    assert any("chroma" in f for f in traces(data, SAID))
    runner = CliRunner()
    compacted = runner.invoke(app, ["--data-dir", str(data), "compact"])
    assert compacted.exit_code == 0, compacted.output
    assert f"chroma rows: {len(old)} made lean" in compacted.output
    left = traces(data, [*SAID, "小明"])
    assert not any("chroma" in f for f in left), left
    assert list(left) == ["groupmind.db"]  # the memories themselves, in SQL
    found = runner.invoke(app, ["--data-dir", str(data), "search", SAID[2], "--chat-type",
                                "group", "--chat-id", "1001", "--json"])  # fmt: skip
    assert found.exit_code == 0, found.output
    assert "old-2" in [hit["id"] for hit in json.loads(found.stdout)]


@pytest.mark.slow
def test_forget_leaves_nothing_on_disk_on_langgraph_dev(tmp_path: Path) -> None:
    """The server's storage (`.langgraph_api`) lives in the data dir: the forget graph
    deletes the threads that held the person's messages from inside the server, and their
    runs; once the server has written its storage again, nothing is left."""
    data = tmp_path / "data"
    data.mkdir()
    for url, _data, log in start(tmp_path, cwd=data):
        assert "outside the data dir" not in log.read_text()
        client = get_sync_client(url=url)
        context = {"variants": {"plan": "rules", "reply": "rules"}}
        for msg in conversation():
            stream = f"qq:{msg['chat_type']}:{msg['chat_id'] or msg['user_id']}"
            client.runs.wait(stream_thread_id(stream, "bot"), "reply", input={"message": msg},
                             context=context, if_not_exists="create")  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
            ".langgraph_api" in f for f in traces(data, SAID)
        ):
            time.sleep(1)  # the server writes its storage every 10 s
        assert any(".langgraph_api" in f for f in traces(data, SAID))
        time.sleep(3)  # the memory worker
        out = client.runs.wait(client.threads.create()["thread_id"], "forget",
                               input={"platform": "qq", "user_id": "10001"})  # fmt: skip
        assert out["removed"]["reply_threads"] == 2, out  # the group's rebuilt, the DM's gone
        assert out["compacted"]["sql"] == "compacted", out
        time.sleep(12)  # the server's next write of its storage
        assert traces(data, SAID) == {}
        # The group's thread goes on, rebuilt without them.
        group = client.threads.get_state(stream_thread_id("qq:group:1001", "bot"))["values"]
        assert group["stream"] == "qq:group:1001" and group["chat_state"] in ("CHAT", "FOCUSED")
        assert "小明" not in json.dumps(group, ensure_ascii=False)
    assert traces(data, SAID) == {}  # and after it stopped (its last write)


def test_a_forget_during_a_memory_batch_leaves_nothing_of_them_on_disk(tmp_path: Path) -> None:
    """``groupmind forget``'s work (erase, then compact) starts while a worker runs a
    chat's backlog as one batch, on the deployment's own files: the erase waits for the
    batch, whose memories are written after its last job, so nothing of the person lands
    after it, in SQL or in Chroma; then no file under the data dir holds their words. The
    other person's memory stays."""
    from groupmind.forget import forget
    from nodes.forget import validate_request
    from tests.graphs.helpers import job

    data = tmp_path / "data"
    session = open_session(Settings(_env_file=None, data_dir=data))  # type: ignore[call-arg]
    worker = session.worker
    said = [(U, f"我的暗号是 {SAID[0]}"), (B, "我周末去爬山"), (U, f"我常去{SAID[2]}")]
    for i, (who, text) in enumerate(said):
        worker.submit(job(f"s{i}", new_info=text, action_summary="", **who))
    request = validate_request({"platform": "qq", "user_id": U["user_id"]}, session.deps)
    erased: list[dict[str, Any]] = []

    def forget_and_compact() -> None:
        out = forget(session.runtime, "bot", session.reply_graph(), request, wait_s=30)
        erased.append({**out, "compacted": session.runtime.compact()})

    eraser = threading.Thread(target=forget_and_compact)

    def start_once() -> None:  # at the batch's first step
        worker.between_steps = None
        eraser.start()

    worker.between_steps = start_once
    outcomes = worker.run_batch()
    eraser.join(60)
    assert [o.request_id for o in outcomes] == ["s0", "s1", "s2"]  # one batch
    assert [o.status for o in outcomes] == ["stored"] * 3
    assert erased and erased[0]["still_running"] == [], erased
    assert erased[0]["removed"]["events"] == 2, erased
    assert traces(data, [SAID[0], SAID[2]]) == {}
    assert [e.id for e in session.deps.events.get(["s0", "s1", "s2"])] == ["s1"]
    vectors: Any = session.deps.events.vector  # type: ignore[attr-defined]
    assert set(vectors.vectors(["s0", "s1", "s2"])) == {"s1"}  # Chroma's rows: no text


def test_forget_reaches_the_exports_and_experiments_groupmind_made(tmp_path: Path) -> None:
    """``groupmind export`` into the data dir and beside it, and an experiment run on the
    export: after forget, the export inside is rewritten without them, the one outside is
    listed with the command that deletes it, the experiment's arm deployments are gone and
    its examples rewritten; then no file under the data dir holds their words."""
    data = tmp_path / "data"
    lines = tmp_path / "chat.jsonl"
    lines.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in conversation()))
    runner = CliRunner()

    def run(*args: str) -> Any:
        done = runner.invoke(app, ["--data-dir", str(data), *args])
        assert done.exit_code == 0, done.output
        return done

    run("replay", str(lines), "--wait-memory")
    inside, outside = data / "exports" / "g1.jsonl", tmp_path / "g1-copy.jsonl"
    inside.parent.mkdir(parents=True)
    for out in (inside, outside):
        run("export", "--chat-type", "group", "--chat-id", "1001", "--out", str(out))
    arms = ["--arm", "a:rank_context=weighted", "--arm", "b:rank_context=recent"]
    run("experiment", str(inside), "--mode", "rank", *arms, "--name", "mine", "--bootstrap",
        "100", "--local")  # fmt: skip
    experiment = data / "experiments" / "mine"
    assert (experiment / "arms").is_dir() and traces(experiment, SAID[:1])
    before = sum(1 for _ in inside.open())

    erased = run("forget", "--user-id", "10001", "--yes", "--json")
    copies = json.loads(erased.stdout)["copies"]
    assert copies["exports"][str(inside.resolve())] >= 3  # their lines, and lines naming them
    assert sum(1 for _ in inside.open()) == before - copies["exports"][str(inside.resolve())]
    assert copies["experiments"] == ["mine"] and not (experiment / "arms").exists()
    (elsewhere,) = copies["elsewhere"]
    assert elsewhere["path"] == str(outside.resolve()) and elsewhere["delete"].startswith("rm ")
    assert SAID[0] in outside.read_text()  # the operator's to delete: listed, not touched
    assert {f: s for f, s in traces(data, [*SAID, "小明"]).items() if not f.endswith(".bin")} == {}
    again = json.loads(run("forget", "--user-id", "10001", "--yes", "--json").stdout)["copies"]
    assert again["exports"] == {} and again["experiments"] == []
