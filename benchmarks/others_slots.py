"""Profile slots one member states about another, in DialogRE-cn train's talk (labelled
here, by hand, once; the dialogues are read in place from ``GROUPMIND_SHARED_DATA`` and
never copied).

The turns are those where another member of the dialogue is named with a fact's cue in
the next words (是, 住在, 男朋友, 妹妹, 岁, 喜欢, 订婚…): 358 of DialogRE-cn train's turns, most
of them naming someone only to address them ("莫妮卡，你美好的16岁是几百万年前"). Each label
is what a turn states about its speaker (``s``), the one it addresses (``a``: the member
it calls by name, or the one it answers) or a member it names, as ``who:slot:value`` with
``|`` between values that each count; a turn without a label states nothing a profile
slot holds, and whatever the rules learn from it counts against precision. Spouses are
``family``, as in DuLeMon's labels (``benchmarks.turn_slots``). Dialogues 0-499 are the
development part; 500 on the test part, never read to change a rule.

    make bench-slots ARGS="--split dev --show"   # or: python -m benchmarks.others_slots
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import SHARED_DATA, machine
from benchmarks.memory_sets import SPEAKER, speaker_names
from benchmarks.turn_slots import judge, labels, run
from nodes.memory.fact_rules import ADDRESSEE, SELF, stated

DATA = SHARED_DATA / "dialogre" / "cn" / "train.json"
TEST_FROM = 500  # dialogues from here on are the test part
CUE = re.compile(
    r"是(?:个|一个|一名|一位)?|住在|在.{0,6}(?:工作|上班|上学)|男朋友|女朋友|男友|女友|老婆|老公|"
    r"丈夫|妻子|妹妹|姐姐|哥哥|弟弟|妈妈|爸爸|儿子|女儿|岁|喜欢|讨厌|来自|养了|结婚|订婚|怀孕|约会"
)
CUE_SPAN = 14  # characters after the name

LABELS = """
50:7 胡志:job:教练
62:5 a:job:演员
93:5 a:family:妹妹
116:0 s:family:姑姑
236:2 s:family:儿子
264:0 s:dislike:骗子
273:1 让·莱斯特:job:数据库专家 乔伊·崔比安尼:job:明星|演员
281:9 a:age:31
296:9 s:partner:莫妮卡|未婚妻 莫妮卡:partner:钱德勒|未婚夫
315:1 乔伊:job:明星|演员
345:2 伊丽莎白:partner:男友
375:7 s:family:孩子
415:7 s:partner:男朋友
418:2 莫妮卡:family:爸爸
529:5 s:family:丈夫
539:0 德克:job:演员
556:2 s:partner:瑞秋 瑞秋:partner:男友|罗斯
636:7 a:job:摄影师
648:8 罗斯:family:妹妹
648:11 钱德勒:dislike:感恩节
673:2 s:family:罗斯|丈夫 罗斯:family:瑞秋|妻子
683:6 文斯:job:消防员
685:10 s:family:妹妹
695:13 s:job:演员
701:1 a:family:妹妹
701:5 瑞秋:family:妹妹
701:13 a:family:妹妹
757:6 s:family:父母
785:5 s:job:服务员
817:0 s:family:妹妹
827:1 a:family:爸爸
832:0 s:family:父母
843:0 a:family:父母
878:9 s:partner:女朋友
940:3 a:family:女儿
1035:1 s:workplace:餐厅
1045:1 a:family:妈妈
"""


@dataclass(frozen=True)
class Turn:
    key: str  # "dialogue:turn"
    text: str
    members: tuple[str, ...]  # the dialogue's named speakers, the turn's own first
    test: bool


def turns(path: Path = DATA) -> Iterator[Turn]:
    """The turns that name another member with a fact's cue after the name."""
    for d, (said, facts) in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        names = speaker_names(said, facts)
        members = [n for n in dict.fromkeys(names.values()) if len(n) > 1]
        for t, turn in enumerate(said):
            if not (m := SPEAKER.match(turn)):
                continue
            own, text = names.get(m.group(1), m.group(1)), m.group(2).strip()
            others = [n for n in members if n != own and n in text]
            if any(CUE.search(text, text.index(n), text.index(n) + CUE_SPAN) for n in others):
                ordered = (own, *(n for n in members if n != own))
                yield Turn(f"{d}:{t}", text, ordered, d >= TEST_FROM)


def learned(turn: Turn) -> list[tuple[str, str, str]]:
    """(who, slot, value) the rules learn from one turn, the chat's names known."""
    who = {SELF: "s", ADDRESSEE: "a", turn.members[0]: "s"}
    return [
        (who.get(f.subject, f.subject), f.type, f.value) for f in stated(turn.text, turn.members)
    ]


def score(split: str, show: bool = False) -> dict[str, float | int]:
    """Recall and precision for the turn's own speaker (self) and for others."""
    gold = labels(LABELS)
    counts = dict.fromkeys(("self", "self_hit", "others", "others_hit", "learned", "right",
                            "learned_others", "right_others", "turns"), 0)  # fmt: skip
    for turn in turns():
        if split != "both" and turn.test != (split == "test"):
            continue
        counts["turns"] += 1
        found, judged = judge(turn.key, turn.text, gold.get(turn.key, {}), learned(turn), show)
        for who, hit in found:
            part = "self" if who == "s" else "others"
            counts[part] += 1
            counts[f"{part}_hit"] += hit
        for who, ok in judged:
            counts["learned"] += 1
            counts["right"] += ok
            if who != "s":
                counts["learned_others"] += 1
                counts["right_others"] += ok
    return {
        **counts,
        "recall_self": _share(counts["self_hit"], counts["self"]),
        "recall_others": _share(counts["others_hit"], counts["others"]),
        "precision": _share(counts["right"], counts["learned"]),
        "precision_others": _share(counts["right_others"], counts["learned_others"]),
    }


def _share(part: int, whole: int) -> float:
    return part / whole if whole else float("nan")


def _show(split: str, r: dict[str, float | int]) -> None:
    print(f"{split}: {r['turns']} turns · about others: {r['others']} labels, recall "
          f"{r['recall_others']:.3f}, {r['learned_others']} learned, precision "
          f"{r['precision_others']:.3f} · about the speaker: {r['self']} labels, recall "
          f"{r['recall_self']:.3f} · all learned: {r['learned']}, precision "
          f"{r['precision']:.3f}")  # fmt: skip


def main() -> None:
    run(
        __doc__.split("\n\n")[0],
        f"profile slots members state about each other (DialogRE-cn train) on {machine()}"
        " · offline rules",
        score,
        _show,
    )


if __name__ == "__main__":
    main()
