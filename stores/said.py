"""What a person to be forgotten said, read before it is erased: how forget finds, in what
is kept elsewhere (reply threads, a bridge's journal, copies, events that answered them),
the lines that are theirs, quote them or name them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # an event answered them or not; the records do not need forget's matching
    from stores.base import EventRecord


@dataclass(frozen=True)
class Said:
    """What a person to be forgotten said, and the names they went by, read before it is
    erased: lines elsewhere that are theirs, or quote them, are found by it."""

    user_id: str
    names: frozenset[str] = frozenset()
    texts: tuple[str, ...] = ()
    message_ids: frozenset[str] = frozenset()
    # What memory made of their words (their events' texts, the facts and impressions
    # learned of them): the bot repeats those, not the raw words ("我爱X" -> "阿强爱X").
    remembered: tuple[str, ...] = ()
    memory_ids: frozenset[str] = frozenset()  # their events: a reply given one drew on them

    SHINGLE = 8  # a run of this many characters in common with something they said

    def theirs(self, user_id: str | None, user_name: str) -> bool:
        return user_id == self.user_id or (not user_id and user_name in self.names)

    def kept(self, lines: Sequence[Mapping[str, Any]], bot_id: str) -> list[Mapping[str, Any]]:
        """Chat lines (``user_id``, ``user_name``, ``content``) without theirs, without the
        bot's answer to theirs (a line of the bot's right after one of theirs) and without
        lines quoting or naming them."""
        kept: list[Mapping[str, Any]] = []
        after_theirs = False
        for line in lines:
            user_id, name = line.get("user_id"), str(line.get("user_name", ""))
            if self.theirs(None if user_id is None else str(user_id), name):
                after_theirs = True
                continue
            answer = after_theirs and str(user_id) == bot_id
            after_theirs = after_theirs and answer
            if not answer and not self.mentioned_in(str(line.get("content", ""))):
                kept.append(line)
        return kept

    def remembering(self, texts: Sequence[str], memory_ids: Sequence[str]) -> Said:
        """The same, with what memory made of them."""
        return replace(self, remembered=(*self.remembered, *texts),
                       memory_ids=self.memory_ids | frozenset(memory_ids))  # fmt: skip

    def drew_on(self, memory_ids: Sequence[str]) -> bool:
        """Whether an answer given these memories was given one of theirs."""
        return not self.memory_ids.isdisjoint(memory_ids)

    @property
    def _all_texts(self) -> tuple[str, ...]:
        return (*self.texts, *self.remembered)

    @cached_property
    def _shingles(self) -> frozenset[str]:
        runs: set[str] = set()
        for t in self._all_texts:
            if len(t) < self.SHINGLE:
                runs.update([t] if len(t) >= 4 else [])
            runs.update(t[i : i + self.SHINGLE] for i in range(len(t) - self.SHINGLE + 1))
        return frozenset(runs)

    def quotes(self, text: str) -> bool:
        """Whether ``text`` holds something they said, or something memory made of it: a run
        of 8 characters in common with one of those texts (one of 4-7 characters, whole)."""
        k = self.SHINGLE
        runs = self._shingles
        return any(text[i : i + k] in runs for i in range(len(text) - k + 1)) or any(
            len(t) < k and len(t) >= 4 and t in text for t in self._all_texts
        )

    def named_in(self, text: str) -> bool:
        """Whether ``text`` names them (a name of two characters or more: one character is
        too common a word to tell)."""
        return any(len(name) >= 2 and name in text for name in self.names)

    def mentioned_in(self, text: str) -> bool:
        """Whether ``text`` quotes or names them: a line of the bot's that does holds what
        they said or who they are, whoever it answered."""
        return self.quotes(text) or self.named_in(text)

    def answered_in(self, event: EventRecord) -> bool:
        """Whether an event's answered message (its ``context``) is theirs (by its author,
        or for events from before the author was kept, by the name it starts with), quotes
        them or names them."""
        if not event.context:
            return False
        if event.context_user_id == self.user_id or self.mentioned_in(event.context):
            return True
        return not event.context_user_id and event.context.split(": ", 1)[0] in self.names
