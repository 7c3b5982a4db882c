"""Gold profile slots for DuLeMon's persona entries (labelled here, by hand, once; the
entries themselves are read in place from ``GROUPMIND_SHARED_DATA`` and never copied).

Each persona entry is a first-person statement ("我是巨蟹座"): what a profile should learn
from it, as ``slot:value`` (slots as in ``domain.people.FACT_LABELS``, plus ``like`` for
preference keywords and ``alias`` for a name). An entry with no label states nothing a
profile slot holds (我肤色很白); whatever is learned from it counts against precision. A
learned value matches when one holds the other (三十 in 三十岁). A kin mentioned (我父亲开车去
黑龙江) is a family fact: the person has one.
"""

from __future__ import annotations

LABELS = """
0:B1 like:逻辑思维
0:B3 age:三十
0:B4 like:吃肉
0:B5 like:炸薯条
0:U1 like:运动
0:U2 workplace:IT部门
0:U3 family:孩子 pet:狗
0:U4 alias:魏建功
0:U5 star_sign:巨蟹座
1:B1 like:跑步
1:B2 hometown:东北
1:B3 like:喜剧
1:B4 hometown:农村
1:U1 pet:猫
1:U2 family:父母
1:U3 family:哥哥
1:U4 alias:小丽
2:B3 like:看篮球
2:B4 like:帮助别人
2:U1 pet:狗
2:U2 dream:跳伞
2:U3 alias:小夏
2:U5 like:玩电子游戏
3:B1 dream:时装设计师
3:B2 like:动物
3:B3 like:收集邮票
3:B4 like:玩棋盘游戏
3:U1 school:大二
3:U2 family:姐姐
3:U4 alias:小染
3:U6 like:看老电影
4:B1 dream:宇航员
4:U1 pet:德国牧羊犬
4:U2 dislike:蝎子
4:U3 alias:张岩
4:U4 workplace:邮局
4:U5 family:父亲
4:U6 like:灰色
5:B1 like:傲慢与偏见
5:B2 like:去公园
5:B4 like:石鱼
5:U2 workplace:八一双鹿
5:U3 job:后卫
5:U4 alias:大龙
5:U5 like:篮球
5:U6 job:运动员
6:B1 like:去国家公园
6:B2 like:吃猪肉
6:B3 dislike:花椰菜
6:B4 like:收集汽车模型
6:U1 family:父亲
6:U2 alias:郭凯
6:U3 like:钓鱼
6:U5 like:冰淇淋
7:B2 like:攀岩
7:B3 dream:川藏线
7:B4 hometown:小镇
7:U1 like:唱歌
7:U2 workplace:房地产公司
7:U3 age:20多岁
7:U4 alias:小天
7:U6 partner:老板
8:B1 like:菜
8:B2 dislike:数学课
8:B3 like:百事可乐
8:B4 like:深海潜水
8:U1 dislike:洗衣服
8:U4 like:玩滑板
8:U5 alias:小武
8:U6 star_sign:天秤座
9:B1 like:互联网
9:B2 like:喜剧电影
9:B3 like:影
9:B4 like:披萨
9:U1 like:吃
9:U2 family:大家庭
9:U3 like:夏天
9:U4 alias:宁双双
10:B1 like:推理小说
10:B2 dream:张家界
10:B3 like:鸡块
10:B4 like:小狗
10:B5 like:钓鱼
10:U2 school:三年级
10:U3 like:米老鼠
10:U5 alias:小彤
11:B1 like:爬山
11:B2 like:写草书
11:B3 like:鸡肉
11:U1 like:旅行
11:U2 alias:小明 hometown:青岛
11:U3 like:滑雪
12:B2 like:沃尔玛
12:B3 like:聊天
12:U4 like:五月天
12:U5 alias:俞爽
12:U6 star_sign:白羊座
12:U7 family:孩子
13:B1 like:打游戏
13:B3 hometown:黑龙江
13:B4 like:海滩
13:U1 like:徒步旅行
13:U2 job:出纳员
13:U3 like:iPhone
13:U5 alias:小依
14:B1 like:海滩
14:B2 like:靴子
14:B3 like:巧克力蛋糕
14:U1 like:游泳
14:U2 like:熊猫
14:U3 like:看书
14:U4 dream:咖啡店
14:U5 alias:小琴
15:B1 like:发微信 dislike:打电话
15:B2 age:49 location:长沙
15:U1 job:服务员 workplace:餐馆
15:U2 like:披萨
15:U3 family:父亲
15:U4 like:骑行
15:U5 alias:小军
15:U6 star_sign:双子座
16:B1 like:滑冰
16:B3 like:漫画
16:B4 like:绘画
16:U1 like:苹果
16:U2 alias:小鹏
16:U5 workplace:汽车制造厂
17:B2 like:收集漫画书
17:B4 like:球
17:B5 like:骑自行车
17:U1 like:做手工
17:U2 alias:小志
17:U3 like:逛公园
17:U4 dislike:死
18:B1 like:收集贝壳
18:B5 like:乡村音乐
18:U1 like:四川菜
18:U2 alias:吴卓
18:U5 job:机器人研发
19:B1 like:奥森
19:B2 like:大篷车
19:B4 hometown:上海
19:U1 family:孩子
19:U2 dream:减肥
19:U4 alias:谭辉
19:U5 like:网上冲浪
19:U6 workplace:养老院
"""


def labels() -> dict[str, list[tuple[str, str]]]:
    """entry key ("3:U2") -> its gold (slot, value) pairs."""
    out: dict[str, list[tuple[str, str]]] = {}
    for line in LABELS.strip().splitlines():
        key, *pairs = line.split()
        out[key] = [tuple(p.split(":", 1)) for p in pairs]  # type: ignore[misc]
    return out
