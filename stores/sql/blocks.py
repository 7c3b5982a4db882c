"""A scope's vectors sealed ``BLOCK`` to a row (``event_vector_blocks``).

Each event keeps its vector in its ``event_docs`` row (``stores.packed``). An exact search
of a chat not held reads them scope by scope, and at a million events a chat's rows lie
scattered over the table: 20k of them cost ~90 ms in SQLite (Chroma, narrowed to them,
~130 ms). Sealed 500 to a row they are ~40 rows. A block is derived data: each id keeps the
write time its vector was read at and counts only while the event's row still has that
time (a rewritten event is read from its row); a block goes with any of its events (an
erase leaves no vector behind) and the rest of it is sealed again later.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, delete, false, func, insert, select, tuple_
from sqlalchemy.exc import IntegrityError

from domain.scope import ChatScope
from stores.packed import HEADER
from stores.scope_members import Sealed
from stores.sql.covered import chunks, in_scope, mine
from stores.sql.engine import reads
from stores.sql.schema import EventDocRow, EventVectorBlockRow

log = logging.getLogger(__name__)
BLOCK = 500  # vectors a row: ~194 KB for e5-small; the loose rest is read by id
RESEAL_BELOW = 0.5  # a block holding fewer of its events as they are now is sealed anew
SCOPE = ("platform", "chat_type", "chat_id", "persona_id")


class VectorBlocks:
    """One bot's blocks: every read and write is this bot's only."""

    def __init__(self, engine: Engine, bot: str) -> None:
        self.engine = engine
        self.reads = reads(engine)  # single reads: no transaction (stores/sql/engine.py)
        self.bot = bot

    def read(self, scope: ChatScope, persona_id: str | None, wanted: Mapping[str, float]) -> Sealed:
        """The vectors of ``wanted`` (id -> its write time as listed) that blocks hold;
        fewer than a block's worth are left to be read by row, blocks unread."""
        if len(wanted) < BLOCK:
            return Sealed(loose=list(wanted))
        query = select(
            EventVectorBlockRow.ids,
            EventVectorBlockRow.written,
            EventVectorBlockRow.norms,
            EventVectorBlockRow.vectors,
        ).where(*in_scope(EventVectorBlockRow, self.bot, scope, persona_id))
        with self.reads.connect() as conn:
            rows = conn.execute(query).all()
        ids: list[str] = []
        codes: list[np.ndarray] = []
        norms: list[np.ndarray] = []
        for text, written, norm, blob in rows:
            block_ids = text.split("\n")
            n = len(block_ids)
            # as last written: each id's write time as listed against the one sealed
            listed = np.fromiter(map(wanted.get, block_ids, repeat(np.nan)), np.float64, n)
            keep = listed == np.frombuffer(written, "<f8")
            if not keep.any():
                continue
            raw = np.frombuffer(blob, np.uint8).reshape(n, len(blob) // n)[:, HEADER:]
            codes.append(raw.view(np.int8)[keep])
            norms.append(np.frombuffer(norm, "<f4")[keep])
            if keep.all():
                ids += block_ids
            else:
                ids += [i for i, k in zip(block_ids, keep.tolist(), strict=True) if k]
        if codes and len({c.shape[1] for c in codes}) > 1:  # two models' vectors: by row
            return Sealed(loose=list(wanted))
        found = set(ids)
        if len(found) < len(ids):  # two processes sealed one event: its first row
            first = {i: n for n, i in reversed(list(enumerate(ids)))}
            rows_kept = sorted(first.values())
            ids = [ids[n] for n in rows_kept]
            codes, norms = [np.concatenate(codes)[rows_kept]], [np.concatenate(norms)[rows_kept]]
        loose = [i for i in wanted if i not in found] if len(found) < len(wanted) else []
        if not ids:
            return Sealed(loose=loose, to_seal=len(loose) >= BLOCK)
        return Sealed(
            ids,
            np.concatenate(codes),
            np.maximum(np.concatenate(norms), 1e-12),
            loose,
            to_seal=len(loose) >= BLOCK,
        )

    def seal(self, scope: ChatScope, persona_id: str) -> int:
        """Seal the scope's loose vectors, ``BLOCK`` at a time, oldest first; returns how
        many were sealed. Another process sealing the same scope at once: one of them
        stops at the first block both wrote (the key is the scope and a sequence)."""
        where = in_scope(EventVectorBlockRow, self.bot, scope, persona_id)
        with self.reads.connect() as conn:
            members = dict(
                conn.execute(
                    select(EventDocRow.id, EventDocRow.indexed_at).where(
                        *in_scope(EventDocRow, self.bot, scope, persona_id)
                    )
                ).all()
            )
            blocks = conn.execute(
                select(
                    EventVectorBlockRow.seq, EventVectorBlockRow.ids, EventVectorBlockRow.written
                ).where(*where)
            ).all()
        held: set[str] = set()
        stale: list[int] = []
        for seq, text, written in blocks:
            block_ids = text.split("\n")
            at = np.frombuffer(written, "<f8").tolist()
            valid = [i for i, w in zip(block_ids, at, strict=True) if members.get(i) == w]
            if len(valid) < RESEAL_BELOW * len(block_ids):
                stale.append(seq)
            else:
                held.update(valid)
        # an id with a newline in it (ids are free text) would split in two: never sealed
        loose = sorted((w, i) for i, w in members.items() if i not in held and "\n" not in i)
        if len(loose) < BLOCK:
            return 0
        if stale:
            with self.engine.begin() as conn:
                conn.execute(
                    delete(EventVectorBlockRow).where(*where, EventVectorBlockRow.seq.in_(stale))
                )
        seq = max((b[0] for b in blocks), default=-1) + 1
        sealed = 0
        for start in range(0, len(loose) - BLOCK + 1, BLOCK):
            group = [i for _, i in loose[start : start + BLOCK]]
            try:
                wrote = self._seal_one(scope, persona_id, seq, group)
            except IntegrityError:
                log.info("blocks of %s sealed by another process meanwhile", scope.key)
                break
            if not wrote:
                break
            sealed += wrote
            seq += 1
        return sealed

    def _seal_one(self, scope: ChatScope, persona_id: str, seq: int, ids: Sequence[str]) -> int:
        with self.engine.begin() as conn:
            # SQLite: a write first opens the transaction with the write lock held (a
            # read alone runs outside it), so no forget commits between the read and the
            # insert; PostgreSQL: the rows read are locked (FOR SHARE) instead.
            conn.execute(delete(EventVectorBlockRow).where(false()))
            rows = [
                (event_id, float(at), bytes(blob))
                for event_id, at, blob in conn.execute(
                    select(EventDocRow.id, EventDocRow.indexed_at, EventDocRow.vector)
                    .where(
                        *in_scope(EventDocRow, self.bot, scope, persona_id),
                        EventDocRow.id.in_(list(ids)),
                        EventDocRow.vector.is_not(None),
                    )
                    # a forget deleting these rows waits for this block, then drops it
                    # (``remove`` drops blocks after the rows)
                    .with_for_update(read=True)
                )
                if blob
            ]
            if not rows:
                return 0
            width = Counter(len(blob) for _, _, blob in rows).most_common(1)[0][0]
            rows = [r for r in rows if len(r[2]) == width]
            if len(rows) < BLOCK // 2:  # mostly events from before SQL kept vectors
                return 0
            joined = b"".join(r[2] for r in rows)
            conn.execute(
                insert(EventVectorBlockRow).values(
                    bot_id=self.bot,
                    platform=scope.platform,
                    chat_type=scope.chat_type,
                    chat_id=scope.chat_id,
                    persona_id=persona_id,
                    seq=seq,
                    ids="\n".join(r[0] for r in rows),
                    written=np.array([r[1] for r in rows], "<f8").tobytes(),
                    norms=code_norms(joined, len(rows)).tobytes(),
                    vectors=joined,
                )
            )
        return len(rows)

    def seal_all(self) -> int:
        """Seal every scope with a block's worth of events (``groupmind compact``)."""
        with self.reads.connect() as conn:
            scopes = conn.execute(
                select(*(getattr(EventDocRow, c) for c in SCOPE))
                .where(mine(EventDocRow, self.bot))
                .group_by(*(getattr(EventDocRow, c) for c in SCOPE))
                .having(func.count() >= BLOCK)
            ).all()
        sealed = 0
        for platform, chat_type, chat_id, persona_id in scopes:
            scope = ChatScope(platform=platform, chat_type=chat_type, chat_id=chat_id)
            sealed += self.seal(scope, persona_id)
        return sealed

    def scopes_of(self, conn: Connection, ids: Sequence[str]) -> set[tuple[Any, ...]]:
        """The scopes these events are in (read before their rows go)."""
        scopes: set[tuple[Any, ...]] = set()
        for part in chunks(list(ids)):
            scopes.update(
                tuple(r)
                for r in conn.execute(
                    select(*(getattr(EventDocRow, c) for c in SCOPE))
                    .where(mine(EventDocRow, self.bot), EventDocRow.id.in_(part))
                    .distinct()
                )
            )
        return scopes

    def drop(self, conn: Connection, scopes: set[tuple[Any, ...]]) -> None:
        """Delete every block of these scopes, in the caller's transaction, after the
        events' rows went: a block a seal wrote meanwhile is seen and goes too, so a
        forgotten event's vector stays in no block."""
        columns = tuple_(*(getattr(EventVectorBlockRow, c) for c in SCOPE))
        for run in chunks(sorted(scopes), 100):
            conn.execute(
                delete(EventVectorBlockRow).where(
                    mine(EventVectorBlockRow, self.bot), columns.in_(list(run))
                )
            )


def code_norms(joined: bytes, n: int) -> np.ndarray:
    """The norm of each of ``n`` packed vectors' int8 codes (their scales left out)."""
    raw = np.frombuffer(joined, np.uint8).reshape(n, len(joined) // n)[:, HEADER:]
    codes = raw.view(np.int8).astype(np.float32)
    norms: np.ndarray = np.sqrt(np.einsum("ij,ij->i", codes, codes)).astype("<f4")
    return norms
