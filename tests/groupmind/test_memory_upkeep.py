"""Decay through the public path: a reply that was given memories reinforces them, an
operator pins and prunes with `groupmind memory`, and the worker's pass keeps chats under
the cap, on a data dir replayed through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from domain.scope import ChatScope
from groupmind.cli import app
from groupmind.session import open_session
from groupmind.settings import Settings
from tests.acceptance.test_forget_scan import conversation
from tests.graphs.reply_helpers import message

G = ChatScope(platform="qq", chat_type="group", chat_id="1001")
CHATTER = [("小红", "哈哈哈"), ("小刚", "好的好的"), ("小李", "嗯嗯"), ("小王", "笑死")]
OLD_ENOUGH = {"GROUPMIND_DECAY__MIN_AGE_DAYS": "0"}  # the replayed chat is a week old


def chit_chat() -> list[dict[str, object]]:
    """The forget scan's conversation, then some chatter (what may fade first)."""
    said = [message(f"@bot {text}", mentions=["bot"], user_id=f"2000{i}", user_name=name)
            for i, (name, text) in enumerate(CHATTER)]  # fmt: skip
    return [*conversation(), *({**m, "message_id": f"chat-{i}", "timestamp": 1_795_001_000 + i}
                               for i, m in enumerate(said))]  # fmt: skip


def replayed(tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    data, lines = tmp_path / "data", tmp_path / "chat.jsonl"
    lines.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in chit_chat()))
    # one memory a reply: most memories of the chat are then never recalled
    done = CliRunner().invoke(app, ["--data-dir", str(data), "replay", str(lines), "--json",
                                    "--wait-memory"], env={"GROUPMIND_AUTO_TOP_K": "1"})  # fmt: skip
    assert done.exit_code == 0, done.output
    return data, [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_recalled_memories_are_reinforced_pinned_ones_kept_and_the_rest_pruned(
    tmp_path: Path,
) -> None:
    data, outcomes = replayed(tmp_path)
    used = [i for o in outcomes if o["action"] == "text_reply" for i in o["memory_ids"]]  # type: ignore[attr-defined]
    assert used, "the conversation's replies were given no memories"
    session = open_session(Settings(_env_file=None, data_dir=data), worker=False)  # type: ignore[call-arg]
    strength = session.deps.events.strength  # type: ignore[attr-defined]
    before = strength.in_chat(G)
    assert {i for i, s in before.items() if s.recalls} == set(used)
    assert all(before[i].recalls == used.count(i) for i in used)

    runner = CliRunner()
    weak = sorted(i for i, s in before.items() if not s.recalls and s.importance < 0.5)
    assert len(weak) >= 2, before  # one to pin, one to go
    pinned = weak[0]
    cli = ["--data-dir", str(data), "memory"]
    assert runner.invoke(app, [*cli, "pin", pinned]).exit_code == 0
    missing = runner.invoke(app, [*cli, "pin", "no-such-memory"])
    assert missing.exit_code == 1 and "no-such-memory" in missing.stderr
    no_cap = runner.invoke(app, [*cli, "prune"])
    assert no_cap.exit_code == 2 and "DECAY__CAP" in no_cap.stderr
    pruned = runner.invoke(app, [*cli, "prune", "--cap", "1", "--json"], env=OLD_ENOUGH)
    assert pruned.exit_code == 0, pruned.output
    after = strength.in_chat(G)
    gone = set(before) - set(after)
    assert json.loads(pruned.stdout) == {G.key: len(gone)}
    assert gone == set(weak) - {pinned}  # pinned, recalled and important ones stay


def test_the_worker_prunes_the_chats_of_its_bots_beyond_the_cap(tmp_path: Path) -> None:
    data, _ = replayed(tmp_path)
    capped = Settings(_env_file=None, data_dir=data, decay={"cap": 1, "min_age_days": 0})  # type: ignore[call-arg]
    session = open_session(capped)
    before = session.deps.events.count(G)
    done = session.worker.prune()
    assert done and done["bot"][G.key] >= 1
    assert session.deps.events.count(G) == before - done["bot"][G.key]
    assert session.worker.prune() == {}  # what is left may not go
