"""Copies groupmind made of a bot's data outside its stores, and what forget does to them.

- **Exports** (``groupmind export --out FILE``): each file written is listed in the data
  dir's ``copies.jsonl``. Forget rewrites an export inside the data dir without the lines
  it covers (a forgotten chat's export is deleted); one elsewhere is the operator's to
  handle: it is listed with the lines it holds and the command that deletes it.
- **Experiments** (``<data dir>/experiments/NAME``): each arm ran on a deployment of its
  own (``arms/``), a copy of the dataset's chats. When an experiment of the bot holds a
  covered example, its arm deployments are deleted (every run of an arm starts empty) and
  its per-example files rewritten without those examples; the report keeps its figures.

A line is covered when a message in it is the person's (or the chat's), or quotes or
names the person (``Said``), in the chats the forget reaches.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from domain.scope import ForgetTarget
from stores.said import Said
from stores.sql.engine import read_only_sqlite
from stores.sql.schema import EventDocRow, MessageRow

MANIFEST = "copies.jsonl"


def record(data_dir: Path, *, bot: str, kind: str, path: Path, chat: str = "") -> None:
    """List a copy groupmind wrote (one JSON line, appended)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    line = {"kind": kind, "bot": bot, "path": str(path.resolve()), "chat": chat,
            "at": time.time()}  # fmt: skip
    with (data_dir / MANIFEST).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, ensure_ascii=False) + "\n")


def _messages(value: Any) -> Iterator[dict[str, Any]]:
    """Every message-like object in a JSON value (one with a user or a chat)."""
    if isinstance(value, dict):
        if "user_id" in value or "chat_id" in value:
            yield value
        for inner in value.values():
            yield from _messages(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _messages(inner)


def covers(line: str, target: ForgetTarget, said: Said) -> bool:
    """Whether a JSON line holds something the forget erases."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return False
    found = list(_messages(value))
    if not found:  # an output alone (a reply, memories found): by what it says
        return target.user_id is not None and said.mentioned_in(line)
    for m in found:
        platform = str(m.get("platform") or target.platform)
        if platform != target.platform:
            continue
        chat = target.chat
        if chat is not None and (m.get("chat_type"), str(m.get("chat_id", ""))) != (
            chat.chat_type,
            chat.chat_id,
        ):
            continue
        if target.user_id is None or str(m.get("user_id", "")) == target.user_id:
            return True
        if said.mentioned_in(json.dumps(m, ensure_ascii=False)):
            return True
    return False


def _rewrite(path: Path, target: ForgetTarget, said: Said) -> int:
    """The file without its covered lines (atomically); how many went."""
    kept, gone = [], 0
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if covers(line, target, said):
                gone += 1
            else:
                kept.append(line)
    if gone:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.writelines(kept)
        os.replace(tmp, path)
    return gone


def _arm_holds(db: Path, target: ForgetTarget) -> bool:
    """Whether an arm's deployment stored a message or a memory the target covers."""
    engine = read_only_sqlite(db)
    try:
        with engine.connect() as conn:
            for table in (MessageRow, EventDocRow):
                where = [table.platform == target.platform]
                if target.chat is not None:
                    where += [table.chat_type == target.chat.chat_type,
                              table.chat_id == target.chat.chat_id]  # fmt: skip
                if target.user_id is not None:
                    where.append(table.user_id == target.user_id)
                if conn.execute(select(table.platform).where(*where).limit(1)).first():
                    return True
    except SQLAlchemyError:
        return True  # unreadable: it may hold them, and it is a copy: it goes
    finally:
        engine.dispose()
    return False


def _count(path: Path, target: ForgetTarget, said: Said) -> int:
    with path.open(encoding="utf-8", errors="replace") as fh:
        return sum(1 for line in fh if covers(line, target, said))


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def _report_bot(folder: Path) -> str | None:
    try:
        return str(json.loads((folder / "report.json").read_text(encoding="utf-8"))["bot"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def reach(data_dir: Path, bot: str, target: ForgetTarget, said: Said) -> dict[str, Any]:
    """Forget in the bot's copies: ``exports`` rewritten (lines removed), ``experiments``
    whose arms were deleted, and ``elsewhere``: copies outside the data dir that hold
    covered lines, with the command that deletes each."""
    out: dict[str, Any] = {"exports": {}, "experiments": [], "elsewhere": []}
    for folder in sorted((data_dir / "experiments").glob("*/")):
        if _report_bot(folder) != bot:
            continue
        held = any(_arm_holds(db, target) for db in sorted(folder.glob("arms/*/data/groupmind.db")))
        gone = sum(_rewrite(p, target, said) for p in sorted(folder.glob("examples-*.jsonl")))
        if held or gone:
            shutil.rmtree(folder / "arms", ignore_errors=True)
            out["experiments"].append(folder.name)
    manifest = data_dir / MANIFEST
    seen: set[str] = set()
    for line in manifest.read_text(encoding="utf-8").splitlines() if manifest.exists() else []:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        path = Path(str(entry.get("path", "")))
        if entry.get("bot") != bot or str(path) in seen or not path.exists():
            continue
        seen.add(str(path))
        if entry.get("kind") == "experiment":  # one written with --out beyond the data dir
            if not _inside(path, data_dir):
                holds = sum(_count(p, target, said) for p in path.glob("examples-*.jsonl"))
                if holds:
                    rm = f"rm -r {shlex.quote(str(path))}"
                    out["elsewhere"].append({"path": str(path), "lines": holds, "delete": rm})
            continue
        whole = target.user_id is None and target.chat is not None
        if whole and entry.get("chat") == target.chat.key and _inside(path, data_dir):  # type: ignore[union-attr]
            path.unlink()  # the forgotten chat's own export
            out["exports"][str(path)] = "deleted"
            continue
        if _inside(path, data_dir):
            gone = _rewrite(path, target, said)
            if gone:
                out["exports"][str(path)] = gone
            continue
        holds = _count(path, target, said)
        if holds:
            out["elsewhere"].append(
                {"path": str(path), "lines": holds, "delete": f"rm {shlex.quote(str(path))}"}
            )
    return out
