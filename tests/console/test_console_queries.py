"""The console's chat page reads a page of messages with a fixed number of queries (not two
per message), and a chat's summary by its keys, the same as the overview's entry for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import event
from typer.testing import CliRunner

from domain.scope import ChatScope
from groupmind.cli import app
from groupmind.console import views
from groupmind.session import open_session
from groupmind.settings import Settings
from stores.sql.chats import chat_overview
from tests.graphs.reply_helpers import message

CHAT = ChatScope(platform="qq", chat_type="group", chat_id="1001")


def replayed(data: Path, count: int, chat_id: str = "1001") -> None:
    lines = data.parent / f"chat-{chat_id}.jsonl"
    said = [
        {**message(f"@bot 第{i}条：我喜欢{['咖啡', '爬山', '猫'][i % 3]}", mentions=["bot"],
                   user_id=f"u{i % 4}", user_name=f"人{i % 4}", chat_id=chat_id),
         "message_id": f"{chat_id}-{i}", "timestamp": 1_795_000_000 + 60 * i}
        for i in range(count)
    ]  # fmt: skip
    lines.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in said))
    out = CliRunner().invoke(app, ["--data-dir", str(data), "replay", str(lines), "--wait-memory"])
    assert out.exit_code == 0, out.output


def statements(engine: Any, work: Any) -> tuple[Any, int]:
    seen: list[str] = []

    def count(*args: Any) -> None:
        seen.append(args[2])

    event.listen(engine, "before_cursor_execute", count)
    try:
        return work(), len(seen)
    finally:
        event.remove(engine, "before_cursor_execute", count)


def test_a_chat_page_costs_the_same_queries_for_10_or_40_messages(tmp_path: Path) -> None:
    data = tmp_path / "data"
    replayed(data, 40)
    replayed(data, 3, chat_id="2002")  # another chat: not read for this one
    session = open_session(Settings(_env_file=None, data_dir=data), worker=False)  # type: ignore[call-arg]
    deps, engine = session.deps, session.runtime.engine
    small, few = statements(
        engine, lambda: views.chat_messages(deps, CHAT.key, "default", limit=10)
    )
    large, many = statements(
        engine, lambda: views.chat_messages(deps, CHAT.key, "default", limit=40)
    )
    assert len(small) == 10 and len(large) == 40
    used = [r for r in large if r["usage"] is not None]
    assert used and any(m for r in used for _, m in r["usage"]["memories"])  # memories named
    assert many == few <= 4, (few, many)
    one = chat_overview(engine, "bot", only=CHAT)
    every = {c.stream: c for c in chat_overview(engine, "bot")}
    assert set(every) == {CHAT.key, "qq:group:2002"}
    assert one == [every[CHAT.key]] and one[0].messages == 40
