"""groupmind in NoneBot2 (docs/integrations.md). NoneBot has no model of its own:
groupmind's reply graph decides, for every message the bot sees, whether to answer (plan)
and what (groupmind's configured model, or its labelled rules), and the plugin sends the
answer through the OneBot v11 adapter (``send_msg``). Every message is captured; the
bot's own sends made by other plugins are recorded as the bot's lines
(``Bot.on_called_api``). With groupmind down the bot goes on as it would without this
plugin; what it saw meanwhile is kept on disk and captured once groupmind is back.

MIT licensed; it talks to groupmind over HTTP only.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from groupmind_host import HostMemory
from nonebot import get_driver, get_plugin_config, on_message
from nonebot.adapters.onebot.v11 import Bot, GroupMessageEvent, Message, MessageEvent
from nonebot.log import LoguruHandler
from nonebot.plugin import PluginMetadata

from .config import Config

__plugin_meta__ = PluginMetadata(
    name="groupmind",
    description="群聊的记忆和大脑：决定要不要回答、怎么回答，记住每个人说过的事",
    usage="配置 GROUPMIND_SERVER_URL、GROUPMIND_API_KEY、GROUPMIND_BOT_ID 后，"
    "所有消息自动经过 groupmind",
    type="application",
    config=Config,
    supported_adapters={"~onebot.v11"},
)

config = get_plugin_config(Config)
log = logging.getLogger("nonebot.groupmind")
log.addHandler(LoguruHandler())  # into NoneBot's own log
log.propagate = False
SENDS = ("send_msg", "send_group_msg", "send_private_msg")
_memory: HostMemory | None = None
_ours: set[tuple[str, str]] = set()  # (chat key, text) of answers this plugin is sending


def memory() -> HostMemory:
    global _memory
    if _memory is None:
        _memory = HostMemory(
            url=config.groupmind_server_url, api_key=config.groupmind_api_key or None,
            bot_id=config.groupmind_bot_id, outbox=Path(config.groupmind_outbox), log=log,
        )  # fmt: skip
        _memory.start()  # what an earlier run kept goes first
    return _memory


def to_message(bot: Bot, event: MessageEvent) -> dict[str, Any] | None:
    """The event as groupmind's input message (docs/contracts.md)."""
    group = str(event.group_id) if isinstance(event, GroupMessageEvent) else ""
    sender = str(event.user_id)
    segments = event.original_message
    mentions = [config.groupmind_bot_id if str(s.data.get("qq")) == str(bot.self_id)
                else str(s.data.get("qq")) for s in segments if s.type == "at"]  # fmt: skip
    if event.to_me and config.groupmind_bot_id not in mentions:
        mentions.append(config.groupmind_bot_id)  # @bot, its name, or a private chat
    content = event.get_plaintext().strip() or str(event.message).strip()
    if not content:
        return None
    message: dict[str, Any] = {
        "message_id": str(event.message_id),
        "platform": config.groupmind_platform,
        "chat_type": "group" if group else "private",
        "chat_id": group or sender,
        "user_id": sender,
        "user_name": event.sender.card or event.sender.nickname or sender,
        "content": content,
        "timestamp": int(event.time),
        "mentions": mentions,
        "persona_id": config.groupmind_persona,
    }
    reply = next((str(s.data.get("id")) for s in segments if s.type == "reply"), None)
    if reply:
        message["reply_to"] = reply
    return message


listener = on_message(priority=1, block=False)


def command(event: MessageEvent) -> bool:
    """A command for some plugin (``/ping``): groupmind keeps it, and does not answer it."""
    starts = get_driver().config.command_start
    text = event.get_plaintext().strip()
    return any(text.startswith(s) for s in starts if s)


@listener.handle()
async def answer(bot: Bot, event: MessageEvent) -> None:
    message = to_message(bot, event)
    if message is None:
        return
    if command(event):
        await memory().capture(message)
        return
    out = await memory().reply(message, timeout_s=config.groupmind_reply_timeout_s)
    said = str((out or {}).get("reply") or "")
    if out is None or out.get("action") != "text_reply" or not said:
        return
    chat = f"{message['chat_type']}:{message['chat_id']}"
    _ours.add((chat, said))  # groupmind stored its own answer: not recorded twice
    await bot.send(event, Message(said))


@Bot.on_called_api
async def record(
    bot: Bot, exception: Exception | None, api: str, data: dict[str, Any], result: Any
) -> None:
    """The bot's own sends by other plugins: the bot's lines in groupmind."""
    if exception is not None or api not in SENDS:
        return
    group = data.get("group_id")
    kind = "group" if group or data.get("message_type") == "group" else "private"
    chat_id = str(group or data.get("user_id") or "")
    text = Message(data.get("message", "")).extract_plain_text().strip()
    if not chat_id or not text:
        return
    if (f"{kind}:{chat_id}", text) in _ours:
        _ours.discard((f"{kind}:{chat_id}", text))
        return
    sent = result.get("message_id") if isinstance(result, dict) else None
    line = {
        "message_id": f"sent-{sent}" if sent is not None else f"sent-{hash(text)}",
        "platform": config.groupmind_platform, "chat_type": kind, "chat_id": chat_id,
        "user_id": config.groupmind_bot_id, "user_name": config.groupmind_bot_id,
        "content": text, "timestamp": int(time.time()),
        "persona_id": config.groupmind_persona,
    }  # fmt: skip
    await memory().record(line)
