"""groupmind's memory in AstrBot (docs/integrations.md). AstrBot keeps its own model,
persona and plugins; groupmind keeps the memory, over its LangGraph API (this plugin does
only I/O, through ``groupmind_host``):

- every message AstrBot sees, addressed to the bot or not, is captured;
- before AstrBot's model answers, what groupmind remembers of the people, the memories
  and the ranked live context go into the *user* part of the request as temporary parts
  (never the system prompt: a changing system prompt defeats providers' prefix caches),
  within the budget; past it, or with groupmind down, the request goes as it was;
- the answer AstrBot sent is recorded as the bot's line;
- groupmind's memory tools are offered to the model, scoped to the chat they serve.

MIT licensed; it talks to groupmind over HTTP only.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import astrbot.api.message_components as Comp
from astrbot.api import AstrBotConfig
from astrbot.api.event import AstrMessageEvent, filter
from astrbot.api.provider import ProviderRequest
from astrbot.api.star import Context, Star, StarTools
from astrbot.core.agent.message import TextPart
from groupmind_host import HostMemory

NAME = "astrbot_plugin_groupmind"
log = logging.getLogger("astrbot")


class GroupmindMemory(Star):
    def __init__(self, context: Context, config: AstrBotConfig) -> None:
        super().__init__(context)
        self.config = config
        self._memory: HostMemory | None = None

    @property
    def memory(self) -> HostMemory:
        if self._memory is None:
            self._memory = HostMemory(
                url=str(self.config.get("server_url", "http://127.0.0.1:2024")),
                api_key=str(self.config.get("api_key", "")) or None,
                bot_id=self.bot_id,
                outbox=StarTools.get_data_dir(NAME) / "outbox.db",
                budget_s=float(self.config.get("budget_s", 1.5)),
                log=log,
            )
            self._memory.start()  # what an earlier run kept goes first
        return self._memory

    @property
    def bot_id(self) -> str:
        return str(self.config.get("bot_id", "bot"))

    # --- the host's ids, as groupmind's input messages (docs/contracts.md) -------------

    async def persona(self, event: AstrMessageEvent) -> str:
        """The groupmind persona of the AstrBot persona serving this conversation."""
        mapping: dict[str, str] = {}
        try:
            mapping = dict(json.loads(str(self.config.get("persona_map") or "{}")))
        except (ValueError, TypeError):
            log.warning("groupmind: persona_map is not a JSON object; using default_persona")
        default = str(self.config.get("default_persona", "default"))
        conversations = self.context.conversation_manager
        try:
            cid = await conversations.get_curr_conversation_id(event.unified_msg_origin)
            conversation = (
                await conversations.get_conversation(event.unified_msg_origin, cid) if cid else None
            )
        except Exception:  # noqa: BLE001 - no conversation yet: the default persona
            conversation = None
        astrbot_persona = getattr(conversation, "persona_id", None) or ""
        return str(mapping.get(astrbot_persona, default))

    async def message(self, event: AstrMessageEvent) -> dict[str, Any] | None:
        obj = event.message_obj
        group = str(event.get_group_id() or "")
        sender = str(event.get_sender_id())
        self_id = str(event.get_self_id())
        content = (event.get_message_str() or "").strip() or event.get_message_outline().strip()
        if not content or sender == self_id:
            return None
        parts = event.get_messages()
        mentions = [self.bot_id if str(c.qq) == self_id else str(c.qq)
                    for c in parts if isinstance(c, Comp.At)]  # fmt: skip
        reply = next((str(c.id) for c in parts if isinstance(c, Comp.Reply)), None)
        message: dict[str, Any] = {
            "message_id": str(obj.message_id),
            "platform": str(self.config.get("platform", "qq")),
            "chat_type": "group" if group else "private",
            "chat_id": group or sender,
            "user_id": sender,
            "user_name": event.get_sender_name() or sender,
            "content": content,
            "timestamp": int(obj.timestamp),
            "mentions": mentions,
            "persona_id": await self.persona(event),
        }
        if reply:
            message["reply_to"] = reply
        name = getattr(obj.group, "group_name", None) if obj.group else None
        if name:
            message["chat_name"] = str(name)
        return message

    # --- capture, recall, record -------------------------------------------------------

    @filter.event_message_type(filter.EventMessageType.ALL, priority=10_000)
    async def capture(self, event: AstrMessageEvent) -> None:
        """Every message, before anything answers it (passive: nothing is sent)."""
        message = await self.message(event)
        if message is not None:
            event.set_extra("groupmind_message", message)
            await self.memory.capture(message)

    @filter.on_llm_request()
    async def recall(self, event: AstrMessageEvent, req: ProviderRequest) -> None:
        message = event.get_extra("groupmind_message") or await self.message(event)
        if not message:
            return
        recalled = await self.memory.recall(message)
        if recalled is None or not recalled.text:
            return
        event.set_extra("groupmind_memory_ids", recalled.memory_ids)
        req.extra_user_content_parts.append(TextPart(text=recalled.text).mark_as_temp())

    @filter.after_message_sent()
    async def record(self, event: AstrMessageEvent) -> None:
        message = event.get_extra("groupmind_message")
        result = event.get_result()
        said = result.get_plain_text().strip() if result is not None else ""
        if not message or not said:
            return
        answer = {**message, "message_id": f"{message['message_id']}#reply",
                  "user_id": self.bot_id, "user_name": self.bot_id, "content": said,
                  "reply_to": message["message_id"], "mentions": []}  # fmt: skip
        answer.pop("chat_name", None)
        await self.memory.record(answer, event.get_extra("groupmind_memory_ids") or [])

    # --- groupmind's tools for AstrBot's model -----------------------------------------

    async def _tool(self, event: AstrMessageEvent, name: str, args: dict[str, Any]) -> str:
        message = event.get_extra("groupmind_message") or await self.message(event)
        if not message:
            return "这条消息不在 groupmind 的记忆范围内。"
        found = await self.memory.tool(message, name, args)
        return found if found is not None else "记忆暂时不可用。"

    @filter.llm_tool(name="groupmind_search_events")
    async def search_events(self, event: AstrMessageEvent, query: str) -> str:
        """搜索这个聊天里记住的事（groupmind 的长期记忆）。

        Args:
            query(string): 要找的内容，几个关键词
        """
        return await self._tool(event, "search_events", {"query": query})

    @filter.llm_tool(name="groupmind_get_profile")
    async def get_profile(self, event: AstrMessageEvent, target_id: str, target_type: str) -> str:
        """查看这个聊天里一个人（或这个群）的画像：关系、印象、关键信息。

        Args:
            target_id(string): 用户 ID，或群号
            target_type(string): user 或 group
        """
        return await self._tool(event, "get_profile",
                                {"target_id": target_id, "target_type": target_type})  # fmt: skip

    @filter.llm_tool(name="groupmind_update_impression")
    async def update_impression(
        self, event: AstrMessageEvent, user_id: str, user_name: str, impression_update: str
    ) -> str:
        """记下你对这个聊天里某个人的新认识。

        Args:
            user_id(string): 用户 ID
            user_name(string): 怎么称呼 TA
            impression_update(string): 你对 TA 的新认识，简要描述
        """
        args = {"user_id": user_id, "user_name": user_name, "impression_update": impression_update}
        return await self._tool(event, "update_user_impression", args)

    @filter.llm_tool(name="groupmind_remember_info")
    async def remember_info(
        self, event: AstrMessageEvent, user_id: str, user_name: str, info_type: str,
        info_value: str,
    ) -> str:  # fmt: skip
        """记住这个聊天里某个人的一条重要信息。

        Args:
            user_id(string): 用户 ID
            user_name(string): 怎么称呼 TA
            info_type(string): birthday、job、location、dream、family、pet 或 other
            info_value(string): 具体内容
        """
        args = {"user_id": user_id, "user_name": user_name, "info_type": info_type,
                "info_value": info_value}  # fmt: skip
        return await self._tool(event, "remember_user_info", args)

    async def terminate(self) -> None:
        if self._memory is not None:
            await self._memory.close()
