"""Profile slots stated in DuLeMon's conversation turns (labelled here, by hand, once; the
turns are read in place from ``GROUPMIND_SHARED_DATA`` and never copied).

The rules of ``nodes.memory.fact_rules`` were written against DuLeMon's persona entries
("我是巨蟹座", ``benchmarks.dulemon_slots``); its conversation turns are talk nobody here
wrote them against ("打篮球我是专业的", "和你一样，也是双子座"). Each label is what a turn
states about its speaker (``s``) or the one it addresses (``a``), as ``who:slot:value``,
``|`` between values that each count; a turn without a label states nothing a profile
slot holds, and whatever is learned from it counts against precision. Samples 0-9 are the
development part; 10-19 the test part, never read to change a rule.

    make bench-slots ARGS="--split dev --show"
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import SHARED_DATA, machine
from nodes.memory.fact_rules import ADDRESSEE, SELF, likes, stated

DATA = SHARED_DATA / "dulemon-samples"
TEST_FROM = 10  # samples from here on are the test part

LABELS = """
0:4 s:family:孩子
0:5 a:family:孩子
0:6 s:pet:狗
0:9 a:workplace:IT
0:10 s:family:孩子
0:11 s:like:薯条
0:12 s:family:老婆
0:13 s:like:肉
0:14 s:family:老婆
1:3 a:pet:猫
1:5 a:family:父母
1:6 s:pet:猫
1:8 s:family:爸|哥
1:9 a:family:哥哥
1:11 s:like:喜剧|武林外传
2:1 a:dream:跳伞
2:2 s:partner:男朋友
2:3 a:partner:男朋友
2:5 s:like:篮球
2:6 s:pet:狗
2:7 a:pet:狗
2:8 s:pet:泰迪
2:9 s:like:泰迪
2:10 s:pet:狗|贝贝
2:11 a:pet:狗
3:1 a:school:大学
3:2 s:family:姐姐
3:3 s:pet:狗
3:4 s:like:老电影
3:5 s:like:老电影
3:8 s:like:游戏
3:13 a:family:姐
4:2 s:workplace:邮局
4:3 a:workplace:邮局
4:6 s:workplace:邮局 s:family:父亲
4:7 a:family:父亲 a:pet:狗
4:11 a:pet:狗
5:2 s:like:篮球
5:13 a:job:后卫
6:2 s:like:钓鱼 s:family:爸爸
6:3 a:family:父亲
6:4 s:dream:警察 s:family:父亲
6:6 s:like:冰淇淋 s:family:爸爸
6:10 s:like:跑步
7:4 s:partner:老板
7:13 a:like:唱歌
8:10 s:like:滑板
8:15 s:like:潜水
9:4 s:like:吃
9:5 s:like:披萨
9:8 s:family:表姐
9:12 s:family:堂哥
9:14 s:family:舅舅
10:6 s:school:三年级
10:10 s:like:米老鼠
10:12 s:like:米老鼠
10:13 s:pet:泰迪|小狗
10:14 s:like:小狗
10:15 s:like:鸡块
12:8 s:family:娃|孩子
12:9 a:family:娃|孩子
12:13 a:like:五月天
12:17 s:like:沃尔玛
15:3 s:age:49
15:7 s:star_sign:双子 a:star_sign:双子
15:17 a:job:服务员
16:8 s:workplace:汽车制造厂
17:10 s:family:妈妈
18:3 s:like:贝壳
18:4 s:like:吃
18:10 s:job:机器人
19:4 s:family:孩子
19:5 a:family:孩子
19:8 s:family:妻子
19:10 s:dream:减肥
19:12 s:workplace:养老院
"""


@dataclass(frozen=True)
class Turn:
    key: str  # "sample:turn"
    text: str
    test: bool


def turns(path: Path = DATA / "samples.json") -> Iterator[Turn]:
    for d, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        for t, said in enumerate(json.loads(line)["conversation"]):
            text = said.partition(": ")[2].partition("\t")[0].replace(" ", "")
            yield Turn(f"{d}:{t}", text, d >= TEST_FROM)


def labels(text: str = LABELS) -> dict[str, dict[tuple[str, str], list[str]]]:
    """turn key -> (who, slot) -> the values that count, from ``text``'s lines."""
    out: dict[str, dict[tuple[str, str], list[str]]] = {}
    for line in text.strip().splitlines():
        key, *items = line.split()
        for item in items:
            who, slot, values = item.split(":", 2)
            out.setdefault(key, {})[(who, slot)] = values.split("|")
    return out


def learned(text: str) -> list[tuple[str, str, str]]:
    """(who, slot, value) the rules learn from one turn."""
    who = {SELF: "s", ADDRESSEE: "a"}
    found = [(who[f.subject], f.type, f.value) for f in stated(text) if f.subject in who]
    return found + [("s", "like", v) for v in likes(text)]


def matches(value: str, gold: str) -> bool:
    return gold in value or value in gold


Learned = tuple[str, str, str]  # (who, slot, value)


def judge(
    key: str,
    text: str,
    wanted: dict[tuple[str, str], list[str]],
    got: list[Learned],
    show: bool = False,
) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """(who, found) for each label of one turn and (who, right) for each value learned
    from it; with ``show``, each miss and wrong value printed."""
    found = []
    for (who, slot), values in wanted.items():
        hit = any(w == who and s == slot and any(matches(v, g) for g in values)
                  for w, s, v in got)  # fmt: skip
        found.append((who, hit))
        if show and not hit:
            print(f"  missed {key} {who}:{slot}:{'|'.join(values)}  {text[:80]}")
    judged = []
    for who, slot, value in got:
        ok = any(matches(value, g) for g in wanted.get((who, slot), []))
        judged.append((who, ok))
        if show and not ok:
            print(f"  wrong  {key} {who}:{slot}:{value}  {text[:80]}")
    return found, judged


def score(split: str, show: bool = False) -> dict[str, float | int]:
    gold = labels()
    hit = total = right = judged = 0
    for turn in turns():
        if split != "both" and turn.test != (split == "test"):
            continue
        found, judged_ok = judge(turn.key, turn.text, gold.get(turn.key, {}),
                                 learned(turn.text), show)  # fmt: skip
        total, hit = total + len(found), hit + sum(ok for _, ok in found)
        judged, right = judged + len(judged_ok), right + sum(ok for _, ok in judged_ok)
    return {
        "labels": total,
        "recall": hit / total if total else float("nan"),
        "learned": judged,
        "precision": right / judged if judged else float("nan"),
    }


def run(
    description: str, title: str, score: Callable[[str, bool], Any], show: Callable[..., None]
) -> None:
    """A slots bench's command line: ``--split``, ``--show`` (each miss and wrong value),
    ``--json`` (the figures as one object); else the ``title``, then ``show(split,
    figures)`` per part."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--split", default="both", choices=("dev", "test", "both"))
    parser.add_argument("--show", action="store_true", help="each miss and wrong value")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON object")
    args = parser.parse_args()
    splits = ("dev", "test") if args.split == "both" else (args.split,)
    if args.json:
        print(json.dumps({split: score(split, False) for split in splits}))
        return
    print(title)
    for split in splits:
        show(split, score(split, args.show))


def _show(split: str, r: dict[str, Any]) -> None:
    print(f"{split}: {r['labels']} labels, recall {r['recall']:.3f}; "
          f"{r['learned']} learned, precision {r['precision']:.3f}")  # fmt: skip


def main() -> None:
    run(
        __doc__.split("\n\n")[0],
        f"profile slots in DuLeMon's turns on {machine()} · offline rules",
        score,
        _show,
    )


if __name__ == "__main__":
    main()
