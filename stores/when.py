"""When a question is about: "上周", "前几天", "5月2日", "7月份", "last month", "two days ago",
"in July 2023" as a time window, relative to when it was asked (in the asker's time zone).

The window lifts the memories inside it (``HybridEventStore``); it filters nothing, because
people are loose with time ("上周" said on a Monday may mean the week before last).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

# --- the calendar words and arithmetic the historian (nodes/memory/absolute.py) shares ---

ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
             "八": 8, "九": 9, "几": 3, "半": 0}  # fmt: skip  # 几: a few
EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
              "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}  # fmt: skip
EN_VAGUE = {"a few": 3, "a couple of": 2, "couple of": 2, "several": 4}
ZH_DAY_OFFSET = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "今天": 0, "今日": 0,
                 "明天": 1, "明日": 1, "后天": 2, "大后天": 3}  # fmt: skip
ZH_DAYPART = {
    "昨晚": (-1, "晚上"), "昨夜": (-1, "夜里"), "今晚": (0, "晚上"), "今夜": (0, "夜里"),
    "明晚": (1, "晚上"), "今早": (0, "早上"), "今晨": (0, "早上"), "明早": (1, "早上"),
}  # fmt: skip
EN_DAY_OFFSET = {"the day before yesterday": -2, "yesterday": -1, "today": 0, "tonight": 0,
                 "tomorrow": 1, "the day after tomorrow": 2}  # fmt: skip


def zh_number(text: str) -> int:
    """二十三, 十五, 3, 两 -> an int (几: 3)."""
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + (ZH_DIGITS.get(text[1:], 0) if len(text) > 1 else 0)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return ZH_DIGITS.get(tens, 1) * 10 + (ZH_DIGITS.get(ones, 0) if ones else 0)
    return ZH_DIGITS.get(text, 1)


def en_number(text: str) -> int:
    t = text.lower()
    return int(t) if t.isdigit() else EN_NUMBERS.get(t, EN_VAGUE.get(t, 1))


def month_shift(d: date, months: int) -> date:
    """The first day of the month ``months`` from ``d``'s."""
    index = d.year * 12 + d.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def week_start(d: date, weeks: int = 0) -> date:
    """The Monday of ``d``'s week, ``weeks`` weeks on."""
    return d - timedelta(days=d.weekday()) + timedelta(weeks=weeks)


# --- the span a question is about ----------------------------------------------------------

# longest first: 大前天 before 前天
_ZH_DAYS = sorted([*ZH_DAY_OFFSET.items(), *((w, d) for w, (d, _) in ZH_DAYPART.items())],
                  key=lambda wd: -len(wd[0]))  # fmt: skip

ZH_AGO = re.compile(
    r"([一二两三四五六七八九十几半\d]+)(天|日|周|个星期|个礼拜|个月|年)(?:以前|之前|前)"
)
ZH_SPAN = re.compile(
    r"(上|这|本|上上)个?(周|星期|礼拜|月)|(去|今|前)年|前几天|这几天|最近|近来|前阵子|前段时间"
)
ZH_DATE = re.compile(r"(?:(\d{4})年)?(\d{1,2})月(\d{1,2})[日号]")
EN_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December")  # fmt: skip
EN_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# month name or its first three letters -> its number
EN_MONTH = {form: i for i, m in enumerate(EN_MONTHS, 1) for form in (m.lower(), m[:3].lower())}
_MONTH = r"(" + "|".join(sorted(EN_MONTH, key=len, reverse=True)) + r")\.?"
EN_DATE = re.compile(  # May 4th, May 4, 2024 / the 4th of May
    rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?"
    rf"|\b(\d{{1,2}})(?:st|nd|rd|th)?\s+of\s+{_MONTH}\b(?:,?\s+(\d{{4}}))?",
    re.IGNORECASE,
)
# a month with no day: "in July 2023", "during September", "2023年7月", "7月份"; a month
# name alone is no date ("I may go", "March on"): a preposition or a year says it is one
EN_MONTH_SPAN = re.compile(
    rf"\b(?:in|during|of|throughout|early|late|mid-?|the (?:beginning|start|end) of)\s+"
    rf"{_MONTH}(?!\s*\d{{1,2}}\b)(?:,?\s+(\d{{4}}))?\b|\b{_MONTH},?\s+(\d{{4}})\b",
    re.IGNORECASE,
)
ZH_MONTH_SPAN = re.compile(
    r"(?:(\d{4})年)?(?<![个几\d])(\d{1,2}|十[一二]?|[一二三四五六七八九])月(?:份)?(?![\d一二三四五六七八九十]+[日号])"
)
YEAR_SPAN = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d{2})\b|((?:19|20)\d{2})年(?!\d)")
EN_AGO = re.compile(
    r"\b(a few|a couple of|couple of|several|an?|one|two|three|four|five|six|seven|eight|nine"
    r"|ten|\d+) (day|week|month|year)s? ago\b",
    re.IGNORECASE,
)
EN_SPAN = re.compile(
    r"\b(last|this) (week|month|year|weekend)\b|\b(recently|lately|the other day)\b", re.IGNORECASE
)
EN_DAYS = re.compile(
    r"\b(?:" + "|".join(sorted(EN_DAY_OFFSET, key=len, reverse=True)) + r")\b", re.IGNORECASE
)


def _day(d: date, now: datetime) -> tuple[datetime, datetime]:
    start = datetime(d.year, d.month, d.day, tzinfo=now.tzinfo)
    return start, start + timedelta(days=1)


def _month(d: date, now: datetime) -> tuple[datetime, datetime]:
    """The month that starts on ``d``."""
    nxt = month_shift(d, 1)
    return datetime(d.year, d.month, 1, tzinfo=now.tzinfo), datetime(
        nxt.year, nxt.month, 1, tzinfo=now.tzinfo
    )


def _back(now: datetime, n: int, unit: str) -> tuple[datetime, datetime]:
    """Around n units before now: a day for days, a week either side for weeks, ..."""
    today = now.date()
    if unit in ("天", "日", "day"):
        return _day(today - timedelta(days=n), now)
    if unit in ("周", "个星期", "个礼拜", "week"):
        mid = now - timedelta(weeks=n)
        return mid - timedelta(days=4), mid + timedelta(days=4)
    if unit in ("个月", "month"):
        return _month(month_shift(today, -n), now)
    year = today.year - n
    return datetime(year, 1, 1, tzinfo=now.tzinfo), datetime(year + 1, 1, 1, tzinfo=now.tzinfo)


def window_of(text: str, now: datetime) -> tuple[float, float] | None:
    """The time span ``text`` asks about, as epoch seconds [start, end), or None."""
    span = _window(text, now)
    return (span[0].timestamp(), span[1].timestamp()) if span else None


def _window(text: str, now: datetime) -> tuple[datetime, datetime] | None:
    today = now.date()
    if m := ZH_DATE.search(text):
        return _date(m.group(1), int(m.group(2)), m.group(3), now)
    if m := EN_DATE.search(text):
        if m.group(1):  # May 4th
            return _date(m.group(3), EN_MONTH[m.group(1).lower()], m.group(2), now)
        return _date(m.group(6), EN_MONTH[m.group(5).lower()], m.group(4), now)
    if m := EN_DAYS.search(text):
        return _day(today + timedelta(days=EN_DAY_OFFSET[m.group(0).lower()]), now)
    for word, offset in _ZH_DAYS:
        if word in text:
            return _day(today + timedelta(days=offset), now)
    if m := ZH_AGO.search(text):
        return _back(now, zh_number(m.group(1)), m.group(2))
    if m := EN_AGO.search(text):
        return _back(now, en_number(m.group(1)), m.group(2).lower())
    if m := ZH_SPAN.search(text):
        return _span(m.group(0), now)
    if m := EN_SPAN.search(text):
        return _span(m.group(0).lower(), now)
    if m := EN_MONTH_SPAN.search(text):
        name, year = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        return _in_month(year, EN_MONTH[name.lower()], now)
    if m := ZH_MONTH_SPAN.search(text):
        return _in_month(m.group(1), zh_number(m.group(2)), now)
    if m := YEAR_SPAN.search(text):
        year = int(m.group(1) or m.group(2))
        return datetime(year, 1, 1, tzinfo=now.tzinfo), datetime(year + 1, 1, 1, tzinfo=now.tzinfo)
    return None


def _in_month(year: str | None, month: int, now: datetime) -> tuple[datetime, datetime] | None:
    """The month named; with no year, the last such month up to this one."""
    if not 1 <= month <= 12:
        return None
    y = int(year) if year else now.year - (month > now.month)
    return _month(date(y, month, 1), now)


def _date(
    year: str | None, month: int, day: str, now: datetime
) -> tuple[datetime, datetime] | None:
    """The day named; with no year, the last such day up to today ("5月2日" asked in March:
    last year's)."""
    today = now.date()
    try:
        d = date(int(year) if year else today.year, month, int(day))
    except ValueError:
        return None
    if not year and d > today:
        d = d.replace(year=d.year - 1)
    return _day(d, now)


def _span(word: str, now: datetime) -> tuple[datetime, datetime]:
    today = now.date()
    back = 2 if word.startswith("上上") else 1 if word[0] in "上l" else 0  # 上周, last week
    if word[-1] in "周期拜" or word.endswith("week") or word.endswith("weekend"):
        start = _day(week_start(today, -back), now)[0]
        return start, start + timedelta(weeks=1)
    if word.endswith("月") or word.endswith("month"):
        return _month(month_shift(today, -back), now)
    if word.endswith("年") or word.endswith("year"):
        year = today.year - {"去": 1, "前": 2, "l": 1}.get(word[0], 0)
        return datetime(year, 1, 1, tzinfo=now.tzinfo), datetime(year + 1, 1, 1, tzinfo=now.tzinfo)
    if word in ("前几天", "the other day", "前阵子", "前段时间"):
        return now - timedelta(days=10 if word in ("前阵子", "前段时间") else 6), now - timedelta(
            days=1
        )
    return now - timedelta(days=14), now  # 最近 / 这几天 / recently / lately
