"""jionlp and Microsoft Recognizers-Text on Chinese time words, in their own environment
(``make timelibs-venv``): ``benchmarks.zh_times`` runs this file there. Imports nothing of
groupmind.

Reads a JSON list of ``{"text", "ref"}`` (ref: "YYYY-MM-DD HH:MM") on stdin; writes, per
item and library, each time expression found as ``[start, end, first day, day after the
last]`` (days as "YYYY-MM-DD"; both null for a duration or what it could not resolve).
"""

from __future__ import annotations

import json
import sys
import time
from datetime import date, datetime, timedelta
from typing import Any


def _day(value: str) -> date:
    return datetime.strptime(value[:10], "%Y-%m-%d").date()


def _span(first: str, last: str, exclusive: bool) -> tuple[str, str] | None:
    try:
        start, end = _day(first), _day(last)
    except ValueError:  # "inf", a bare clock time
        return None
    end = end if exclusive and end > start else end + timedelta(days=1)
    return start.isoformat(), end.isoformat()


def jionlp_times(text: str, ref: datetime) -> list[list[Any]]:
    import jionlp

    out: list[list[Any]] = []
    try:
        found = jionlp.ner.extract_time(text, time_base=time.mktime(ref.timetuple()))
    except Exception:  # noqa: BLE001 - a library failure is a miss, not the bench's end
        return out
    for item in found:
        start, end = item["offset"]
        detail = item.get("detail") or {}
        times = detail.get("time")
        span = _span(times[0], times[1], False) if isinstance(times, list) else None
        out.append([start, end, *(span or (None, None))])
    return out


def recognizers_times(text: str, ref: datetime) -> list[list[Any]]:
    from recognizers_date_time import DateTimeOptions, recognize_datetime
    from recognizers_text import Culture

    out: list[list[Any]] = []
    try:
        found = recognize_datetime(text, Culture.Chinese, DateTimeOptions.NONE, ref)
    except Exception:  # noqa: BLE001
        return out
    for item in found:
        values = (item.resolution or {}).get("values") or []
        span = None
        if values:  # two readings (last Friday, next Friday): the later, as a plan is read
            v = values[-1]
            if v.get("type") == "date" and v.get("value", "")[:1].isdigit():
                span = _span(v["value"], v["value"], False)
            elif v.get("type") in ("daterange", "datetimerange") and "start" in v:
                span = _span(v["start"], v["end"], v["type"] == "daterange")
            elif v.get("type") == "datetime" and v.get("value", "")[:1].isdigit():
                span = _span(v["value"], v["value"], False)
        out.append([item.start, item.end + 1, *(span or (None, None))])
    return out


def main() -> None:
    import contextlib

    with contextlib.redirect_stdout(sys.stderr):  # jionlp prints a banner when imported
        import jionlp  # noqa: F401
    items = json.load(sys.stdin)
    results = []
    for item in items:
        ref = datetime.strptime(item["ref"], "%Y-%m-%d %H:%M")
        results.append({
            "jionlp": jionlp_times(item["text"], ref),
            "recognizers": recognizers_times(item["text"], ref),
        })  # fmt: skip
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
