"""OneBot v11 events into groupmind messages, and groupmind's answers into OneBot actions
(https://github.com/botuniverse/onebot-11: event/message.md, message/segment.md,
message/string.md, api/public.md).

A message is an array of segments or a CQ-code string; both are read. What groupmind
keeps of a message: its text, ``@`` mentions (the bot's own ``self_id`` becomes a mention
of the bot), the ``reply`` it answers, and placeholders for what it cannot read (images,
faces, voice). ``sender.card`` (the group nickname) is preferred to ``nickname``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

Segment = dict[str, Any]
PLACEHOLDERS = {
    "face": "[表情]", "image": "[图片]", "record": "[语音]", "video": "[视频]",
    "file": "[文件]", "json": "[卡片]", "xml": "[卡片]", "forward": "[聊天记录]",
    "location": "[位置]", "music": "[音乐]", "share": "[链接]", "dice": "[骰子]", "rps": "[猜拳]",
}  # fmt: skip
_CQ = re.compile(r"\[CQ:([A-Za-z0-9_.-]+)((?:,[^\]]*)?)\]")
StickerMode = Literal["image", "face"]


class Malformed(ValueError):
    """An event that cannot be read; the message names the field."""


def _unescape(text: str, *, param: bool = False) -> str:
    text = text.replace("&#91;", "[").replace("&#93;", "]")
    if param:
        text = text.replace("&#44;", ",")
    return text.replace("&amp;", "&")


def parse_cq(message: str) -> list[Segment]:
    """A CQ-code string (``你好[CQ:at,qq=123]``) as segments."""
    segments: list[Segment] = []
    pos = 0
    for match in _CQ.finditer(message):
        if match.start() > pos:
            segments.append(
                {"type": "text", "data": {"text": _unescape(message[pos : match.start()])}}
            )
        data = {}
        for pair in filter(None, match.group(2).split(",")):
            key, _, value = pair.partition("=")
            data[key] = _unescape(value, param=True)
        segments.append({"type": match.group(1), "data": data})
        pos = match.end()
    if pos < len(message):
        segments.append({"type": "text", "data": {"text": _unescape(message[pos:])}})
    return segments


def segments_of(message: Any) -> list[Segment]:
    if isinstance(message, str):
        return parse_cq(message)
    if isinstance(message, dict):  # a single segment
        message = [message]
    if not isinstance(message, list):
        raise Malformed(f"message: expected segments or a CQ string, got {type(message).__name__}")
    segments = []
    for n, seg in enumerate(message):
        if not isinstance(seg, dict) or not isinstance(seg.get("type"), str):
            raise Malformed(f"message[{n}]: a segment is {{type, data}}")
        data = seg.get("data") if isinstance(seg.get("data"), dict) else {}
        segments.append({"type": seg["type"], "data": data})
    return segments


def is_chat_message(event: dict[str, Any], self_id: str) -> bool:
    """A message from someone else (the bot's own, ``message_sent`` or from ``self_id``,
    are not)."""
    return event.get("post_type") == "message" and str(event.get("user_id")) != self_id


def mentioned(event: dict[str, Any], self_id: str) -> list[str]:
    """The QQ numbers a message ``@``s, but the bot's own and ``all`` (whose names a bridge
    looks up, so they read as names)."""
    try:
        segments = segments_of(event.get("message", event.get("raw_message", "")))
    except Malformed:
        return []
    found = [str(s["data"].get("qq", "")) for s in segments if s["type"] == "at"]
    return list(dict.fromkeys(q for q in found if q and q not in (self_id, "all")))


def quoted_id(event: dict[str, Any]) -> str | None:
    """The id of the message this one quotes (its ``reply`` segment), if any."""
    try:
        segments = segments_of(event.get("message", event.get("raw_message", "")))
    except Malformed:
        return None
    ids = [str(s["data"].get("id", "")) for s in segments if s["type"] == "reply"]
    return next((i for i in ids if i), None)


def to_message(
    event: dict[str, Any],
    *,
    self_id: str,
    bot_id: str,
    platform: str = "qq",
    names: Mapping[str, str] | None = None,
    reply_to: str | None = None,
) -> dict[str, Any]:
    """A OneBot message event as a groupmind input message (DESIGN: Input message).
    ``names``: display names of the members it ``@``s (QQ number -> name); ``reply_to``:
    groupmind's id of the message it quotes, when the bridge knows it (the bot's own
    answer), else the quoted id as it is."""
    kind = event.get("message_type")
    if kind not in ("group", "private"):
        raise Malformed(f"message_type: {kind!r} is neither group nor private")
    for key in ("message_id", "user_id", "time"):
        if event.get(key) is None:
            raise Malformed(f"{key}: missing")
    if kind == "group" and event.get("group_id") is None:
        raise Malformed("group_id: missing in a group message")
    text: list[str] = []
    mentions: list[str] = []
    for seg in segments_of(event.get("message", event.get("raw_message", ""))):
        kind_of, data = seg["type"], seg["data"]
        if kind_of == "text":
            text.append(str(data.get("text", "")))
        elif kind_of == "at":
            qq = str(data.get("qq", ""))
            if qq == self_id:
                mentions.append(bot_id)
            elif qq == "all":
                text.append("@全体成员 ")
            elif qq:
                mentions.append(qq)
                text.append(f"@{(names or {}).get(qq) or data.get('name') or qq} ")
        elif kind_of == "reply":
            reply_to = reply_to or str(data.get("id", "")) or None
        else:
            text.append(str(data.get("summary") or PLACEHOLDERS.get(kind_of, f"[{kind_of}]")))
    sender: dict[str, Any] = event["sender"] if isinstance(event.get("sender"), dict) else {}
    user_id = str(event["user_id"])
    content = "".join(text).strip() or ("[提到了你]" if bot_id in mentions else "")
    message: dict[str, Any] = {
        "message_id": str(event["message_id"]),
        "platform": platform,
        "chat_type": kind,
        "chat_id": str(event["group_id"]) if kind == "group" else user_id,
        "user_id": user_id,
        "user_name": str(sender.get("card") or sender.get("nickname") or user_id),
        "content": content,
        "timestamp": event["time"],
        "mentions": list(dict.fromkeys(mentions)),
    }
    if reply_to:
        message["reply_to"] = reply_to
    return message


def sticker_segment(sticker: dict[str, str], mode: StickerMode) -> Segment | None:
    """A sticker as an image (the file, base64: the implementation may run elsewhere) or a
    QQ face, whichever the mode prefers and the sticker has."""
    image = None
    if sticker.get("file") and Path(sticker["file"]).is_file():
        data = base64.b64encode(Path(sticker["file"]).read_bytes()).decode()
        image = {"type": "image", "data": {"file": f"base64://{data}"}}
    face = {"type": "face", "data": {"id": sticker["face"]}} if sticker.get("face") else None
    first, second = (image, face) if mode == "image" else (face, image)
    return first or second


def answer_action(
    message: dict[str, Any], out: dict[str, Any], sticker_mode: StickerMode = "image"
) -> tuple[str, dict[str, Any]] | None:
    """The send action for groupmind's answer to ``message``: a ``reply`` segment to it, an
    ``at`` of its sender in groups, then the text or the sticker. None: nothing to say."""
    action = out.get("action")
    body: list[Segment] = []
    if action == "text_reply" and out.get("reply"):
        body = [{"type": "text", "data": {"text": str(out["reply"])}}]
    elif action == "emoji_reply" and out.get("sticker"):
        seg = sticker_segment(out["sticker"], sticker_mode)
        text = {"type": "text", "data": {"text": str(out["sticker"].get("description", ""))}}
        body = [seg or text]
    if not body:
        return None
    head: list[Segment] = [{"type": "reply", "data": {"id": message["message_id"]}}]
    if message["chat_type"] == "group":
        head += [
            {"type": "at", "data": {"qq": message["user_id"]}},
            {"type": "text", "data": {"text": " "}},
        ]
        return "send_group_msg", {"group_id": _num(message["chat_id"]), "message": head + body}
    return "send_private_msg", {"user_id": _num(message["user_id"]), "message": head + body}


def _num(value: str) -> int | str:
    """QQ ids are numbers in OneBot; other platforms' ids pass through as they are."""
    return int(value) if value.isdigit() else value
