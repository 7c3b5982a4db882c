"""Personas an operator configures, in a TOML file (``PERSONAS_FILE``, default
``<data dir>/personas.toml``; ``groupmind persona`` edits it):

    default = "xiaoai"                   # the persona of chats not listed under [chats]

    [personas.xiaoai]
    name = "小爱"                         # what memories, prompts and replies call the bot
    aliases = ["爱爱", "xiaoai"]          # other names people address it by: each wakes it
    system_prompt = "你是技术交流群里热心的助手小爱。"
    opening = ["你好", "你好呀，我是小爱"]  # the opening dialogue: user, bot, user, ...

    [chats]
    "qq:group:2002" = "meow"             # platform:chat_type:chat_id = persona id

The file is read again whenever it changes, so every process (bot, server, worker) follows
an edit. An edit that does not parse is logged, and the last good version goes on serving
(a typo must not turn every message away); ``check()`` reports it. Personas put from
Python before the file existed are still found (the fallback).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from domain.scope import DEFAULT_PERSONA, KEY_SEPARATOR, ChatScope
from stores.base import Persona, PersonaStore

log = logging.getLogger("groupmind")


class PersonaEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64)
    aliases: list[str] = Field(default_factory=list, max_length=20)
    system_prompt: str = Field(default="", max_length=8000)
    opening: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        cleaned = [a.strip() for a in value if a.strip()]
        if any(len(a) > 32 for a in cleaned):
            raise ValueError("an alias is at most 32 characters")
        return list(dict.fromkeys(cleaned))


class PersonaBook(BaseModel):
    """The whole file, validated."""

    model_config = ConfigDict(extra="forbid")

    default: str = DEFAULT_PERSONA
    personas: dict[str, PersonaEntry] = Field(default_factory=dict)
    chats: dict[str, str] = Field(default_factory=dict)

    @field_validator("personas")
    @classmethod
    def _persona_ids(cls, value: dict[str, PersonaEntry]) -> dict[str, PersonaEntry]:
        for persona_id in value:
            if not persona_id or KEY_SEPARATOR in persona_id:
                raise ValueError(f"{persona_id!r}: a persona id holds no {KEY_SEPARATOR!r}")
        return value

    @field_validator("chats")
    @classmethod
    def _chat_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key, persona_id in value.items():
            try:
                ChatScope.from_key(key)
            except ValueError:
                raise ValueError(f"{key!r}: a chat is platform:group|private:chat_id") from None
            if KEY_SEPARATOR in persona_id:
                raise ValueError(f"{key!r}: a persona id holds no {KEY_SEPARATOR!r}")
        return value


class PersonaFileError(ValueError):
    """The personas file cannot be read; the message names the file and the field."""


class FilePersonaStore:
    def __init__(self, path: Path, fallback: PersonaStore | None = None) -> None:
        self.path = path
        self.fallback = fallback
        self._lock = threading.Lock()
        self._seen: tuple[float, int] | None = None
        self._book = PersonaBook()

    def book(self) -> PersonaBook:
        """The file as it is now (read again when it changed; an empty book without one).
        A version that does not parse is logged once; the last good one goes on."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return PersonaBook()
        seen = (stat.st_mtime, stat.st_size)
        with self._lock:
            if seen != self._seen:
                self._seen = seen
                try:
                    self._book = self._read()
                except PersonaFileError as exc:
                    log.error("%s; serving the last good version", exc)
            return self._book

    def check(self) -> PersonaBook:
        """The file as it is now, or PersonaFileError naming the file and the field."""
        return self._read() if self.path.exists() else PersonaBook()

    def _read(self) -> PersonaBook:
        try:
            data = tomllib.loads(self.path.read_text(encoding="utf-8"))
            return PersonaBook.model_validate(data)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise PersonaFileError(f"{self.path}: not valid TOML ({exc})") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise PersonaFileError(f"{self.path}: {where}: {first['msg']}") from None

    def write(self, book: PersonaBook) -> None:
        """Replace the file atomically (a reader never sees half of it)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = book.model_dump(exclude_defaults=False)
        data["personas"] = {
            pid: entry.model_dump(exclude_defaults=True) for pid, entry in book.personas.items()
        }
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".personas-", suffix=".toml")
        with os.fdopen(fd, "wb") as f:
            tomli_w.dump(data, f, multiline_strings=True)
        os.replace(tmp, self.path)

    # PersonaStore

    def get_persona(self, persona_id: str) -> Persona | None:
        entry = self.book().personas.get(persona_id)
        if entry is not None:
            return Persona(
                persona_id=persona_id,
                name=entry.name,
                system_prompt=entry.system_prompt,
                begin_dialogs=list(entry.opening),
                aliases=list(entry.aliases),
            )
        return self.fallback.get_persona(persona_id) if self.fallback else None

    def put_persona(self, persona: Persona) -> None:
        book = self.book()
        entry = PersonaEntry(
            name=persona.name,
            aliases=persona.aliases,
            system_prompt=persona.system_prompt,
            opening=persona.begin_dialogs,
        )
        self.write(
            book.model_copy(update={"personas": {**book.personas, persona.persona_id: entry}})
        )

    def list_personas(self) -> list[Persona]:
        ids = list(self.book().personas)
        older = self.fallback.list_personas() if self.fallback else []
        ids += [p.persona_id for p in older if p.persona_id not in ids]
        return [p for p in map(self.get_persona, ids) if p is not None]

    def persona_for(self, scope: ChatScope, default: str | None = None) -> str:
        book = self.book()
        return book.chats.get(scope.key, default or book.default)

    # choices

    def use(self, persona_id: str, chat: ChatScope | None = None) -> None:
        """Make ``persona_id`` the default, or the persona of one chat."""
        book = self.book()
        if chat is None:
            self.write(book.model_copy(update={"default": persona_id}))
        else:
            self.write(book.model_copy(update={"chats": {**book.chats, chat.key: persona_id}}))
