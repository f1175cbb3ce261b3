"""Chinese personal names in Chinese text: a surname from the list, a given name of one or two characters, and
what the context says (``客户：王建国``, ``联系人 李娜``, ``王建国先生``, ``转给陈伟处理``, a chat line's speaker, a
table column of names). The segmenter (``jieba.posseg``) draws the name's end where the context does not (``杨建国：``
is 杨 + 建国, ``负责人：欧阳磊，`` is 欧阳 + 磊) and vetoes a candidate that is part of a longer word (``高新区``,
``林业局``); jieba's ``nr`` tag alone is never enough (it tags 谢谢 and 银泰城 too), and neither is the surname alone
(``马上``, ``高兴``). A name followed by an organisation's or a place's word (``万达广场``, ``平安保险``) is no name."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from privacy.detect.segmenter import Segmenter, Token

# The most common surnames (over 90 % of the population) and the compound ones still in use.
SURNAMES = frozenset("""王 李 张 刘 陈 杨 黄 赵 吴 周 徐 孙 马 朱 胡 郭 何 高 林 罗 郑 梁 谢 宋 唐 许 韩 冯 邓 曹 彭 曾 肖 田 董
袁 潘 于 蒋 蔡 余 杜 叶 程 苏 魏 吕 丁 任 沈 姚 卢 姜 崔 钟 谭 陆 汪 范 金 石 廖 贾 夏 韦 付 方 白 邹 孟 熊 秦 邱 江 尹 薛 闫 段
雷 侯 龙 史 陶 黎 贺 顾 毛 郝 龚 邵 万 钱 严 覃 武 戴 莫 孔 向 汤 常 温 康 施 文 牛 樊 葛 邢 安 齐 易 乔 伍 庞 颜 倪 庄 聂 章 鲁 岳
翟 殷 詹 申 欧 耿 关 兰 焦 俞 左 柳 甘 祝 包 宁 尚 符 舒 阮 柯 纪 梅 童 凌 毕 单 季 裴 霍 涂 成 苗 谷 盛 曲 翁 冉 骆 蓝 路 游 辛
靳 管 柴 蒙 鲍 华 喻 祁 蒲 房 滕 屈 饶 解 牟 艾 尤 阳 时 穆 农 司 卓 古 吉 缪 简 车 项 连 芦 麦 褚 娄 窦 戚 岑 景 党 宫 费 卜 冷
晏 席 卫 米 柏 宗 瞿 桂 全 佟 应 臧 闵 苟 邬 边 卞 姬 师 和 仇 栾 隋 商 刁 沙 荣 巫 寇 桑 郎 甄 丛 仲 虞 敖 巩 明 佘 池 查 麻 苑
迟 邝 萧 欧阳 司马 诸葛 上官 东方 皇甫 尉迟 公孙 慕容 长孙 宇文 司徒 夏侯 轩辕 令狐 钟离 端木 独孤 南宫 西门 呼延""".split())

# Before a name: role labels and words that hand something to a person.
_ROLES = ("客户 联系人 负责人 经办人 申请人 审批人 审核人 收款人 付款人 租户 房东 报销人 对接人 发件人 收件人 抄送 "
          "姓名 员工 职员 同事 用户 患者 病人 学员 学生 老师 业务员 销售 客服 司机 承办人 委托人 代理人 签收人 "
          "提交人 创建人 处理人 跟进人 接待人 介绍人 担保人 借款人 投保人 被保险人 受益人 持卡人 开户人 户主 "
          "法人 法定代表人 监护人 家长 紧急联系人 面试官 候选人 求职者 房客 乘客 寄件人 收货人 转给 交给 发给 "
          "抄送给 转交 通知 联系 找 问 请 由 派给 分配给 指派给 致 亲爱的 尊敬的").split()
_BEFORE = re.compile("(?:" + "|".join(sorted(map(re.escape, _ROLES), key=len, reverse=True)) + r")[ \t]*[：:，,是为]?[ \t]*$")
# After a name: titles, greetings, and verbs a person is the subject of.
_TITLES = ("先生 女士 小姐 经理 总监 主任 主管 老师 医生 大夫 教授 同学 师傅 律师 会计 工程师 专员 助理 阿姨 叔叔 "
           "你好 您好").split()
_VERBS = "负责 处理 审批 提交 确认 报销 签字 签收 说 表示 称 反馈 回复 来电 致电 已 的报销 的工资".split()
_TITLE_RE = re.compile("|".join(sorted(map(re.escape, _TITLES), key=len, reverse=True)))
_AFTER_RE = re.compile("|".join(sorted(map(re.escape, _TITLES + _VERBS), key=len, reverse=True)))
_COLON = re.compile(r"[ \t]*[：:](?!\d)")
# What makes a surname-led run something else: an organisation's, a place's or a thing's word right after it.
_NOT_NAME_NEXT = re.compile(r"(?:公司|集团|银行|保险|广场|中心|科技|物流|速运|大厦|医院|学校|大学|酒店|商场|商城|超市|"
                            r"优选|电网|证券|基金|控股|股份|有限|研究院|委员会|协会|[城区县市省路街局院所站馆厂店镇村楼园])")
_BAD_LAST = frozenset("区市省县镇村路街城局体司行店厂院站馆楼号室园场业部处科所会团网汇的了是在和与及等码")
_STOP_TOKENS = frozenset("谢谢 马上 高兴 胡说 孙子 林立 朱红 宋体 罗盘 万一 高速 高级 明天 明白 金额 安全 常用 "
                         "文件 方便 方法 时间 史上 江湖 白色 黄色 金色 全部 全面 单位 单独 成功 成本 关于 关注 和平 "
                         "向上 于是 包括 应该 连续 车辆 路由 管理 简单 景点 党员 宫殿 费用 冷静 席位 卫生 米饭".split())
_EN_BEFORE = re.compile(r"(?i)(?:\b(?:to|by|from|for|owner|assignee|reviewer|approver|claimant|tenant|employee|"
                        r"contact|customer|name|user|dear|hi|cc|attn)[ \t]*[:=]?|[:=])[ \t\"']*$")
_CJK = re.compile(r"[\u4e00-\u9fff]+")
_NEWLINE = re.compile("\n")
_LINE_SPEAKER = re.compile(r"(?m)^[ \t]*(?:\[[^\]\n]{1,24}\][ \t]*|\d{1,2}:\d{2}(?::\d{2})?[ \t]+)?(?=[\u4e00-\u9fff])")


def plausible(name: str) -> bool:
    """A surname, then one or two characters that do not end a place or an organisation."""
    surname = name[:2] if name[:2] in SURNAMES and len(name) >= 3 else name[:1]
    given = name[len(surname):]
    return (surname in SURNAMES and 1 <= len(given) <= 2 and name[-1] not in _BAD_LAST
            and name not in _STOP_TOKENS and all("\u4e00" <= ch <= "\u9fff" for ch in name))


class ChineseNames:
    def __init__(self, segmenter: Segmenter) -> None:
        self._segmenter = segmenter

    def warm(self) -> None:
        self._segmenter.load()

    def find(self, text: str, scope: str) -> list[tuple[int, int]]:
        """Spans of Chinese names in ``text`` (``scope``: whose text, for the segmenter's cache)."""
        if not _CJK.search(text):
            return []
        spans: list[tuple[int, int]] = []
        breaks = [m.start() for m in _NEWLINE.finditer(text)]  # where lines start, looked up (not searched back)
        for run in _CJK.finditer(text):
            spans.extend(self._in_run(text, run.start(), run.end(), scope, breaks))
        return spans

    def whole(self, value: str, scope: str) -> bool:
        """Whether a whole value (a table cell, a JSON string) reads as one Chinese name."""
        value = value.strip()
        if not (2 <= len(value) <= 4) or not plausible(value):
            return False
        tokens = self._segmenter.tag(value, scope)
        return any(t.flag.startswith("nr") for t in tokens) and not any(len(t.word) > len(value) - 1 and
                                                                          not t.flag.startswith("nr") for t in tokens)

    def _in_run(self, text: str, start: int, end: int, scope: str, breaks: list[int]) -> Iterator[tuple[int, int]]:
        run = text[start:end]
        tokens: list[Token] | None = None
        if self.whole(run, scope):  # a run that is one name (``assigned to 黄强``, a cell)
            yield start, end
            return
        found_end = 0
        for i in range(len(run)):
            surname = run[i:i + 2] if run[i:i + 2] in SURNAMES else run[i] if run[i] in SURNAMES else None
            if surname is None or i < found_end or _AFTER_RE.match(run, i + len(surname)):
                continue  # inside a name found already; a surname and a title (``李经理``) is no full name
            before = text[max(0, start + i - 12):start + i]
            speaker = _LINE_SPEAKER.match(text, _line_start(breaks, start + i))
            at_line_start = speaker is not None and speaker.end() == start + i
            context_before = bool(_BEFORE.search(before)) or bool(_EN_BEFORE.search(before))
            glued = start + i > 0 and _CJK.match(text[start + i - 1]) is not None  # another word right before
            for length in (2, 1):  # the given name: the longest that the context closes
                name_end = i + len(surname) + length
                if name_end > len(run):
                    continue
                name = run[i:name_end]
                if not plausible(name):
                    continue
                after = text[start + name_end:start + name_end + 6]
                if _NOT_NAME_NEXT.match(after):
                    continue
                titled = _TITLE_RE.match(after) is not None  # 王建国先生, 欧阳丽你好
                speaker_line = at_line_start and _COLON.match(after) is not None  # [09:18] 杨建国：
                closed = _AFTER_RE.match(after) is not None or start + name_end == end
                if titled or speaker_line or (closed and (context_before or not glued)):
                    found_end = name_end
                    yield start + i, start + name_end
                    break
                if context_before:
                    tokens = tokens if tokens is not None else self._segmenter.tag(run, scope)
                    if _segmented_as(tokens, i, name_end):
                        found_end = name_end
                        yield start + i, start + name_end
                        break


def _line_start(breaks: list[int], pos: int) -> int:
    """Where the line holding ``pos`` starts, from the text's line breaks."""
    i = bisect.bisect_left(breaks, pos)
    return breaks[i - 1] + 1 if i else 0


def _segmented_as(tokens: list[Token], start: int, end: int) -> bool:
    """Whether jieba's tokens have a boundary at ``start`` and ``end`` and tag something inside as a name."""
    starts = {t.start for t in tokens}
    ends = {t.end for t in tokens}
    inside = [t for t in tokens if t.start >= start and t.end <= end]
    return start in starts and end in ends and any(t.flag.startswith(("nr", "ns")) for t in inside) \
        and not any(t.word in _STOP_TOKENS for t in inside)
