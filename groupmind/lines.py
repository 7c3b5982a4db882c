"""Input files for the command line: JSON Lines, each line judged alone.

A line that is not valid UTF-8, not JSON, refused by validation or failing for any other
reason gets an error naming the line (and the field, when it is one); nothing of it is
stored, and the next line is read. Commands exit non-zero once all lines are done if any
line was refused.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groupmind.errors import one_line
from state.validation import InputError

log = logging.getLogger("groupmind.cli")


@dataclass
class Line:
    number: int
    raw: Any = None  # the parsed JSON, when it parsed
    problem: str | None = None  # why it was refused before anything ran


def read_jsonl(path: Path) -> Iterator[Line]:
    """Each non-blank line, decoded and parsed on its own."""
    with path.open("rb") as fh:
        for number, data in enumerate(fh, start=1):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad = data[exc.start : exc.start + 1].hex()
                yield Line(
                    number, problem=f"not valid UTF-8 (byte 0x{bad} at column {exc.start + 1})"
                )
                continue
            text = text.removeprefix("\ufeff") if number == 1 else text
            if not text.strip():
                continue
            try:
                yield Line(number, raw=json.loads(text))
            except json.JSONDecodeError as exc:
                yield Line(number, problem=f"not valid JSON ({exc.msg}, column {exc.colno})")
            except RecursionError:
                yield Line(number, problem="not valid JSON (nested too deeply)")


def rejected(line: Line, reason: object, id_field: str | None = None) -> dict[str, Any]:
    """The output for an input line that was refused: its id when it has one, and why."""
    result: dict[str, Any] = {}
    raw = line.raw
    if id_field and isinstance(raw, dict) and isinstance(raw.get(id_field), str | int):
        result[id_field] = raw[id_field]
    result["error"] = f"line {line.number}: {reason}"
    return result


def judged(
    line: Line, handle: Callable[[Any], dict[str, Any]], id_field: str | None = None
) -> tuple[dict[str, Any], bool]:
    """``handle(raw)``'s result, or the refusal: (output, refused)."""
    if line.problem is not None:
        return rejected(line, line.problem, id_field), True
    try:
        return handle(line.raw), False
    except InputError as exc:
        return rejected(line, exc, id_field), True
    except Exception as exc:  # noqa: BLE001 - one line's failure never ends the run
        log.warning("line %d failed: %s", line.number, one_line(exc))
        return rejected(line, one_line(exc), id_field), True
