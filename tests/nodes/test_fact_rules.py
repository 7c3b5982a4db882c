"""Key facts from what people say about themselves and about each other."""

from __future__ import annotations

import pytest

from nodes.memory.fact_rules import (
    ADDRESSEE,
    SELF,
    Stated,
    _clauses,
    acceptable,
    likes,
    stated,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我今年25岁", [("age", "25岁")]),
        ("我20多岁了", [("age", "20多岁")]),
        ("我是巨蟹座的", [("star_sign", "巨蟹座")]),
        ("我的生日是3月8日", [("birthday", "3月8日")]),
        ("我是一名厨师，在北京工作", [("job", "厨师"), ("workplace", "北京")]),
        ("我在一家餐馆当服务员", [("job", "服务员"), ("workplace", "餐馆")]),
        ("我是银行出纳员", [("job", "银行出纳员")]),
        ("我在腾讯上班", [("workplace", "腾讯")]),
        ("我今年读大二", [("school", "大二")]),
        ("我住在上海，老家是湖南", [("location", "上海"), ("hometown", "湖南")]),
        ("我叫小明，青岛人", []),  # the name is an alias (profile_rules); 青岛人 has no 是
        ("我是北京人", [("hometown", "北京")]),
        ("我男朋友是罗斯", [("partner", "罗斯")]),
        ("我有孩子，还有一条狗", [("family", "有孩子"), ("pet", "狗")]),
        ("我有一只叫巴爷的德国牧羊犬", [("pet", "德国牧羊犬（巴爷）")]),
        ("我害怕蝎子", [("dislike", "蝎子")]),
        # the first value of a message stands: the second clause is the same company
        ("我在IT部门工作，在同一家公司工作了15年", [("workplace", "IT部门")]),
        ("I am 25 years old", [("age", "25")]),
        ("I work at Google as a designer", [("workplace", "Google")]),
        ("My wife is Carol", [("partner", "Carol")]),
        ("I live in Boston now", [("location", "Boston")]),
        ("I'm a Leo", [("star_sign", "Leo")]),
    ],
)
def test_self_statements_fill_slots(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(s.type, s.value) for s in stated(text) if s.subject == SELF] == expected


@pytest.mark.parametrize(
    "text",
    [
        "我不是医生",  # negated
        "你是医生吗？",  # a question
        "我住在那边",  # a place word is not a place
        "我住在这里",
        "他是厨师",  # 他 is nobody the rules know: no subject, no fact
        "这里景色很美",
        "I'm not sure",
    ],
)
def test_questions_negations_pronouns_and_place_words_state_nothing(text: str) -> None:
    assert stated(text, ("小明",)) == []


def test_what_others_say_is_credited_to_the_person_meant() -> None:
    # the cases: 你是厨师 -> the person addressed; 小明是医生 -> 小明
    assert stated("你是厨师吧") == [Stated(ADDRESSEE, "job", "厨师")]
    assert stated("小明是医生，住在杭州", ("小明", "小红")) == [
        Stated("小明", "job", "医生"),
        Stated("小明", "location", "杭州"),
    ]
    assert stated("You're a nurse") == [Stated(ADDRESSEE, "job", "nurse")]


@pytest.mark.parametrize(
    ("kind", "value", "ok"),
    [
        ("location", "她", False),
        ("location", "那个地方", False),
        ("location", "一起", False),
        ("location", "杭州", True),
        ("location", "好厨师", False),  # jieba: not a place
        ("job", "好厨师", True),
        ("like", "你", False),
    ],
)
def test_values_that_are_pronouns_or_place_words_are_refused(
    kind: str, value: str, ok: bool
) -> None:
    assert acceptable(kind, value) is ok


def test_likes_are_the_speakers_own() -> None:
    assert likes("我超级爱吃肉") == ["吃肉"]
    assert likes("我最喜欢的颜色是灰色") == ["灰色"]
    assert likes("我喜欢传统风格的绘画") == ["传统风格的绘画"]
    assert likes("你喜欢什么？我喜欢你") == []
    assert likes("I really love hiking and swimming") == ["hiking"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("这周日，我老婆在家做大餐", [(SELF, "family", "有老婆")]),
        ("最近我的男朋友生病了", [(SELF, "partner", "男朋友")]),
        ("我吃的面包是我表姐做的", [(SELF, "family", "有表姐")]),
        ("我爸可以和我哥换着开车", [(SELF, "family", "有爸爸")]),  # a message's first stands
        ("那你男朋友身体好些了吗", [(ADDRESSEE, "partner", "男朋友")]),  # presumed, asked
        ("你家狗狗是公的还是母的呢", [(ADDRESSEE, "pet", "狗狗")]),
        ("我在空间里看到了你养的猫咪的照片", [(ADDRESSEE, "pet", "猫咪")]),
        ("我们的孩子要变成胖子了", [(SELF, "family", "有孩子")]),
    ],
)
def test_kin_partners_and_pets_someone_owns_are_theirs(
    text: str, expected: list[tuple[str, str, str]]
) -> None:
    assert [(s.subject, s.type, s.value) for s in stated(text)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # from DialogRE-cn train's turns: what one member says another has
        ("你们大多数人不认识我, 我是瑞秋的男友...", [("瑞秋", "partner", "男友")]),
        ("你好，我是罗斯的妹妹。", [("罗斯", "family", "有妹妹")]),
        ("瑞秋的猫又跑出去了", [("瑞秋", "pet", "猫")]),
        # with no 的 a kin word after a name is what they are called (Uncle Joey)
        ("你今天跟乔伊叔叔玩得开心吗", []),
        ("嗨，乔伊的姐妹们！", []),  # 姐妹们: not one sister
        ("她的男朋友是医生", []),  # nobody named
        # a denial or a wish, as for 我 / 你 (不是我的女朋友, 做你的妻子)
        ("我不是瑞秋的男友", []),
        ("我想做瑞秋的男朋友", []),
        ("他没有罗斯的妹妹那么高", []),
    ],
)  # fmt: skip
def test_what_a_member_is_said_to_have_is_theirs(
    text: str, expected: list[tuple[str, str, str]]
) -> None:
    found = stated(text, ("瑞秋", "罗斯", "乔伊"))
    assert [(s.subject, s.type, s.value) for s in found] == expected


@pytest.mark.parametrize(
    "text",
    [
        "我的妈呀，吓死我了",
        "你妈的，气死我了",
        "我和姐妹们去逛街",
        "我哥们说的",
        "你不是我的女朋友了",
        "你求我做你的妻子！",
        "她的男朋友是医生",  # someone else's
        "我的老板很凶",  # no kin
    ],
)
def test_exclamations_curses_friends_and_denials_own_nobody(text: str) -> None:
    assert [s for s in stated(text) if s.type in ("family", "partner", "pet")] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("哈哈，我不是天秤是处女呀", [("star_sign", "处女座")]),  # a sign for a sign
        ("我是巨蟹！", [("star_sign", "巨蟹座")]),
        ("我不是老师是医生", [("job", "医生")]),
        ("我不是天秤座，是天蝎座", [("star_sign", "天蝎座")]),
        ("我是处女", []),  # 处女, 狮子, 射手 without 座 are other words
        ("我是狮子", []),
        ("我不是处女", []),
    ],
)
def test_a_correction_states_what_follows_the_denial(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert [(s.type, s.value) for s in stated(text) if s.subject == SELF] == expected


def test_what_the_speaker_likes_said_of_it() -> None:
    assert likes("我今天去钓鱼了，钓鱼是我和爸爸都喜欢的活动") == ["钓鱼"]
    assert likes("他是我最喜欢的歌手") == []  # a person, not a taste


def mine(text: str) -> set[tuple[str, str]]:
    return {(f.type, f.value) for f in stated(text) if f.subject == SELF}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Do you live in the states? I live in california..", ("location", "california")),
        ("Hello I am living in usa.", ("location", "usa")),
        ("Brrrrr, I am from north carolina myself.", ("hometown", "north carolina myself")),
        ("I moved to the us around 12 years ago.", ("location", "the us")),
        ("Im a freelance programmer.", ("job", "freelance programmer")),
        ("I work at a doctor's office as an assistant.", ("workplace", "a doctor's office")),
        ("I have two dogs who love steaks like me.", ("pet", "dogs")),
        ("I'm married with two kids.", ("partner", "married")),
        ("My wife is a lawyer and yourself?", ("partner", "wife")),
        ("Stuff for my kids and knick knacks.", ("family", "kids")),
    ],
)
def test_english_talk_in_lower_case_and_the_owned_fill_slots(
    text: str, expected: tuple[str, str]
) -> None:
    assert expected in mine(text)


@pytest.mark.parametrize(
    "text",
    [
        "I live in a condo by myself.",  # a dwelling, not a place
        "I am a great singer.",  # a skill, not a job
        "I work for myself.",
        "Yeah they do, I moved there after my divorce from my wife.",
        "That is not my wife.",
        "I talked to my mom today.",  # everyone has one: no fact
    ],
)
def test_dwellings_skills_and_denials_fill_no_slot(text: str) -> None:
    assert not {kind for kind, _ in mine(text)} & {
        "location",
        "job",
        "workplace",
        "partner",
        "family",
    }


def test_an_english_sentence_is_a_clause_of_its_own() -> None:
    assert likes("Aww that's really cute. I love cats too.") == ["cats"]
    assert likes("Neighboring state. I like the weather there..") == []
    assert [c for c, _ in _clauses("It costs 3.5 dollars. I like cats.")] == [
        "It costs 3.5 dollars.",  # 3.5 ends no sentence
        " I like cats.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我到北京了", [("\0self", "北京")]),
        ("哈哈我终于来到上海啦！", [("\0self", "上海")]),
        ("我刚到杭州，好累", [("\0self", "杭州")]),
        ("你终于到北京了？", [("\0addressee", "北京")]),  # a question that presumes it
        ("I finally got to Boston!", [("\0self", "Boston")]),
        ("I arrived in New York last night.", [("\0self", "New York")]),
        ("You finally got to Boston?", [("\0addressee", "Boston")]),
        # nowhere: not a place, a question that asks, a denial, no capital
        ("我到家了", []),
        ("我到公司了", []),
        ("你到北京了吗？", []),
        ("我没到北京", []),
        ("I got to go now", []),
        ("Did you get to Boston?", []),
    ],
)
def test_where_someone_has_arrived_is_where_they_are(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert [(s.subject, s.value) for s in stated(text) if s.type == "location"] == expected


@pytest.mark.parametrize(
    ("text", "names", "expected"),
    [
        # from DialogRE-cn train's development part (benchmarks/others_slots.py)
        ("乔伊，你不是的！你31了。", ("乔伊",), [(ADDRESSEE, "age", "31岁")]),
        ("菲比，没关系，因为我有最好的男朋友。", ("菲比",), [(SELF, "partner", "男朋友")]),
        ("其实莫妮卡和我订婚了。", ("莫妮卡",), [(SELF, "partner", "莫妮卡")]),
        ("首先，让·莱斯特是一个数据库专家", ("让·莱斯特",), [("让·莱斯特", "job", "数据库专家")]),
        # not an age, not engaged, not one's own
        ("排名都第31了", (), []),
        ("莫妮卡和我没有订婚", ("莫妮卡",), []),
        ("我没有男朋友", (), []),
    ],
)  # fmt: skip
def test_what_members_say_of_each_other_and_of_themselves(
    text: str, names: tuple[str, ...], expected: list[tuple[str, str, str]]
) -> None:
    assert [(s.subject, s.type, s.value) for s in stated(text, names)] == expected
