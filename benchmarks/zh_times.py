"""Chinese time words in talk nobody here wrote: the rules historian's calendar
(``stores.when``, ``nodes.memory.absolute``) beside two maintained offline libraries,
jionlp and Microsoft Recognizers-Text (their own environment: ``make timelibs-venv``;
skipped when it is absent).

Sentences drawn at random (seed 59) among those where any of the three found a time word,
from DialogRE-cn and DuLeMon (the development part: DialogRE train, DuLeMon) and from
DialogRE-cn dev and MemoryBank-cn (the test part, labelled before any system was scored
and never read to change one). Each label is a relative time word and the days it means
(``first`` or ``first/day after the last``), or ``none`` (a duration, 一年; a grade,
二年级; an address, 15号): what an absolute memory must say. Days are counted from the
sentence's time: MemoryBank's day, or Monday 16 November 2026, 10:05 for DialogRE and
DuLeMon (undated talk). Habits (每天晚上), seasons, clock times alone and words whose day
the talk itself contradicts (今天是星期天 on a Wednesday) are not labelled. The texts are
read in place from ``GROUPMIND_SHARED_DATA``, never copied.

An answer is right when the middle of its days falls in the label's and it spans at most
twice as many (a week for "两个星期前" is right; a year for "昨天" is not).

    make bench-times                       # both parts, every system there is
    make bench-times ARGS="--split test --show"
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.common import SHARED_DATA, machine
from nodes.memory.absolute import zh_time
from nodes.memory.lexicon import find_relative
from stores.when import _window

TIMELIBS_PYTHON = Path(__file__).parent / ".timelibs-venv" / "bin" / "python"
UNDATED = "2026-11-16 10:05"  # a Monday
console = Console()

LABELS = """
dialogre-train:299:16 明晚=2026-11-17 明天=2026-11-17
dialogre-train:95:2 今天=2026-11-16
dialogre-train:834:1 一万年=none
dialogre-train:610:1 昨晚=2026-11-15
dialogre-train:160:2 十年=none
dulemon:5:0 今天=2026-11-16
dialogre-train:382:7 一周=none 四天=none
dialogre-train:1059:24 昨天晚上=2026-11-15
dialogre-train:1017:6 明天=2026-11-17
dialogre-train:684:15 明晚=2026-11-17
dialogre-train:378:3 一天=none
dialogre-train:193:5 明年=2027-01-01/2028-01-01
dialogre-train:861:0 今天=2026-11-16
dialogre-train:676:2 四周=none
dialogre-train:129:12 两天前=2026-11-14
dialogre-train:114:20 今天=2026-11-16
dialogre-train:478:6 昨晚=2026-11-15
dialogre-train:820:8 今晚=2026-11-16
dialogre-train:51:7 圣诞=2025-12-25
dialogre-train:403:3 星期五=2026-11-20
dialogre-train:61:6 明早=2026-11-17
dialogre-train:949:5 今晚=2026-11-16
dialogre-train:93:3 一时=none
dialogre-train:729:12 明天=2026-11-17
dialogre-train:324:4 今天=2026-11-16
dialogre-train:379:0 今天=2026-11-16
dialogre-train:104:3 明天=2026-11-17
dialogre-train:744:4 明天=2026-11-17 昨天=2026-11-15
dulemon:3:2 清明节=2027-04-05
dialogre-train:833:0 今晚=2026-11-16
dialogre-train:773:7 五月=none
dulemon:14:6 下周=2026-11-23/2026-11-30
dialogre-train:740:6 今天早上=2026-11-16
dialogre-train:517:1 明天=2026-11-17
dialogre-train:990:0 昨天=2026-11-15
dialogre-train:109:12 周六=2026-11-21 明天=2026-11-17
dialogre-train:441:13 一年=none
dialogre-train:384:7 六年=none
dialogre-train:254:8 一年=none
dialogre-train:779:3 一天=none
dialogre-train:634:7 一个星期=none
dialogre-train:921:5 一个小时=none
dialogre-train:868:32 10秒=none
dialogre-train:148:5 一天=none
dialogre-train:122:15 一天=none
dialogre-train:101:3 一天=none
dialogre-dev:80:1 一天=none
memorybank-cn:陆琳:2023-05-06:0 今天=2023-05-06
dialogre-dev:121:6 35周年=none
memorybank-cn:陈阳:2023-05-04:0 今天=2023-05-04
dialogre-dev:23:19 二年级=none
dialogre-dev:118:7 六年级=none
dialogre-dev:243:6 三个小时前=2026-11-16
dialogre-dev:48:2 两个星期前=2026-10-30/2026-11-06
dialogre-dev:289:5 两个小时=none
dialogre-dev:173:4 15号=none
memorybank-cn:张志强:2023-04-28:1 昨天=2023-04-27
memorybank-cn:王峰:2023-05-06:2 今天=2023-05-06
dialogre-dev:219:11 今晚=2026-11-16
dialogre-dev:180:0 明天=2026-11-17 今天=2026-11-16
dialogre-dev:183:5 两年=none
dialogre-dev:78:8 一年=none
dialogre-dev:35:13 四年级=none
dialogre-dev:253:4 一时=none
memorybank-cn:陆琳:2023-04-28:0 今天=2023-04-28
dialogre-dev:121:7 35年后=2061-01-01/2062-01-01
dialogre-dev:127:6 上星期=2026-11-09/2026-11-16
memorybank-cn:郑思雨:2023-05-02:0 今天=2023-05-02
dialogre-dev:87:0 六个星期前=2026-10-02/2026-10-09
dialogre-dev:120:4 昨晚=2026-11-15
dialogre-dev:69:13 今晚=2026-11-16
memorybank-cn:郑思雨:2023-04-28:0 今天=2023-04-28
dialogre-dev:226:3 今晚=2026-11-16 明天=2026-11-17 6年=none
dialogre-dev:121:0 今年=2026-01-01/2027-01-01
dialogre-dev:316:4 今晚=2026-11-16
memorybank-cn:王峰:2023-05-03:0 今天=2023-05-03
dialogre-dev:39:3 今晚=2026-11-16
memorybank-cn:王峰:2023-04-27:6 今天=2023-04-27 明天=2023-04-28
dialogre-dev:224:18 3分钟前=2026-11-16
memorybank-cn:刘琳:2023-05-04:0 今天=2023-05-04
memorybank-cn:张曼婷:2023-05-03:1 半个小时=none
dialogre-dev:158:14 明天=2026-11-17
dialogre-dev:80:9 两年前=2024-01-01/2025-01-01
memorybank-cn:孙悦:2023-05-03:0 今天=2023-05-03
memorybank-cn:郑思雨:2023-05-04:0 今天=2023-05-04
dialogre-dev:138:4 周末=2026-11-21/2026-11-23
dialogre-dev:62:8 三年=none
memorybank-cn:王峰:2023-05-01:0 今天=2023-05-01
dialogre-dev:92:0 今天=2026-11-16
memorybank-cn:郝明:2023-04-29:0 今天=2023-04-29
memorybank-cn:焦彦:2023-05-02:1 今天=2023-05-02
dialogre-dev:272:6 28年=none
dialogre-dev:274:16 五个月=none 四天=none
memorybank-cn:周立:2023-05-03:1 今天=2023-05-03
memorybank-cn:焦彦:2023-05-01:0 今天=2023-05-01
memorybank-cn:孙悦:2023-04-28:0 今天=2023-04-28
memorybank-cn:焦彦:2023-05-04:0 今天=2023-05-04
memorybank-cn:周立:2023-04-29:0 今天=2023-04-29
"""


@dataclass(frozen=True)
class Label:
    source: str
    text: str
    ref: str
    word: str
    start: int
    days: tuple[date, date] | None  # None: not a time it means


def _days(value: str) -> tuple[date, date] | None:
    if value == "none":
        return None
    first, _, last = value.partition("/")
    start = date.fromisoformat(first)
    return start, date.fromisoformat(last) if last else start + timedelta(days=1)


def sentences() -> dict[str, tuple[str, str]]:
    """Every labelled source's sentence and its time, read in place."""
    out: dict[str, tuple[str, str]] = {}
    bank = json.loads((SHARED_DATA / "memorybank" / "cn" / "memory_bank_cn.json").read_text())
    for user, person in bank.items():
        for day, turns in person["history"].items():
            for n, turn in enumerate(turns):
                out[f"memorybank-cn:{user}:{day}:{n}"] = (turn["query"], f"{day} 12:00")
    for split in ("train", "dev"):
        dialogues = json.loads((SHARED_DATA / "dialogre" / "cn" / f"{split}.json").read_text())
        for d, dialogue in enumerate(dialogues):
            for t, turn in enumerate(dialogue[0]):
                out[f"dialogre-{split}:{d}:{t}"] = (turn.split(":", 1)[-1].strip(), UNDATED)
    path = SHARED_DATA / "dulemon-samples" / "samples.json"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        for t, turn in enumerate(json.loads(line)["conversation"]):
            said = turn.split("\t")[0].split(":", 1)[-1].replace(" ", "")
            out[f"dulemon:{n}:{t}"] = (said, UNDATED)
    return out


def labels(split: str) -> Iterator[Label]:
    said = sentences()
    seen: set[tuple[str, str]] = set()
    for line in LABELS.strip().splitlines():
        source, *pairs = line.split()
        part = "test" if source.startswith(("dialogre-dev", "memorybank-cn")) else "dev"
        if split not in ("all", part):
            continue
        text, ref = said[source]
        for pair in pairs:
            word, _, value = pair.partition("=")
            if (source, word) in seen or word not in text:
                continue  # a line given twice; a word not there is a broken label
            seen.add((source, word))
            yield Label(source, text, ref, word, text.index(word), _days(value))


# --- the systems -------------------------------------------------------------------------

Found = tuple[int, int, date | None, date | None]


def rules_times(text: str, ref: str) -> list[Found]:
    """The historian's: each relative time word it finds (``find_relative``) and the days
    its absolute words say (``zh_time``), read back by the calendar ``stores.when`` reads
    questions with."""
    now = datetime.strptime(ref, "%Y-%m-%d %H:%M")
    out: list[Found] = []
    for found in find_relative(text):
        if found.kind != "time":
            continue
        days = _written_days(zh_time(found.text, now), now)
        out.append((found.start, found.end, *(days or (None, None))))
    return out


def _written_days(written: str, now: datetime) -> tuple[date, date] | None:
    """The days an absolute phrase of the historian's names ("2026年11月9日那一周")."""
    if written.endswith("前后") and "日" in written:  # around a day: a week about it
        span = _window(written[: written.index("日") + 1], now)
        return (
            (span[0].date() - timedelta(days=3), span[0].date() + timedelta(days=4))
            if span
            else None
        )
    if "那一周" in written:
        span = _window(written[: written.index("日") + 1], now)
        return (span[0].date(), span[0].date() + timedelta(days=7)) if span else None
    if "至" in written and "周末" in written:
        span = _window(written[: written.index("至")], now)
        return (span[0].date(), span[0].date() + timedelta(days=2)) if span else None
    if "日" in written:
        span = _window(written[: written.index("日") + 1], now)
        return (span[0].date(), span[1].date()) if span else None
    span = _window(written if written.endswith(("月", "年")) else "", now)
    return (span[0].date(), span[1].date()) if span else None


def library_times(labelled: list[Label], python: Path) -> dict[str, list[list[Found]]]:
    """jionlp's and Recognizers-Text's answers for each sentence, from their environment."""
    texts = list(dict.fromkeys((label.text, label.ref) for label in labelled))
    items = [{"text": t, "ref": r} for t, r in texts]
    done = subprocess.run(
        [str(python), str(Path(__file__).parent / "timelibs_arm.py")],
        input=json.dumps(items), capture_output=True, text=True, check=True, timeout=1800,
    )  # fmt: skip
    answers = dict(zip(texts, json.loads(done.stdout), strict=True))
    out: dict[str, list[list[Found]]] = {"jionlp": [], "recognizers": []}
    for label in labelled:
        for name in out:
            out[name].append([
                (s, e, date.fromisoformat(a) if a else None, date.fromisoformat(b) if b else None)
                for s, e, a, b in answers[(label.text, label.ref)][name]
            ])  # fmt: skip
    return out


# --- scoring -----------------------------------------------------------------------------


def verdict(label: Label, found: list[Found]) -> str:
    """right, wrong (another day), missed (no day for it), false (a day where none is
    meant), or quiet (rightly none)."""
    end = label.start + len(label.word)
    mine = [f for f in found if f[0] < end and f[1] > label.start]
    dated = [f for f in mine if f[2] is not None and f[3] is not None]
    if label.days is None:
        return "false" if dated else "quiet"
    if not dated:
        return "missed"
    first, after = label.days
    for _, _, start, stop in dated:
        assert start is not None and stop is not None
        middle = start + (stop - start) / 2
        if first <= middle < after and (stop - start) <= 2 * (after - first):
            return "right"
    return "wrong"


def score(labelled: list[Label], answers: list[list[Found]]) -> dict[str, Any]:
    counts = Counter(dict.fromkeys(("right", "wrong", "missed", "false", "quiet"), 0))
    counts.update(verdict(label, found) for label, found in zip(labelled, answers, strict=True))
    meant = sum(1 for label in labelled if label.days is not None)
    said = counts["right"] + counts["wrong"] + counts["false"]
    return {
        **counts,
        "meant": meant,
        "not_meant": len(labelled) - meant,
        "recall": counts["right"] / meant if meant else float("nan"),
        "precision": counts["right"] / said if said else float("nan"),
    }


def run(split: str, python: Path, show: bool) -> dict[str, Any]:
    labelled = list(labels(split))
    systems = {"rules (stores.when, absolute)": [rules_times(lb.text, lb.ref) for lb in labelled]}
    if python.exists():
        systems.update(library_times(labelled, python))
    report: dict[str, Any] = {"split": split, "labels": len(labelled), "systems": {}}
    for name, answers in systems.items():
        report["systems"][name] = score(labelled, answers)
        if show:
            for label, found in zip(labelled, answers, strict=True):
                if (v := verdict(label, found)) not in ("right", "quiet"):
                    console.print(f"  {name[:6]} {v}: {label.word} in {label.text[:40]} {found}")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", default="all", choices=("dev", "test", "all"))
    parser.add_argument("--libs", type=Path, default=TIMELIBS_PYTHON,
                        help="the libraries' environment's python (make timelibs-venv)")  # fmt: skip
    parser.add_argument("--show", action="store_true", help="every answer that is not right")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    parts = ("dev", "test") if args.split == "all" else (args.split,)
    reports = [run(part, args.libs, args.show) for part in parts]
    if args.json:
        print(json.dumps({"machine": machine(), "parts": reports}, ensure_ascii=False))
        return
    console.print(f"[bold]Chinese time words[/bold] on {machine()}")
    if not args.libs.exists():
        console.print("jionlp, Recognizers-Text: not run (make timelibs-venv)")
    for report in reports:
        table = Table(title=f"{report['split']} part: {report['labels']} labels")
        for column in ("system", "right", "wrong day", "missed", "a day where none is meant",
                       "recall", "precision"):  # fmt: skip
            table.add_column(column, justify="left" if column == "system" else "right")
        for name, s in report["systems"].items():
            table.add_row(name, f"{s['right']} of {s['meant']}", str(s["wrong"]),
                          str(s["missed"]), f"{s['false']} of {s['not_meant']}",
                          f"{s['recall']:.3f}", f"{s['precision']:.3f}")  # fmt: skip
        console.print(table)


if __name__ == "__main__":
    main()
