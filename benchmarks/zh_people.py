"""A Chinese group chat about its members, with paraphrased questions (made here).

Twelve members each say, in the first person, what they play, keep, study, eat...; the
questions name the member and paraphrase the topic, so the only word a question shares
with the right memory is usually the name (小明最近在玩什么游戏 against 我最近入坑了原神,
stored as 小明最近入坑了原神). Several members share a topic, so the name decides. Half the
questions are asked by the member about themselves (我...), which only the asker resolves.

Deterministic: the same members, topics and values on every run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

PEOPLE = (
    "小明",
    "小红",
    "阿杰",
    "老王",
    "莉莉",
    "大伟",
    "静静",
    "浩然",
    "芳芳",
    "子涵",
    "建国",
    "思雨",
)

# topic: (statement, third-person question, first-person question, values)
TOPICS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "game": ("我最近入坑了{v}，每天下班都要玩两把", "{n}最近在玩什么游戏？", "我最近沉迷的是哪款游戏来着？",
             ("原神", "王者荣耀", "塞尔达传说", "星露谷物语", "英雄联盟", "我的世界", "艾尔登法环", "动物森友会")),
    "pet": ("我家新养了一只{v}，特别黏人", "{n}家里有什么小动物？", "我家那个小家伙是什么品种？",
            ("布偶猫", "柯基", "仓鼠", "金毛", "橘猫", "鹦鹉", "乌龟", "垂耳兔")),
    "job": ("下个月我要去{v}入职了", "{n}换到哪家公司上班了？", "我跳槽去的是哪个单位？",
            ("腾讯", "字节跳动", "华为", "阿里巴巴", "美团", "小米", "网易", "京东")),
    "travel": ("国庆我打算去{v}玩一圈", "{n}假期准备去哪儿旅行？", "我长假的出游目的地是哪？",
               ("成都", "大理", "西安", "厦门", "哈尔滨", "青岛", "桂林", "三亚")),
    "food": ("我最爱吃{v}了，一周能吃三次", "{n}最喜欢的美食是什么？", "我最馋的是哪种吃的？",
             ("火锅", "螺蛳粉", "烤鸭", "麻辣烫", "小龙虾", "寿司", "煎饼果子", "酸菜鱼")),
    "sport": ("我每个周末都去{v}，已经坚持半年了", "{n}平时做什么运动锻炼身体？", "我平常靠什么健身来着？",
              ("游泳", "打羽毛球", "爬山", "跑步", "打篮球", "练瑜伽", "骑行", "攀岩")),
    "exam": ("我在准备{v}，压力好大", "{n}正在备考什么？", "我在复习的是什么考试？",
             ("雅思", "考研", "公务员考试", "注册会计师", "驾照科目二", "教师资格证", "托福", "法考")),
    "music": ("我最近单曲循环{v}的歌", "{n}这阵子爱听哪位歌手？", "我最近耳机里放的都是谁？",
              ("周杰伦", "陈奕迅", "林俊杰", "邓紫棋", "五月天", "薛之谦", "李荣浩", "毛不易")),
    "home": ("我搬到{v}住了，离公司近多了", "{n}现在住在什么地方？", "我新家在哪个区？",
             ("浦东", "海淀", "南山区", "天河区", "西湖区", "武侯区", "江北区", "鼓楼区")),
    "drama": ("我这两天在追{v}，太上头了", "{n}最近在看什么剧？", "我最近熬夜看的是哪部剧？",
              ("繁花", "狂飙", "庆余年", "漫长的季节", "三体", "甄嬛传", "琅琊榜", "隐秘的角落")),
    "health": ("我{v}了，这几天请假在家躺着", "{n}身体出了什么毛病？", "我前阵子生的什么病？",
               ("发烧", "重感冒", "扭伤了脚", "智齿发炎", "花粉过敏", "急性肠胃炎", "腰肌劳损", "颈椎病犯")),
    "skill": ("我报了个班开始学{v}", "{n}最近在学什么新本事？", "我新报的兴趣课是什么？",
              ("吉他", "钢琴", "画画", "日语", "摄影", "烘焙", "书法", "街舞")),
}  # fmt: skip
FILLER = ("哈哈哈哈笑死我了", "有人一起吃午饭吗", "收到收到", "这个表情包好可爱", "晚安各位")
TOPICS_PER_PERSON = 8


@dataclass(frozen=True)
class Said:
    id: str
    user: str
    text: str


@dataclass(frozen=True)
class Question:
    text: str
    asker: str  # who asks (the subject of 我 in a first-person question)
    gold: str  # the memory's id


def build(seed: int = 15) -> tuple[list[Said], list[Question]]:
    rng = random.Random(seed)
    said: list[Said] = []
    questions: list[Question] = []
    topics = list(TOPICS)
    for p, person in enumerate(PEOPLE):
        for topic in rng.sample(topics, TOPICS_PER_PERSON):
            statement, third, first, values = TOPICS[topic]
            value = values[(p + rng.randrange(3)) % len(values)]
            mid = f"{p}-{topic}"
            said.append(Said(mid, person, statement.format(v=value)))
            asker = PEOPLE[(p + 1) % len(PEOPLE)]
            questions.append(Question(third.format(n=person), asker, mid))
            questions.append(Question(first, person, mid))
        for f, filler in enumerate(rng.sample(FILLER, 2)):
            said.append(Said(f"{p}-filler{f}", person, filler))
    rng.shuffle(said)  # a chat's order, not one person at a time
    return said, questions
