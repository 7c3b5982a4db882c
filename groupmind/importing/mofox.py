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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from domain.people import KEY_FACT_TYPES, RELATIONSHIP_STAGES
from domain.scope import ChatScope
from groupmind.importing.report import Report
from nodes.deps import Deps
from nodes.memory.profile_change import merge_key_facts
from state.validation import InputError
from stores.base import LearnedProfile, ProfileChange, Relationship

STAGES = {stage for _, stage in RELATIONSHIP_STAGES}
IMPORTED = "imported"  # the provenance of everything an import wrote


@dataclass(frozen=True)
class Target:
    platform: str  # for rows without a platform column
    chat: ChatScope | None  # None: each person's own private chat


def read_rows(path: Path) -> Iterator[Any]:
    """The table's rows: from a SQLite database, a JSON list, or JSON lines."""
    head = path.open("rb").read(16) if path.exists() else b""
    if not head:
        raise InputError(str(path), "no such file, or empty")
    if head.startswith(b"SQLite format 3"):
        engine = create_engine(f"sqlite:///file:{path.resolve()}?mode=ro&uri=true")
        try:
            with engine.connect() as conn:
                yield from (
                    dict(r._mapping) for r in conn.execute(text("SELECT * FROM user_relationships"))
                )
        except Exception as exc:  # noqa: BLE001 - any driver error names the table
            raise InputError(
                str(path), f"user_relationships: {exc.__class__.__name__}: {exc}"
            ) from None
        finally:
            engine.dispose()
        return
    body = path.read_text(encoding="utf-8")
    try:
        data = json.loads(body)
        yield from data if isinstance(data, list) else [data]
    except json.JSONDecodeError:  # JSON lines: a bad line is that row's error, not the file's
        for line in body.splitlines():
            if line.strip():
                yield _decoded(line)


def _decoded(line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        return InputError("row", f"not JSON ({exc.msg})")


def change_of(row: Any, target: Target, deps: Deps, now: float) -> ProfileChange:
    """One row as the profile change it makes, or InputError naming the column."""
    if isinstance(row, InputError):
        raise row
    if not isinstance(row, dict):
        raise InputError("row", f"expected an object, got {type(row).__name__}")
    user_id = str(row.get("user_id") or "").strip()
    if not user_id:
        raise InputError("user_id", "missing")
    user_name = str(row.get("user_name") or "").strip()
    if not user_name:
        raise InputError("user_name", "missing")
    platform = str(row.get("platform") or target.platform)
    chat = target.chat or ChatScope(platform=platform, chat_type="private", chat_id=user_id)
    score = _number(row, "relationship_score", 0.0)
    if not 0.0 <= score <= 1.0:
        raise InputError("relationship_score", f"{score} is outside 0-1")
    stage = str(row.get("relationship_stage") or "") or None
    if stage is not None and stage not in STAGES:
        raise InputError("relationship_stage", f"{stage!r} is not one of {sorted(STAGES)}")
    first_met = _number(row, "first_met_time", None)
    updated = _number(row, "last_impression_update", None) or _number(row, "last_updated", None)
    day = datetime.fromtimestamp(updated or first_met or now).date().isoformat()
    told = {"source": f"{IMPORTED}:mofox", "by": IMPORTED, "at": day}
    facts = [{**f, **told} for f in _facts(row.get("key_facts"))]
    impression = str(row.get("impression_text") or row.get("relationship_text") or "").strip()
    aliases = _words(row.get("user_aliases"))
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
    learned = replace(
        learned,
        impression_text=learned.impression_text or impression,
        key_facts=merge_key_facts(facts, learned.key_facts, history),  # what it has is newer
        preference_keywords=list(
            dict.fromkeys([*_words(row.get("preference_keywords")), *learned.preference_keywords])
        ),
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
        return float(value)
    except (TypeError, ValueError):
        raise InputError(key, f"{value!r} is not a number") from None


def _words(value: Any) -> list[str]:
    """MoFox keeps lists as comma-separated text (or JSON)."""
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    parts = str(value or "").replace("，", ",").replace("、", ",").split(",")
    return [p.strip() for p in parts if p.strip()]


def _facts(value: Any) -> list[dict[str, str]]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise InputError("key_facts", "not JSON") from None
    if not isinstance(value, list):
        raise InputError("key_facts", f"expected a list, got {type(value).__name__}")
    facts = []
    for n, fact in enumerate(value):
        if not isinstance(fact, dict) or not str(fact.get("value") or "").strip():
            raise InputError(f"key_facts[{n}]", 'expected {"type", "value"}')
        kind = str(fact.get("type") or "other")
        facts.append({"type": kind if kind in KEY_FACT_TYPES else "other",
                      "value": str(fact["value"]).strip()})  # fmt: skip
    return facts


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
    for n, row in enumerate(rows):
        tick(1)
        try:
            change = change_of(row, target, deps, now)
        except InputError as exc:
            who = row.get("user_id") if isinstance(row, dict) else None
            report.refuse(f"#{n}" + (f" (user_id {who})" if who else ""), exc)
            continue
        if deps.profiles.was_applied(change.request_id):
            report.found("profiles")
        elif dry_run or deps.profiles.apply(change):
            report.add("profiles")
        else:
            report.found("profiles")
    return report
