"""What decay reads of one bot's events (stores/decay.py): their importance and time from
``event_docs``, their recalls and pins from ``event_strength``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BindParameter, Engine, and_, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from domain.scope import ChatScope
from stores.decay import Strength
from stores.sql.covered import BOT, chunks, mine, tenant
from stores.sql.engine import reads
from stores.sql.schema import EventDocRow, EventStrengthRow


class SqlEventStrength:
    def __init__(self, engine: Engine, *, bot: str) -> None:
        self.engine = engine
        self.reads = reads(engine)  # single reads: no transaction (stores/sql/engine.py)
        self.bot = tenant(bot)

    def of(self, ids: Sequence[str]) -> dict[str, Strength]:
        """The strengths of these events (ids not stored are left out)."""
        found: dict[str, Strength] = {}
        with self.reads.connect() as conn:
            for part in chunks(list(ids)):
                found.update(_strengths(conn.execute(_OF, {"k_bot": self.bot, "k_ids": part})))
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
            return _strengths(conn.execute(_STRENGTH.where(*where)))

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
        row = mine(EventStrengthRow, self.bot)
        stored: list[str] = []
        with self.engine.begin() as conn:
            for part in chunks(list(dict.fromkeys(ids))):  # bound each IN list, not the call
                found = conn.execute(_STORED, {"k_bot": self.bot, "k_ids": part})
                mine_now = list(found.scalars())
                key = {"k_bot": self.bot, "k_ids": mine_now}
                had = set(conn.execute(_HAD, key).scalars())
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


# Asked for every reply's hits and recalls: built once, bound per call (covered.py: BOT).
_IDS: BindParameter[Any] = bindparam("k_ids", expanding=True)
_STRENGTH = select(
    EventDocRow.id,
    EventDocRow.importance,
    EventDocRow.timestamp,
    func.coalesce(EventStrengthRow.recalls, 0),
    func.coalesce(EventStrengthRow.last_recalled, 0.0),
    func.coalesce(EventStrengthRow.pinned, False),
).outerjoin(
    EventStrengthRow,
    and_(EventStrengthRow.bot_id == EventDocRow.bot_id, EventStrengthRow.id == EventDocRow.id),
)
_OF = _STRENGTH.where(mine(EventDocRow, BOT), EventDocRow.id.in_(_IDS))
_STORED = select(EventDocRow.id).where(mine(EventDocRow, BOT), EventDocRow.id.in_(_IDS))
_HAD = select(EventStrengthRow.id).where(mine(EventStrengthRow, BOT), EventStrengthRow.id.in_(_IDS))
