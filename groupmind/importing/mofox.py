"""MoFox's ``user_relationships`` table (seed 000 §2, §5): the bot's relationship with each
person (score, stage, first met, aliases) and what it learned of them (the impression,
formerly ``relationship_text``; key facts; preference keywords), as groupmind's
relationship and the profile learned in one chat (docs/import.md).

MoFox keeps one impression per person, with no chat: the operator states the chat it is
filed under (``--chat group:ID``, or ``--chat private``: each person's private chat), so
every sharing policy can filter it like anything else learned there. The rows come from
MoFox's SQLite database (read-only) or a JSON / JSONL export of the same columns.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from domain.limits import Limits
from domain.people import KEY_FACT_TYPES, RELATIONSHIP_STAGES
from domain.scope import ChatScope
from groupmind.importing.contract import (
    a_name,
    a_platform,
    a_text,
    a_time,
    an_id,
    read_json,
    read_lines,
)
from groupmind.importing.report import Report
from nodes.deps import Deps
from nodes.memory.profile_change import merge_key_facts, trim_impression
from state.validation import InputError
from stores.base import LearnedProfile, ProfileChange, Relationship
from stores.sql.engine import read_only_sqlite

STAGES = {stage for _, stage in RELATIONSHIP_STAGES}
IMPORTED = "imported"  # the provenance of everything an import wrote


@dataclass(frozen=True)
class Target:
    platform: str  # for rows without a platform column
    chat: ChatScope | None  # None: each person's own private chat


_END = object()
MAX_ROWS = 1_000_000  # a relationship table far beyond any bot's: read no further
MAX_WORDS = 50  # aliases, keywords: a list past this is no one's


def read_rows(path: Path, limits: Limits) -> Iterator[Any]:
    """The table's rows, streamed: from a SQLite database (the table itself, never a view;
    each value cut one character past the text limit, so a huge one is refused by its
    size, not read whole), a JSON list, or JSON lines (a bad line is that row's error)."""
    head = path.open("rb").read(16) if path.is_file() else b""
    if not head:
        raise InputError(str(path), "no such file, or empty")
    if head.startswith(b"SQLite format 3"):
        yield from _table_rows(path, limits.max_text_chars + 1)
        return
    try:
        data = read_json(path)
    except ValueError:  # JSON lines
        yield from read_lines(path, what="row")
        return
    yield from data if isinstance(data, list) else [data]


def _table_rows(path: Path, cut: int) -> Iterator[Any]:
    engine = read_only_sqlite(path)
    try:
        with engine.connect() as conn:
            kind = conn.execute(
                text("SELECT type FROM sqlite_master WHERE name = 'user_relationships'")
            ).scalar()
            if kind != "table":
                found = f"a {kind}, not a table" if kind else "missing"
                raise InputError(str(path), f"user_relationships: {found} (only a table is read)")
            columns = [r[1] for r in conn.execute(text("PRAGMA table_info(user_relationships)"))]
            cells = ", ".join(
                f'substr("{c}", 1, {cut}) AS "{c}"' if c not in NUMBERS else f'"{c}"'
                for c in (c.replace('"', '""') for c in columns)
            )
            rows = conn.execute(text(f"SELECT {cells} FROM user_relationships LIMIT {MAX_ROWS}"))
            for row in rows:
                yield dict(row._mapping)
    except SQLAlchemyError as exc:  # any driver error names the table
        raise InputError(str(path), f"user_relationships: {exc.__class__.__name__}") from None
    finally:
        engine.dispose()


NUMBERS = {"relationship_score", "first_met_time", "last_impression_update", "last_updated"}


def change_of(row: Any, target: Target, deps: Deps, now: float) -> ProfileChange:
    """One row as the profile change it makes, or InputError naming the column (the input
    contract: ``groupmind.importing.contract``)."""
    if isinstance(row, InputError):
        raise row
    if not isinstance(row, dict):
        raise InputError("row", f"expected an object, got {type(row).__name__}")
    if row.get("user_id") in (None, ""):
        raise InputError("user_id", "missing")
    user_id = an_id(row["user_id"], "user_id")
    if not str(row.get("user_name") or "").strip():
        raise InputError("user_name", "missing")
    user_name = a_name(row["user_name"], "user_name")
    platform = a_platform(row["platform"]) if row.get("platform") else target.platform
    if target.chat is not None and platform != target.chat.platform:
        raise InputError(
            "platform", f"{platform!r} is not the platform of --chat ({target.chat.key})"
        )
    chat = target.chat or ChatScope(platform=platform, chat_type="private", chat_id=user_id)
    score = _number(row, "relationship_score", 0.0)
    if not 0.0 <= score <= 1.0:
        raise InputError("relationship_score", f"{score} is outside 0-1")
    stage = str(row.get("relationship_stage") or "") or None
    if stage is not None and stage not in STAGES:
        raise InputError("relationship_stage", f"{stage!r} is not one of {sorted(STAGES)}")
    first_met = _time(row, "first_met_time", deps)
    updated = _time(row, "last_impression_update", deps) or _time(row, "last_updated", deps)
    day = datetime.fromtimestamp(updated or first_met or now, deps.limits.tz).date().isoformat()
    told = {"source": f"{IMPORTED}:mofox", "by": IMPORTED, "at": day}
    facts = [{**f, **told} for f in _facts(row.get("key_facts"))]
    said = row.get("impression_text") or row.get("relationship_text") or ""
    which = "impression_text" if row.get("impression_text") else "relationship_text"
    impression = trim_impression(a_text(said, which, deps.limits)) if said else ""
    aliases = _words(row.get("user_aliases"), "user_aliases")
    raw = json.dumps(
        [platform, user_id, chat.key, row], ensure_ascii=False, sort_keys=True, default=str
    )
    rel = deps.profiles.get_relationship(platform, user_id) or Relationship(
        platform=platform, user_id=user_id, user_name=user_name,
        relationship_score=score, relationship_stage=stage or "stranger",
    )  # fmt: skip
    rel = replace(
        rel,
        aliases=list(dict.fromkeys([*rel.aliases, *aliases])),
        first_met_time=min(t for t in (rel.first_met_time, first_met, now) if t is not None),
        last_impression_update=rel.last_impression_update or updated,
    )  # an existing relationship keeps its score and stage: groupmind's are newer
    learned = deps.profiles.get_learned(chat, user_id) or LearnedProfile(
        platform=platform, user_id=user_id, chat_type=chat.chat_type, chat_id=chat.chat_id,
        user_name=user_name,
    )  # fmt: skip
    history = list(learned.traits.get("history", []))
    keywords = _words(row.get("preference_keywords"), "preference_keywords")
    learned = replace(
        learned,
        impression_text=learned.impression_text or impression,
        key_facts=merge_key_facts(facts, learned.key_facts, history),  # what it has is newer
        preference_keywords=list(dict.fromkeys([*keywords, *learned.preference_keywords])),
        traits={**learned.traits, "history": history,
                IMPORTED: {"from": "mofox user_relationships", "impression": bool(impression)}},
    )  # fmt: skip
    request_id = f"import-mofox-{hashlib.sha1(raw.encode()).hexdigest()[:20]}"
    return ProfileChange(request_id=request_id, relationship=rel, learned=learned)


def _number(row: dict[str, Any], key: str, default: float | None) -> Any:
    value = row.get(key)
    if value in (None, ""):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(key, f"{value!r} is not a number") from None
    if not math.isfinite(number):
        raise InputError(key, f"{value!r} is not a number")
    return number


def _time(row: dict[str, Any], key: str, deps: Deps) -> float | None:
    """Epoch seconds, 1990 to 2200, as every input's time."""
    value = _number(row, key, None)
    return None if value is None else a_time(value, key, deps.limits.tz).timestamp()


def _words(value: Any, column: str) -> list[str]:
    """MoFox keeps lists as comma-separated text (or JSON); each word a name."""
    if isinstance(value, list):
        parts = [str(v) for v in value]
    else:
        parts = str(value or "").replace("，", ",").replace("、", ",").split(",")
    words = [a_name(p, column, MAX_WORD_CHARS) for p in parts if p.strip()]
    if len(words) > MAX_WORDS:
        raise InputError(column, f"has {len(words)} words, over the limit of {MAX_WORDS}")
    return words


MAX_WORD_CHARS = 64


def _facts(value: Any) -> list[dict[str, str]]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            raise InputError("key_facts", "not JSON") from None
    if not isinstance(value, list):
        raise InputError("key_facts", f"expected a list, got {type(value).__name__}")
    if len(value) > MAX_WORDS:
        raise InputError("key_facts", f"has {len(value)} facts, over the limit of {MAX_WORDS}")
    facts = []
    for n, fact in enumerate(value):
        if not isinstance(fact, dict) or not str(fact.get("value") or "").strip():
            raise InputError(f"key_facts[{n}]", 'expected {"type", "value"}')
        kind = str(fact.get("type") or "other")
        value = a_name(fact["value"], f"key_facts[{n}]", MAX_FACT_CHARS)
        facts.append({"type": kind if kind in KEY_FACT_TYPES else "other", "value": value})
    return facts


MAX_FACT_CHARS = 100  # as a key fact a memory job carries


def import_relationships(
    rows: Iterator[Any],
    target: Target,
    deps: Deps,
    *,
    now: float,
    dry_run: bool = False,
    tick: Callable[[int], None] = lambda n: None,
) -> Report:
    """Each row once, atomically: a row applied before (this run's file again, or a run
    that crashed after it) is counted, not applied again."""
    report = Report(dry_run=dry_run)
    n = 0
    while True:
        try:
            row = next(rows, _END)
        except InputError as exc:  # the file failed while it was read: the rest is lost
            report.refuse("file", exc)
            break
        if row is _END:
            break
        tick(1)
        try:
            change = change_of(row, target, deps, now)
        except (InputError, ValueError) as exc:  # a ValueError left: a key no store keeps
            error = exc if isinstance(exc, InputError) else InputError("row", str(exc))
            who = row.get("user_id") if isinstance(row, dict) else None
            report.refuse(f"#{n}" + (f" (user_id {who})" if who else ""), error)
            n += 1
            continue
        n += 1
        if deps.profiles.was_applied(change.request_id):
            report.found("profiles")
        elif dry_run or deps.profiles.apply(change):
            report.add("profiles")
        else:
            report.found("profiles")
    return report
