"""Personas an operator configures: the file, the CLI, which persona serves a chat,
aliases that wake the bot, display names in memories and prompts."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from domain.scope import ChatScope
from groupmind.cli import app
from nodes.deps import Deps
from stores.base import Persona
from stores.personas_file import FilePersonaStore, PersonaFileError
from tests.graphs.reply_helpers import Chat, message
from tests.groupmind.test_cli import lines, write_jsonl
from tests.helpers.fakes import FakeChat

XIAOAI = Persona(persona_id="xiaoai", name="小爱", aliases=["爱爱", "xiaoai"],
                 system_prompt="你是技术交流群里热心的助手小爱。", begin_dialogs=["你好", "你好呀"])  # fmt: skip
MEOW = Persona(persona_id="meow", name="阿喵", system_prompt="你是一只猫娘。")
CATS = ChatScope(platform="qq", chat_type="group", chat_id="2002")


def configured(deps: Deps) -> FilePersonaStore:
    store = deps.personas
    assert isinstance(store, FilePersonaStore)
    store.put_persona(XIAOAI)
    store.put_persona(MEOW)
    store.use("xiaoai")
    store.use("meow", CATS)
    return store


def test_the_chat_picks_the_persona_unless_the_message_names_one(deps: Deps) -> None:
    configured(deps)
    chat = Chat(deps)
    chat.send(message("@bot 在吗", mentions=["bot"]))
    assert chat.state(message("x"))["persona_id"] == "xiaoai"  # the default
    cats = message("@bot 喵", chat_id="2002", mentions=["bot"])
    chat.send(cats)
    assert chat.state(cats)["persona_id"] == "meow"  # this chat's choice
    named = message("@bot 喵喵", chat_id="2002", mentions=["bot"], persona_id="xiaoai")
    chat.send(named)
    assert chat.state(named)["persona_id"] == "xiaoai"  # the message said so


@pytest.mark.parametrize(
    "said", ["爱爱，你好", "@爱爱 在吗", "xiaoai: 帮个忙", "@小爱 早", "小爱睡着了吗", "爱爱在不在"]
)
def test_any_alias_wakes_the_bot(deps: Deps, said: str) -> None:
    configured(deps)
    out = Chat(deps).send(message(said))
    assert out["action"] == "text_reply" and out["reason"].startswith("mentioned")


@pytest.mark.parametrize("said", ["我觉得小爱挺好", "小", "爱好是什么"])
def test_a_name_elsewhere_or_a_part_of_one_does_not(deps: Deps, said: str) -> None:
    configured(deps)
    assert Chat(deps).send(message(said))["action"] == "no_reply"


def test_memories_and_prompts_use_the_display_name(deps: Deps) -> None:
    configured(deps)
    model = FakeChat(script=["好的，记住了"])
    chat = Chat(deps.with_chat(model), plan="rules", reply="llm", rewrite="rules",
                merge_profile="rules")  # fmt: skip
    out = chat.send(message("爱爱，我下周三要去北京出差"))
    prompt = model.last_prompt()
    assert "你是技术交流群里热心的助手小爱。" in prompt and "你的名字是小爱" in prompt
    assert "爱爱、xiaoai" in prompt and "xiaoai" not in prompt.split("你的名字是")[1][:3]
    assert [str(m.content) for m in model.prompts[-1][1:3]] == ["你好", "你好呀"]  # the opening
    from tests.graphs.test_reply_isolation import drain  # the memory worker, rules

    drain(deps)
    texts = [e.text for e in deps.events.get(out["handed_off"])]
    assert any("小爱回复了小明" in t for t in texts), texts
    assert not any("default" in t or "xiaoai" in t for t in texts)


def test_an_unconfigured_persona_is_served_under_its_id(deps: Deps, caplog: Any) -> None:
    caplog.set_level(logging.WARNING, "groupmind")
    chat = Chat(deps)
    out = chat.send(message("@bot 在吗", mentions=["bot"], persona_id="ghost"))
    chat.send(message("@bot 还在吗", mentions=["bot"], persona_id="ghost"))
    assert out["action"] == "text_reply"
    assert caplog.text.count("persona 'ghost' is not configured") == 1  # one warning


def test_an_edited_file_is_read_again_and_a_broken_one_named(tmp_path: Path, caplog: Any) -> None:
    path = tmp_path / "personas.toml"
    store = FilePersonaStore(path)
    assert store.persona_for(CATS) == "default" and store.list_personas() == []
    path.write_text('default = "meow"\n[personas.meow]\nname = "阿喵"\n', encoding="utf-8")
    assert store.persona_for(CATS) == "meow" and store.get_persona("meow").name == "阿喵"  # type: ignore[union-attr]
    caplog.set_level(logging.ERROR, "groupmind")
    path.write_text('[personas.meow]\nnam = "typo"\n', encoding="utf-8")
    with pytest.raises(PersonaFileError, match=r"personas\.meow\.name: Field required"):
        store.check()  # what `groupmind persona` reports
    # a typo must not turn every message away: the last good version goes on serving
    assert store.persona_for(CATS) == "meow" and store.get_persona("meow").name == "阿喵"  # type: ignore[union-attr]
    assert "personas.meow.name: Field required; serving the last good version" in caplog.text
    path.write_text('[chats]\n"qq:channel:1" = "meow"\n', encoding="utf-8")
    with pytest.raises(PersonaFileError, match="a chat is platform:group|private:chat_id"):
        store.check()


def test_a_broken_file_is_named_by_the_persona_commands(tmp_path: Path) -> None:
    (tmp_path / "personas.toml").write_text("default = [", encoding="utf-8")
    result = CliRunner().invoke(app, ["--data-dir", str(tmp_path), "persona", "list"])
    assert result.exit_code == 2 and "personas.toml: not valid TOML" in result.stderr


def test_the_persona_commands(tmp_path: Path) -> None:
    runner = CliRunner()

    def cli(*args: str) -> Any:
        return runner.invoke(app, ["--data-dir", str(tmp_path), "persona", *args])

    assert cli("set", "xiaoai").exit_code == 2  # a new persona needs a name
    assert cli("set", "xiaoai", "--name", "小爱", "--alias", "爱爱").exit_code == 0
    assert cli("set", "xiaoai", "--system-prompt", "你是小爱。").exit_code == 0  # keeps the rest
    assert cli("use", "nobody").exit_code == 2
    assert cli("use", "xiaoai", "--chat-type", "group", "--chat-id", "1001").exit_code == 0
    shown = json.loads(cli("show", "xiaoai", "--json").stdout)
    assert shown["name"] == "小爱" and shown["aliases"] == ["爱爱"]
    assert shown["system_prompt"] == "你是小爱。" and shown["chats"] == ["qq:group:1001"]
    listed = json.loads(cli("list", "--json").stdout)
    assert listed["default"] == "default" and [p["persona_id"] for p in listed["personas"]] == [
        "xiaoai"
    ]
    # the replay serves chat 1001 with it
    rows = [message("爱爱，你好", chat_id="1001", message_id="p1")]
    result = runner.invoke(app, ["--data-dir", str(tmp_path), "replay",
                                 str(write_jsonl(tmp_path / "m.jsonl", rows)), "--json"])  # fmt: skip
    (r,) = lines(result.stdout)
    assert r["action"] == "text_reply"
