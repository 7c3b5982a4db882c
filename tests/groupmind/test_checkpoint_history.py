"""A reply thread gains a checkpoint per message: its history is pruned to the latest
every REPLY_HISTORY messages (and by ``groupmind compact``), and the chat goes on."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groupmind.cli import app
from groupmind.threads import stream_thread_id
from tests.graphs.reply_helpers import message


def checkpoints(data: Path) -> dict[str, int]:
    with sqlite3.connect(data / "checkpoints.db") as conn:
        rows = conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id")
        return dict(rows.fetchall())


def replay(data: Path, tmp_path: Path, msgs: list[dict[str, object]]) -> list[dict[str, object]]:
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in msgs), encoding="utf-8")
    result = CliRunner().invoke(app, ["--data-dir", str(data), "replay", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_history_is_pruned_every_n_messages_and_the_chat_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUPMIND_REPLY_HISTORY", "10")
    data = tmp_path / "data"
    msgs = [message(f"第{i}句：今天天气不错", message_id=f"m{i}") for i in range(24)]
    msgs[23] = message("@bot 还记得刚才说的吗", message_id="m23", mentions=["bot"])
    out = replay(data, tmp_path, msgs)
    thread = stream_thread_id("qq:group:1001", "bot")
    # pruned after the 10th and 20th message: the latest, then one per message since
    assert 1 < checkpoints(data)[thread] <= 5
    assert out[-1]["action"] == "text_reply"
    assert "m22" in out[-1]["context_ids"]  # the thread's buffer survived the pruning
    again = replay(data, tmp_path, [msgs[5]])  # a redelivery is still known as handled
    assert again[0]["reason"].startswith("already handled")


def test_history_kept_whole_with_0_and_compact_prunes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUPMIND_REPLY_HISTORY", "0")
    data = tmp_path / "data"
    replay(data, tmp_path, [message(f"第{i}句", message_id=f"m{i}") for i in range(12)])
    thread = stream_thread_id("qq:group:1001", "bot")
    assert checkpoints(data)[thread] == 12
    result = CliRunner().invoke(app, ["--data-dir", str(data), "compact"])
    assert result.exit_code == 0, result.output
    assert "pruned to their latest checkpoint" in result.output
    assert checkpoints(data)[thread] == 1
    out = replay(data, tmp_path, [message("@bot 在吗", message_id="m12", mentions=["bot"])])
    assert out[0]["action"] == "text_reply" and "m11" in out[0]["context_ids"]
