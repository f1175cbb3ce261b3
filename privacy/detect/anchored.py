"""Organisations, places and people a word points at, where NER reads prose in lower case, one name alone or a
résumé line badly: the user's own employer, school, hotel or town (``I work at …``, ``I studied at …``, ``we
stayed at …``, ``I live in …``, ``UX designer, Allegro``, ``the Rotterdam depot``; ``我在…工作``, ``毕业于…大学``)
as ``ORGANIZATION``/``LOCATION``, and a person by one name (``my son Leo``, ``ask Priya``, ``Tomas said``,
``dr. patel``, ``my friend marcus``, ``(Joanne)``, ``我室友阿杰``, ``和 Jason 一起``) as ``PERSON``. A lone given
name needs a given-name list entry (``GivenNames``) unless a title or a relation word names it. In ``strict`` every
capitalised given name counts alone. Bounded patterns: linear in the text."""

from __future__ import annotations

from privacy.detect.findings import Finding
from privacy.detect.firstchars import compile_fast
from privacy.detect.given_names import GivenNames
from privacy.detect.org_words import ORG_WORDS

LAYER = "anchored"

_CAP_RUN = (r"[A-Z0-9À-Ý][\w'’&\-]*(?:\.(?=[ \t]+[A-Z]))?(?:[ \t]+(?:(?:of|de|del|la|the|and|&|di|da|do|du|van|von|"
            r"für|y|in|am|an|der)[ \t]+)?[A-ZÀ-Ý][\w'’&\-]*){0,6}")
_LOW_RUN = r"[a-z][a-z'’&\-]*(?:[ \t]+(?:of[ \t]+)?[a-z][a-z'’&\-]*){0,3}"
_CAP = compile_fast(_CAP_RUN)
_LOW = compile_fast(_LOW_RUN)
_CONNECTORS = ("of", "de", "del", "la", "the", "and", "&", "in", "am", "an", "der")
_ORG_ANCHOR = compile_fast(
    r"(?i)(?:\b(?:i|we|i'?m|im|i am|we are|we're|i'?ve|i have|i had|we had|currently|previously|formerly)\b"
    r"[^.\n]{0,30}?\b(?:work(?:ed|ing|s)?|intern(?:ed|ing)?|stud(?:y|ied|ying)|graduat(?:ed|ing)|stay(?:ed|ing)?|"
    r"teach(?:ing)?|taught|volunteer(?:ed|ing)?|employed|bank(?:ed)?|enrolled|student|engineer|analyst|designer|"
    r"developer|manager|nurse|supervisor|barista|associate|intern|member|patient|customer|degree|years?)\b"
    r"[^.\n]{0,24}?\b(?:at|for|with|from)[ \t]+(?:the[ \t]+)?"
    r"|\bmy[ \t]+(?:company|employer|school|university|uni|college|hotel|bank|clinic|hospital|gym|firm|"
    r"workplace|office)(?:[ \t]+is|[ \t]*[,:])?[ \t]+"
    r"|\b(?:designer|engineer|developer|intern|manager|analyst|nurse|supervisor|barista|associate|consultant|"
    r"teacher|assistant|director|officer|specialist|accountant|lead|head|scientist|researcher|student|"
    r"(?:BA|BSc|MSc|MA|PhD|MBA|BEng|MEng)\b[^,\n]{0,30}?)[ \t]*(?:,|\bat\b|@|\bwith\b)[ \t]+"
    r"|\b(?:worked|work|working|studied|stayed|staying|interned|graduated)[ \t]+(?:at|for|from)[ \t]+(?:the[ \t]+)?)")
_PLACE_ANCHOR = compile_fast(
    r"(?i)\b(?:live[sd]?(?:[ \t]+alone)?|living|grew[ \t]+up|moved|relocated|born|based|married|reside[sd]?|"
    r"residing|i'?m[ \t]+from|i[ \t]+am[ \t]+from|we[ \t]+are[ \t]+from|come[ \t]+from|currently)"
    r"[ \t]+(?:in|to|at|from)?[ \t]*")
_OWN_UNIT = compile_fast(r"\b(?:the|our|their|my)[ \t]+([A-Z][\w'’\-]*(?:[ \t]+[A-Z][\w'’\-]*){0,2})[ \t]+"
                       r"(?:depot|office|warehouse|factory|plant|branch|store|site|team|campus|hq|headquarters|"
                       r"proposal|contract|files|account|project|deal|lease|client)\b")
_STOP_LOW = frozenset("""a an the my our your his her their this that it home night least first last all times work
school length large the moment present once least some any most least no one somewhere everything nothing night
weekends weekend lunch dinner breakfast noon midnight random""".split())
_END_LOW = frozenset("in for as from since and with on to doing where when but so because last this until during "
                     "before after while by about is was were are i we he she they it me my our".split())
_TITLE = compile_fast(r"(?:\b(?:[Mm]rs|[Mm]r|M[sx]|[Dd]r|[Pp]rof|[Pp]rofessor|Herr|Frau|[Ii]ng|Sra|Sr|Mme|Madame|"
                    r"Monsieur|Señora|Señor|Miss)\.?|\bms\.)[ \t]+((?:(?:van|von|de|der|den|da|di|del|la|le)[ \t]+)"
                    r"{0,2}[A-Za-zÀ-ÿ][\w'’\-]{1,30})")
_RELATION = compile_fast(
    r"\b[Mm]y[ \t]+(?:(?:little|older|younger|big|best|ex|late|new|old|elder)[ \t]+)?(?:son|daughter|wife|husband|"
    r"girlfriend|boyfriend|partner|friend|mom|mum|mother|dad|father|brother|sister|boss|manager|colleague|coworker|"
    r"co-worker|teacher|roommate|flatmate|neighbou?r|therapist|doctor|gp|GP|landlord|landlady|accountant|lawyer|"
    r"grandmother|grandfather|grandma|grandpa|nan|aunt|uncle|cousin|niece|nephew|fianc[ée]e?|kid|child|baby|"
    r"supervisor|teammate|tutor|coach|mentor|psychiatrist|counsell?or|[a-z]+-in-law)[ \t]*(?:,|\(|is|was|called|"
    r"named)?[ \t]*([A-Za-zÀ-ÿ][a-zà-ÿ'’\-]{1,20})(?![\w'’])")
_VERB_BEFORE = compile_fast(r"\b(?:[Aa]sk|[Tt]ell|told|asked|[Cc]all|called|[Ee]mail|emailed|[Tt]ext|texted|[Mm]essage|"
                          r"[Rr]emind|reminded|[Mm]eet|met|[Ii]nvite|invited|[Tt]hank|[Pp]ing|with|and|from|to|for|cc)"
                          r"[ \t]+([A-Za-z][a-z]{2,15})(?![\w'’])")
_STRONG_VERBS = frozenset("ask tell told asked call called email emailed text texted message remind reminded invite "
                          "invited thank ping".split())
_VERB_AFTER = compile_fast(r"(?<![\w'’])([A-Z][a-z]{2,15})[ \t]+(?:said|says|wrote|thinks|thought|wants|wanted|asked|"
                         r"told|will|is|was|from|invited|keeps|has|had|can|could|would|should|replied|mentioned|"
                         r"suggested|agreed|called|emailed|takes|gave|sent)\b")
_PAREN = compile_fast(r"\(([A-Z][a-z]{2,15})(?=[,)])")
_MY_NAME = compile_fast(r"(?i)\bmy[ \t]+name(?:'s|[ \t]+is|[ \t]*:)[ \t]+([A-Za-zÀ-ÿ][\w'’\-]*(?:[ \t]+[A-Za-zÀ-ÿ][\w'’\-]*)"
                      r"{0,2})")
_FULL = compile_fast(r"(?<![\w'’])([A-Z][a-zà-ÿ]{2,15})[ \t]+([A-Z][a-zà-ÿ'’\-]{1,20})(?![\w'’])")
_LONE = compile_fast(r"(?<![\w'’@./\\])([A-Z][a-z]{2,15})(?![\w'’@])")
_LATIN_IN_CJK = compile_fast(r"(?:(?<=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff][ \t]))([A-Z][a-z]{2,15})"
                           r"(?=[ \t]?[\u4e00-\u9fff，。、（）])")
_NOT_NAMES = frozenset("""the this that these those there then than when what where which who why how monday tuesday
wednesday thursday friday saturday sunday january february march april may june july august september october
november december english chinese please thanks hello dear best regards cheers also just still very here
python java docker linux windows google excel word team board""".split())
# Chinese: cities, well-known employers, and institutions by their suffix, after a locative or first-person anchor.
_ZH_ANCHOR = compile_fast(r"(?:在|于|去|到|住|居|职|来自|回|毕业院校[：:]|院校[：:]|公司[：:]|单位[：:]|现居[：:]?|工作单位[：:]?)[ \t]*")
_ZH_CITIES = ("北京 上海 广州 深圳 杭州 成都 重庆 武汉 西安 南京 天津 苏州 长沙 郑州 东莞 青岛 沈阳 宁波 昆明 大连 厦门 合肥 "
              "佛山 福州 哈尔滨 济南 温州 长春 石家庄 常州 泉州 南宁 贵阳 南昌 南通 金华 徐州 太原 嘉兴 烟台 惠州 保定 "
              "台州 中山 绍兴 乌鲁木齐 潍坊 兰州 珠海 海口 三亚 拉萨 呼和浩特 银川 西宁 香港 澳门 台北 高雄 海淀 朝阳 "
              "浦东 徐汇 望京 中关村 义乌 无锡 扬州 洛阳 桂林 丽江 大理").split()
_ZH_COMPANIES = ("阿里巴巴 阿里 腾讯 百度 字节跳动 字节 华为 小米 京东 美团 拼多多 网易 蚂蚁集团 滴滴 快手 携程 顺丰 比亚迪 "
                 "宁德时代 中兴 联想 大疆 商汤 平安 中信 埃森哲 德勤 普华永道 安永 毕马威 微软 谷歌 苹果 亚马逊 "
                 "星巴克 中石油 中石化 国家电网 中国移动 中国联通 中国电信").split()
_ZH_ORG = compile_fast(r"[\u4e00-\u9fff]{2,10}?(?:大学|学院|小学|中学|高中|幼儿园|医院|银行|集团|公司|研究院|研究所|事务所)")
_ZH_KNOWN = compile_fast("|".join(sorted(_ZH_CITIES + _ZH_COMPANIES, key=len, reverse=True)))
_ZH_RELATION = compile_fast(r"(?:儿子|女儿|老婆|老公|妻子|丈夫|女朋友|男朋友|女友|男友|朋友|室友|同事|老板|领导|妈妈|爸爸|妈|爸|"
                          r"哥哥|姐姐|弟弟|妹妹|同学|闺蜜|宝宝|孩子)([\u4e00-\u9fff]{2,3})")
_ZH_NICK = compile_fast(r"(?:和|跟|给|问|找|告诉|叫|带)([小阿老][\u4e00-\u9fff])")
_ZH_STOP = frozenset("在天是说有的了和也都就要去很从把被让给跟对最还又才已不没会能想今明昨每一这那我你他她它们上下里")


class AnchoredMentions:
    """``find(text, strict)``: organisations, places and people a first-person, relation or title word names."""

    def __init__(self, given: GivenNames) -> None:
        self._given = given

    def warm(self) -> None:
        self._given.load()

    def _given_name(self, word: str) -> bool:
        return word.casefold() not in _NOT_NAMES and self._given.known(word)

    def find(self, text: str, *, strict: bool) -> list[Finding]:
        out: list[tuple[str, int, int]] = []
        self._organisations(text, out)
        self._people(text, out, strict)
        if any("\u4e00" <= ch <= "\u9fff" for ch in text):
            self._chinese(text, out)
        return [Finding(type=t, start=s, end=e, value=text[s:e], layer=LAYER, key=f"{t}:{text[s:e]}")
                for t, s, e in out if e > s]

    def _run(self, text: str, pos: int) -> tuple[int, int] | None:
        """The name that starts at ``pos``: a run of capitalised words, else up to four lower-case ones."""
        m = _CAP.match(text, pos)
        if m is not None:
            words = m.group(0).split()
            while words and words[-1] in _CONNECTORS:
                words.pop()
            if words and words[0].casefold() not in _NOT_NAMES:
                return pos, pos + m.group(0).rfind(words[-1]) + len(words[-1])
            return None
        m = _LOW.match(text, pos)
        if m is None:
            return None
        words = m.group(0).split()
        kept: list[str] = []
        for word in words:
            if word in _END_LOW:
                break
            kept.append(word)
        if not kept or kept[0] in _STOP_LOW or kept[-1] == "of":
            return None
        end = text.find(kept[-1], pos) + len(kept[-1])
        return pos, end

    def _organisations(self, text: str, out: list[tuple[str, int, int]]) -> None:
        for m in _ORG_ANCHOR.finditer(text):
            span = self._run(text, m.end())
            if span is not None:
                out.append(("ORGANIZATION", *span))
        for m in _PLACE_ANCHOR.finditer(text):
            span = self._run(text, m.end())
            if span is not None:
                out.append(("LOCATION", *span))
        for m in _OWN_UNIT.finditer(text):
            if m.group(1).casefold() not in _NOT_NAMES:
                out.append(("ORGANIZATION", m.start(1), m.end(1)))

    def _people(self, text: str, out: list[tuple[str, int, int]], strict: bool) -> None:
        for m in _TITLE.finditer(text):
            if m.group(1).casefold() not in _NOT_NAMES and m.group(1).casefold() not in _END_LOW:
                out.append(("PERSON", m.start(1), m.end(1)))
        for m in _RELATION.finditer(text):
            name = m.group(1)
            if (name[0].isupper() and name.casefold() not in _NOT_NAMES and name.casefold() not in _END_LOW) \
                    or self._given_name(name):
                out.append(("PERSON", m.start(1), m.end(1)))
        for m in _VERB_BEFORE.finditer(text):
            name, verb = m.group(1), m.group(0).split()[0].casefold()
            if self._given_name(name) and (name[0].isupper() or verb in _STRONG_VERBS):
                out.append(("PERSON", m.start(1), m.end(1)))
        for pattern in (_VERB_AFTER, _PAREN, _LATIN_IN_CJK):
            for m in pattern.finditer(text):
                if self._given_name(m.group(1)):
                    out.append(("PERSON", m.start(1), m.end(1)))
        for m in _MY_NAME.finditer(text):
            out.append(("PERSON", m.start(1), m.end(1)))
        for m in _FULL.finditer(text):
            if self._given_name(m.group(1)) and m.group(2).casefold() not in ORG_WORDS \
                    and m.group(2).casefold() not in _NOT_NAMES:
                out.append(("PERSON", m.start(), m.end()))
        if strict:
            for m in _LONE.finditer(text):
                if self._given_name(m.group(1)):
                    out.append(("PERSON", m.start(1), m.end(1)))

    def _chinese(self, text: str, out: list[tuple[str, int, int]]) -> None:
        for m in _ZH_ANCHOR.finditer(text):
            org = _ZH_ORG.match(text, m.end())
            if org is not None:
                out.append(("ORGANIZATION", org.start(), org.end()))
            window = text[m.end():m.end() + 12]
            for known in _ZH_KNOWN.finditer(window):
                type_ = "LOCATION" if known.group(0) in _ZH_CITIES else "ORGANIZATION"
                out.append((type_, m.end() + known.start(), m.end() + known.end()))
        for m in _ZH_RELATION.finditer(text):
            name = m.group(1)
            if name[0] in _ZH_STOP:
                continue
            if len(name) == 3 and (name[2] in _ZH_STOP or name[0] in "小阿老" or name[0] == name[1]):
                name = name[:2]
            out.append(("PERSON", m.start(1), m.start(1) + len(name)))
        for m in _ZH_NICK.finditer(text):
            out.append(("PERSON", m.start(1), m.end(1)))
