"""The plugin's settings, read by NoneBot from its ``.env`` files (``GROUPMIND_*``)."""

from __future__ import annotations

from pydantic import BaseModel


class Config(BaseModel):
    groupmind_server_url: str = "http://127.0.0.1:2024"
    groupmind_api_key: str = ""  # this bot's key on groupmind's server (GROUPMIND_BOTS)
    groupmind_bot_id: str = "bot"  # this bot's id there
    groupmind_platform: str = "qq"
    groupmind_persona: str = "default"  # the groupmind persona that speaks in every chat
    groupmind_outbox: str = "data/groupmind/outbox.db"  # what is kept while groupmind is down
    groupmind_reply_timeout_s: float = 120.0  # a model on a CPU takes its time
