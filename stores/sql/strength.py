"""What decay reads of one bot's events (stores/decay.py): their importance and time from
``event_docs``, their recalls and pins from ``event_strength``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, and_, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from stores.base import ChatScope, EventRecord, ForgetTarget
from stores.decay import Strength
from stores.sql.covered import chunks, covered, mine, tenant
from stores.sql.schema import EventDocRow, EventStrengthRow


class SqlEventStrength:
    def __init__(self, engine: Engine, *, bot: str) -> None:
        self.engine = engine
        self.bot = tenant(bot)

    def _select(self) -> Any:
        s = EventStrengthRow
        joined = and_(s.bot_id == EventDocRow.bot_id, s.id == EventDocRow.id)
        return select(
            EventDocRow.id,
            EventDocRow.importance,
            EventDocRow.timestamp,
            func.coalesce(s.recalls, 0),
            func.coalesce(s.last_recalled, 0.0),
            func.coalesce(s.pinned, False),
        ).outerjoin(s, joined)

    def of(self, ids: Sequence[str]) -> dict[str, Strength]:
        """The strengths of these events (ids not stored are left out)."""
        found: dict[str, Strength] = {}
        with self.engine.connect() as conn:
            for part in chunks(list(ids)):
                where = [mine(EventDocRow, self.bot), EventDocRow.id.in_(part)]
                found.update(_strengths(conn.execute(self._select().where(*where))))
        return found

    def in_chat(self, scope: ChatScope) -> dict[str, Strength]:
        """Every event of one chat (all its personas'), for the pruning pass."""
        where = [
            mine(EventDocRow, self.bot),
            EventDocRow.platform == scope.platform,
            EventDocRow.chat_type == scope.chat_type,
            EventDocRow.chat_id == scope.chat_id,
        ]
        with self.engine.connect() as conn:
            return _strengths(conn.execute(self._select().where(*where)))

    def over(self, cap: int) -> list[tuple[ChatScope, int]]:
        """The chats holding more than ``cap`` events, with their counts."""
        chat = (EventDocRow.platform, EventDocRow.chat_type, EventDocRow.chat_id)
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(*chat, func.count())
                .where(mine(EventDocRow, self.bot))
                .group_by(*chat)
                .having(func.count() > cap)
            ).all()
        return [
            (ChatScope(platform=p, chat_type=t, chat_id=c), int(n))  # type: ignore[arg-type]
            for p, t, c, n in rows
        ]

    def recalled(self, events: Sequence[EventRecord], at: float) -> None:
        """Each of these events was recalled once more, at ``at``."""
        self._touch(events, {"recalls": EventStrengthRow.recalls + 1, "last_recalled": at},
                    {"recalls": 1, "last_recalled": at})  # fmt: skip

    def pin(self, events: Sequence[EventRecord], pinned: bool = True) -> None:
        self._touch(events, {"pinned": pinned}, {"pinned": pinned})

    def _touch(
        self, events: Sequence[EventRecord], change: dict[str, Any], new: dict[str, Any]
    ) -> None:
        """Update each event's row, or insert it with ``new``; one transaction, run again
        if another process inserted one of the rows meanwhile."""
        try:
            self._touch_once(events, change, new)
        except IntegrityError:
            self._touch_once(events, change, new)

    def _touch_once(
        self, events: Sequence[EventRecord], change: dict[str, Any], new: dict[str, Any]
    ) -> None:
        with self.engine.begin() as conn:
            for event in {e.id: e for e in events}.values():
                key = (mine(EventStrengthRow, self.bot), EventStrengthRow.id == event.id)
                if conn.execute(update(EventStrengthRow).where(*key).values(**change)).rowcount:
                    continue
                conn.execute(
                    insert(EventStrengthRow).values(
                        bot_id=self.bot, id=event.id, platform=event.platform,
                        chat_type=event.chat_type, chat_id=event.chat_id,
                        user_id=event.user_id, **new,
                    )
                )  # fmt: skip

    def remove(self, ids: Sequence[str]) -> None:
        with self.engine.begin() as conn:
            for part in chunks(list(ids)):
                where = (mine(EventStrengthRow, self.bot), EventStrengthRow.id.in_(part))
                conn.execute(delete(EventStrengthRow).where(*where))

    def forget(self, target: ForgetTarget) -> int:
        with self.engine.begin() as conn:
            where = covered(EventStrengthRow, target, self.bot)
            return int(conn.execute(delete(EventStrengthRow).where(*where)).rowcount)


def _strengths(rows: Any) -> dict[str, Strength]:
    return {
        str(i): Strength(float(imp), float(ts), int(n), float(last), bool(pin))
        for i, imp, ts, n, last, pin in rows
    }
