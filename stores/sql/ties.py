"""Ties in SQL (``event_ties``): written and deleted with their memory, in its transaction
(``SqlLexicalIndex``), read per chat and persona."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Connection, delete, insert, or_, select

from domain.scope import ForgetTarget
from stores.base import EventQuery, EventRecord
from stores.sql.covered import chunks, in_scope, mine
from stores.sql.schema import EventTieRow
from stores.ties import BETWEEN_KINDS, Circle

MAX_EXCHANGES = 200  # the newest memories of ties between the people a question names


def write(conn: Connection, bot: str, events: Sequence[EventRecord]) -> None:
    """Replace the ties of the events that carry theirs (``ties`` not None)."""
    carrying = [e for e in events if e.ties is not None]
    if not carrying:
        return
    drop(conn, bot, [e.id for e in carrying])
    rows = [
        {
            "bot_id": bot,
            "event_id": e.id,
            "other_id": t.other_id,
            "kind": t.kind,
            "label": t.label[:64],
            "other_name": t.other_name[:128],
            "user_id": e.user_id,
            "user_name": e.user_name[:128],
            "platform": e.platform,
            "chat_type": e.chat_type,
            "chat_id": e.chat_id,
            "persona_id": e.persona_id,
            "timestamp": e.timestamp,
        }
        for e in carrying
        for t in dict.fromkeys(e.ties or ())  # one row per (other, kind, label)
        if t.other_id and t.other_id != e.user_id
    ]
    if rows:
        conn.execute(insert(EventTieRow), rows)


def drop(conn: Connection, bot: str, ids: Sequence[str]) -> None:
    for part in chunks(list(ids)):
        conn.execute(
            delete(EventTieRow).where(mine(EventTieRow, bot), EventTieRow.event_id.in_(part))
        )


def drop_toward(conn: Connection, bot: str, target: ForgetTarget) -> int:
    """Ties others have to a forgotten person (their own go with their memories)."""
    if target.user_id is None:
        return 0
    where = [mine(EventTieRow, bot), EventTieRow.platform == target.platform]
    if target.chat is not None:
        where += [
            EventTieRow.chat_type == target.chat.chat_type,
            EventTieRow.chat_id == target.chat.chat_id,
        ]
    done = conn.execute(delete(EventTieRow).where(*where, EventTieRow.other_id == target.user_id))
    return int(done.rowcount or 0)


def _scoped(bot: str, query: EventQuery) -> list[Any]:
    return in_scope(EventTieRow, bot, query.scope, query.persona_id)


def exchanges(conn: Connection, bot: str, query: EventQuery, people: Collection[str]) -> list[str]:
    """The memories of ties between any two of ``people`` in the query's chat, newest first."""
    ids = list(people)
    if len(ids) < 2:
        return []
    stmt = (
        select(EventTieRow.event_id)
        .where(
            *_scoped(bot, query),
            EventTieRow.user_id.in_(ids),
            EventTieRow.other_id.in_(ids),
            EventTieRow.kind.in_(BETWEEN_KINDS),
        )
        .order_by(EventTieRow.timestamp.desc(), EventTieRow.event_id)
    )
    return list(dict.fromkeys(conn.execute(stmt).scalars()))[:MAX_EXCHANGES]


def circle(conn: Connection, bot: str, query: EventQuery, user_id: str) -> list[Circle]:
    """``user_id``'s ties with each other member, either way, the most tied first."""
    t = EventTieRow
    rows = conn.execute(
        select(
            t.event_id,
            t.user_id,
            t.user_name,
            t.other_id,
            t.other_name,
            t.kind,
            t.label,
            t.timestamp,
        )  # fmt: skip
        .where(
            *_scoped(bot, query),
            or_(EventTieRow.user_id == user_id, EventTieRow.other_id == user_id),
        )
        .order_by(EventTieRow.timestamp.desc(), EventTieRow.event_id)
    ).all()
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    names: dict[str, str] = {}
    labels: dict[str, dict[str, None]] = defaultdict(dict)
    last: dict[str, float] = {}
    events: dict[str, dict[str, None]] = defaultdict(dict)
    for row in rows:
        mine_ = row.user_id == user_id
        other = row.other_id if mine_ else row.user_id
        names.setdefault(other, row.other_name if mine_ else row.user_name)
        # ``<kind>``: theirs to the other; ``<kind>_by``: the other's to them
        counts[other][row.kind if mine_ else f"{row.kind}_by"] += 1
        if row.label:
            labels[other][row.label] = None
        last.setdefault(other, row.timestamp)
        events[other][row.event_id] = None
    found = [
        Circle(other, names[other], dict(counts[other]), tuple(labels[other]), last[other],
               tuple(events[other])[:10])
        for other in counts
    ]  # fmt: skip
    return sorted(found, key=lambda c: (-c.total, -c.last_at, c.user_id))
