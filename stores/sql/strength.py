"""What decay reads of one bot's events (stores/decay.py): their importance and time from
``event_docs``, their recalls and pins from ``event_strength``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, and_, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from domain.scope import ChatScope
from stores.decay import Strength
from stores.sql.covered import chunks, mine, tenant
from stores.sql.engine import reads
from stores.sql.schema import EventDocRow, EventStrengthRow


class SqlEventStrength:
    def __init__(self, engine: Engine, *, bot: str) -> None:
        self.engine = engine
        self.reads = reads(engine)  # single reads: no transaction (stores/sql/engine.py)
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
        with self.reads.connect() as conn:
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
        with self.reads.connect() as conn:
            return _strengths(conn.execute(self._select().where(*where)))

    def over(self, cap: int) -> list[tuple[ChatScope, int]]:
        """The chats holding more than ``cap`` events, with their counts."""
        chat = (EventDocRow.platform, EventDocRow.chat_type, EventDocRow.chat_id)
        with self.reads.connect() as conn:
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

    def recalled(self, ids: Sequence[str], at: float) -> None:
        """Each stored event among ``ids`` was recalled once more, at ``at``."""
        self._touch(ids, {"recalls": EventStrengthRow.recalls + 1, "last_recalled": at},
                    {"recalls": 1, "last_recalled": at})  # fmt: skip

    def pin(self, ids: Sequence[str], pinned: bool = True) -> list[str]:
        """Pin (or unpin) the stored events among ``ids``; returns those."""
        return self._touch(ids, {"pinned": pinned}, {"pinned": pinned})

    def _touch(self, ids: Sequence[str], change: dict[str, Any], new: dict[str, Any]) -> list[str]:
        """Update the rows of the stored events among ``ids`` and insert the missing ones
        with ``new``: three statements in one transaction, run again if another process
        inserted one of the rows meanwhile. Returns the stored ids."""
        try:
            return self._touch_once(ids, change, new)
        except IntegrityError:
            return self._touch_once(ids, change, new)

    def _touch_once(
        self, ids: Sequence[str], change: dict[str, Any], new: dict[str, Any]
    ) -> list[str]:
        doc, row = mine(EventDocRow, self.bot), mine(EventStrengthRow, self.bot)
        stored: list[str] = []
        with self.engine.begin() as conn:
            for part in chunks(list(dict.fromkeys(ids))):  # bound each IN list, not the call
                found = conn.execute(select(EventDocRow.id).where(doc, EventDocRow.id.in_(part)))
                mine_now = list(found.scalars())
                had = set(
                    conn.execute(
                        select(EventStrengthRow.id).where(row, EventStrengthRow.id.in_(mine_now))
                    ).scalars()
                )
                if had:
                    conn.execute(
                        update(EventStrengthRow)
                        .where(row, EventStrengthRow.id.in_(had))
                        .values(**change)
                    )
                if fresh := [i for i in mine_now if i not in had]:
                    rows = [{"bot_id": self.bot, "id": i, **new} for i in fresh]
                    conn.execute(insert(EventStrengthRow), rows)
                stored += mine_now
        return stored


def _strengths(rows: Any) -> dict[str, Strength]:
    return {
        str(i): Strength(float(imp), float(ts), int(n), float(last), bool(pin))
        for i, imp, ts, n, last, pin in rows
    }
