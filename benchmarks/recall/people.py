"""The ``people-a`` and ``people-b`` variants: people in every container, and the strings agents need beside them.

What detection without a unit list still let through on a held-out corpus was people: Chinese names in Chinese
text (``客户：王建国``, ``联系人 李娜``, tables, chat logs), English names in tables, CSV rows and log lines, in lower
or upper case, after a role word (``assignee``, ``reviewer``, ``claimant``), one-word given names in chat
transcripts; dates of birth in prose (``born 14 March 1987``, ``出生于1990年5月3日``), under labels and in ISO form;
pay (net pay, reimbursements, invoice totals, rent) under labels and next to a person; home addresses without a
street word, in Chinese, on an OCR'd second line. Beside each person sit the strings an agent needs and a name
detector must not eat: expense, contract and claim references (a letter prefix with a year or a serial),
organisations, vendors, products, insurers, shopping centres, event titles, e-mail subjects, product features.

Two pools, disjoint in names, labels, role words, needed strings and phrasing: tune on ``a`` at most, report ``b``
(and seeds nobody looked at). Cases have the original corpus's shape, so ``score.Figures`` scores them unchanged.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.recall.corpus import _SYSTEM, TOOLS, Case, _needed, finish, tool_call
from benchmarks.recall.values import Value

POOL_NAMES = ("a", "b")


@dataclass(frozen=True)
class Pool:
    en_first: tuple[str, ...]
    en_last: tuple[str, ...]
    zh_surnames: tuple[str, ...]
    zh_given: tuple[str, ...]
    roles_en: tuple[str, ...]  # words before a name in text and as column headers
    roles_zh: tuple[str, ...]
    dob_en: tuple[str, ...]  # labels of a date of birth
    dob_zh: tuple[str, ...]
    pay_en: tuple[str, ...]
    pay_zh: tuple[str, ...]
    addr_en: tuple[str, ...]
    addr_zh: tuple[str, ...]
    places: tuple[str, ...]  # a house's place name without a street word (``41 Larchmont``)
    towns: tuple[str, ...]
    zh_compounds: tuple[str, ...]  # a residential compound (``望京西园四区``)
    refs: tuple[Callable[[random.Random], str], ...]
    orgs: tuple[str, ...]  # organisations, vendors, insurers, shopping centres: capitalised words, not people
    orgs_zh: tuple[str, ...]
    products: tuple[str, ...]  # products and product features
    events: tuple[str, ...]  # event titles
    subjects: tuple[str, ...]  # e-mail subject lines ({ref} filled in)


def _reference(prefix: str, year: bool, digits: int, sep: str = "-") -> Callable[[random.Random], str]:
    def make(rng: random.Random) -> str:
        serial = "".join(rng.choice("0123456789") for _ in range(digits))
        return f"{prefix}{sep}{rng.randint(2019, 2026)}{sep}{serial}" if year else f"{prefix}{sep}{serial}"
    return make


POOLS: dict[str, Pool] = {
    "a": Pool(
        en_first=("Maria", "James", "Aisha", "Lukas", "Sofia", "Daniel", "Priya", "Oliver", "Hannah", "Kenji",
                  "Fatima", "Noah", "Ingrid", "Tomasz", "Emily", "Carlos", "Grace", "Ahmed", "Chloe", "Marcus"),
        en_last=("Gonzalez", "Whitfield", "Okafor", "Brandt", "Rossi", "Kowalski", "Nakamura", "Haddad", "Lindqvist",
                 "Patel", "Moreau", "Fischer", "Thompson", "Alvarez", "Schmidt", "Walsh"),
        zh_surnames=("王", "李", "张", "刘", "陈", "杨", "赵", "黄", "周", "吴", "欧阳"),
        zh_given=("建国", "娜", "伟", "芳", "敏", "静", "丽", "强", "磊", "军", "秀英", "志强", "海燕", "桂兰", "晓东"),
        roles_en=("assignee", "reviewer", "claimant", "approver", "requester"),
        roles_zh=("客户", "联系人", "负责人", "经办人", "申请人"),
        dob_en=("dob", "birth_date", "Date of birth"), dob_zh=("出生日期", "生日"),
        pay_en=("net pay", "reimbursement", "invoice total", "rent"), pay_zh=("实发工资", "报销金额", "房租"),
        addr_en=("home", "lives at"), addr_zh=("住址", "家住"),
        places=("Larchmont", "Beechwood", "Harrowgate", "Meadowbank", "Ashcombe"),
        towns=("Bristol BS8 1QU", "Leeds LS6 2AB", "Springfield, IL 62704", "Portland, OR 97205"),
        zh_compounds=("朝阳区望京西园四区", "海淀区万柳书院", "徐汇区康健新村", "天河区珠江新城", "南山区蛇口花园城"),
        refs=(_reference("EXP", True, 4), _reference("CLM", True, 5), _reference("CT", True, 4),
              _reference("INV", False, 6), _reference("PO", True, 4, "/")),
        orgs=("Northwind Traders", "Acme Logistics GmbH", "Blue Harbor Catering", "Allianz Partners",
              "Westfield Stratford City", "Zurich Insurance", "Contoso Ltd", "Brightline Couriers"),
        orgs_zh=("华为技术有限公司", "顺丰速运", "中国平安", "万达广场", "京东物流", "太古汇"),
        products=("Jira Service Management", "Smart Compose", "Autopilot Lite", "Focus Mode", "企业微信", "钉钉宜搭"),
        events=("Q3 All Hands", "Spring Product Summit", "年度客户答谢会", "Vendor Day 2026"),
        subjects=("Re: Invoice {ref} overdue", "Quarterly vendor review - {ref}", "回复：报销单 {ref} 审批"),
    ),
    "b": Pool(
        en_first=("Rebecca", "Tobias", "Amara", "Javier", "Elena", "Samuel", "Nadia", "Victor", "Leila", "Patrick",
                  "Ruth", "Dmitri", "Yuki", "Bianca", "Hugo", "Mei", "Oskar", "Zainab", "Felix", "Clara"),
        en_last=("Hargreaves", "Ferreira", "Novak", "Abernathy", "Castillo", "Mbeki", "Sorensen", "Duval", "Ivanova",
                 "Kapoor", "Brennan", "Yilmaz", "Lachance", "Osei", "Bergstrom", "Delacroix"),
        zh_surnames=("徐", "孙", "胡", "朱", "高", "林", "何", "郭", "马", "罗", "梁", "宋", "郑", "谢", "司马", "诸葛"),
        zh_given=("子涵", "浩然", "雨桐", "思远", "晓明", "婷", "欣怡", "俊杰", "佳琪", "文博", "梦瑶", "国栋", "红梅"),
        roles_en=("owner", "submitted by", "tenant", "handled by", "employee", "policyholder"),
        roles_zh=("审批人", "收款人", "租户", "报销人", "对接人"),
        dob_en=("DOB", "date_of_birth", "born_on"), dob_zh=("出生年月", "出生年月日"),
        pay_en=("take-home pay", "expense claim", "amount due", "monthly rent"), pay_zh=("到手工资", "报销", "租金"),
        addr_en=("residence", "resides at"), addr_zh=("现居住地", "住在"),
        places=("Oakhurst", "Kingsmead", "Willowbrae", "Fernlea", "Rosemount"),
        towns=("Cambridge CB4 3AZ", "Edinburgh EH10 4BF", "Austin, TX 78704", "Toronto, ON M4C 1B5"),
        zh_compounds=("浦东新区锦绣苑", "西湖区文鼎苑", "江宁区翠屏城", "武侯区棕北小区", "鼓楼区五台花园"),
        refs=(_reference("RB", True, 5), _reference("CLAIM", False, 7), _reference("HT", True, 3),
              _reference("EXR", True, 6, "_"), _reference("LEASE", True, 4)),
        orgs=("Harbourview Dental Group", "Pinecrest Facilities", "Aviva Health", "Bluewater Shopping Centre",
              "Lighthouse Analytics", "Meridian Mutual", "Orchard Lane Bakery", "Sterling & Pike LLP"),
        orgs_zh=("腾讯科技", "太平洋保险", "银泰城", "美团优选", "国家电网", "招商银行"),
        products=("Salesforce Einstein", "Dark Mode", "Quick Share", "Live Captions", "飞书妙记", "智能排班"),
        events=("Winter Offsite 2026", "Customer Advisory Board", "新品发布会", "Hack Week"),
        subjects=("Fwd: lease renewal {ref}", "Action needed: expense report {ref}", "关于合同 {ref} 的续签"),
    ),
}

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


@dataclass
class Person:
    name: Value
    given: str  # the given name alone (chat transcripts)
    zh: bool


@dataclass
class Ctx:
    rng: random.Random
    pool: Pool
    zh: bool
    needed: list[str]
    values: list[Value] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)  # needed strings this case wrote

    def need(self, text: str) -> str:
        self.keep.append(text)
        return text

    def value(self, v: Value) -> str:
        self.values.append(v)
        return v.text


def _person(c: Ctx, zh: bool | None = None) -> Person:
    rng, p = c.rng, c.pool
    zh = c.zh if zh is None else zh
    if zh:
        surname, given = rng.choice(p.zh_surnames), rng.choice(p.zh_given)
        return Person(Value(surname + given, "identity", "person_zh", "姓名", "姓名"), given, True)
    first, last = rng.choice(p.en_first), rng.choice(p.en_last)
    text = f"{first} {last}"
    form = rng.random()
    if form < 0.15:
        text = text.lower()
    elif form < 0.25:
        text = text.upper()
    return Person(Value(text, "identity", "person_en", "name", "姓名"), first, False)


def _dob(c: Ctx, zh: bool) -> Value:
    rng = c.rng
    y, m, d = rng.randint(1950, 2004), rng.randint(1, 12), rng.randint(1, 28)
    forms = [f"{y}年{m}月{d}日", f"{y}-{m:02d}-{d:02d}", f"{y}/{m}/{d}"] if zh else \
        [f"{d} {_MONTHS[m - 1]} {y}", f"{_MONTHS[m - 1]} {d}, {y}", f"{y}-{m:02d}-{d:02d}", f"{d:02d}/{m:02d}/{y}",
         f"{d:02d}.{m:02d}.{y}"]
    return Value(rng.choice(forms), "identity", "dob", "date of birth", "出生日期")


def _pay(c: Ctx, zh: bool) -> Value:
    rng = c.rng
    amount = rng.randrange(600, 19_000) + rng.choice([0, 0.5, 0.25, 0.8])
    text = rng.choice([f"¥{amount:,.2f}", f"{amount:,.2f}元", f"{int(amount)}元"]) if zh else \
        rng.choice([f"${amount:,.2f}", f"£{amount:,.2f}", f"EUR {amount:,.2f}", f"{amount:,.2f} USD"])
    return Value(text, "financial", "pay", "pay", "金额")


def _address(c: Ctx, zh: bool) -> Value:
    rng, p = c.rng, c.pool
    if zh:
        text = f"{rng.choice(p.zh_compounds)}{rng.randint(1, 40)}号楼{rng.randint(1, 6)}单元{rng.randint(101, 2802)}"
        return Value(text, "contact", "home_address", "address", "住址")
    first = f"{rng.randint(2, 240)} {rng.choice(p.places)}"
    if rng.random() < 0.5:
        first = f"Flat {rng.randint(1, 12)}, {first}"
    town = rng.choice(p.towns)
    text = f"{first}\n{town}" if rng.random() < 0.4 else f"{first}, {town}"  # an OCR'd second line
    return Value(text, "contact", "home_address", "address", "住址")


def _ref(c: Ctx) -> str:
    return c.need(c.rng.choice(c.pool.refs)(c.rng))


def _org(c: Ctx, zh: bool) -> str:
    return c.need(c.rng.choice(c.pool.orgs_zh if zh else c.pool.orgs))


def _product(c: Ctx, zh: bool) -> str:
    options = [x for x in c.pool.products if (not x.isascii()) == zh] or list(c.pool.products)
    return c.need(c.rng.choice(options))


def _event(c: Ctx, zh: bool) -> str:
    options = [x for x in c.pool.events if (not x.isascii()) == zh] or list(c.pool.events)
    return c.need(c.rng.choice(options))


# --- containers ---------------------------------------------------------------------------------------------------

def prose(c: Ctx) -> str:
    """A paragraph about one or two people, with their reference, vendor, product or event."""
    rng, p, zh = c.rng, c.pool, c.zh
    a, b = _person(c), _person(c)
    if zh:
        role = rng.choice(p.roles_zh)
        sep = rng.choice(["：", " ", "是"])
        parts = [f"{role}{sep}{c.value(a.name)}，{rng.choice(['合同编号', '单号', '报案号'])} {_ref(c)}，"
                 f"供应商{_org(c, True)}。"]
        if rng.random() < 0.6:
            parts.append(f"{c.value(b.name)}{rng.choice(['先生', '女士', '经理', '老师'])}负责跟进{_event(c, True)}。")
        if rng.random() < 0.6:
            parts.append(f"{a.name.text}{rng.choice(['出生于', '生于'])}{c.value(_dob(c, True))}，"
                         f"{rng.choice(p.addr_zh)}{c.value(_address(c, True))}。")
        if rng.random() < 0.6:
            parts.append(f"{rng.choice(p.pay_zh)}为{c.value(_pay(c, True))}，使用{_product(c, True)}提交。")
        return "".join(parts)
    role = rng.choice(p.roles_en)
    parts = [f"The {role} is {c.value(a.name)} for {_ref(c)} with {_org(c, False)}."]
    if rng.random() < 0.6:
        parts.append(f"{c.value(b.name)} asked about {_product(c, False)} before {_event(c, False)}.")
    if rng.random() < 0.6:
        parts.append(f"{a.given} was born {c.value(_dob(c, False))} and {rng.choice(['lives at', 'resides at'])} "
                     f"{c.value(_address(c, False)).replace(chr(10), ', ')}.")
    if rng.random() < 0.6:
        parts.append(f"Please reimburse {b.name.text} {c.value(_pay(c, False))} ({rng.choice(p.pay_en)}).")
    return " ".join(parts)


def _row(c: Ctx, zh: bool) -> tuple[list[str], list[str]]:
    """A table's header and one row per person: role, reference, organisation, and one of dob/pay/address."""
    rng, p = c.rng, c.pool
    kind = rng.choice(["dob", "pay", "addr"])
    role = rng.choice(p.roles_zh if zh else p.roles_en)
    org = "供应商" if zh else rng.choice(["vendor", "insurer", "organisation"])
    extra = {"dob": rng.choice(p.dob_zh if zh else p.dob_en), "pay": rng.choice(p.pay_zh if zh else p.pay_en),
             "addr": rng.choice(p.addr_zh if zh else p.addr_en)}[kind]
    head = [role, "单号" if zh else "ref", org, extra, "产品" if zh else "product"]
    return head, [kind]


def _cells(c: Ctx, zh: bool, kind: str, sep: str) -> list[str]:
    value = {"dob": _dob, "pay": _pay, "addr": _address}[kind](c, zh)
    if "\n" in value.text:  # one line per row
        value = Value(value.text.replace("\n", ", "), value.family, value.field, value.label_en, value.label_zh)
    cell = f'"{value.text}"' if sep in value.text else value.text
    c.values.append(value)
    return [c.value(_person(c).name), _ref(c), _org(c, zh), cell, _product(c, zh)]


def table(c: Ctx) -> str:
    """A markdown table (a: pipes; b: TSV) of 2-4 people."""
    head, (kind,) = _row(c, c.zh)
    sep = "|" if c.pool is POOLS["a"] else "\t"
    rows = [_cells(c, c.zh, kind, sep) for _ in range(c.rng.randint(2, 4))]
    if sep == "|":
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        lines = ["\t".join(head)] + ["\t".join(r) for r in rows]
    return "\n".join([f"Exported from `{c.need(c.needed[0])}`:", ""] + lines)


def csv_rows(c: Ctx) -> str:
    """CSV rows without a header line naming people (a: the header is a role word; b: no header at all)."""
    head, (kind,) = _row(c, c.zh)
    rows = [_cells(c, c.zh, kind, ",") for _ in range(c.rng.randint(2, 4))]
    lines = [",".join(head)] if c.pool is POOLS["a"] else []
    lines += [",".join(r) for r in rows]
    return "\n".join(lines)


def records_json(c: Ctx) -> str:
    """JSON records keyed by role words."""
    rng, p = c.rng, c.pool
    out = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["dob", "pay", "addr"])
        role = rng.choice(p.roles_zh if c.zh else p.roles_en).replace(" ", "_")
        label = rng.choice({"dob": p.dob_zh if c.zh else p.dob_en, "pay": p.pay_zh if c.zh else p.pay_en,
                            "addr": p.addr_zh if c.zh else p.addr_en}[kind]).replace(" ", "_")
        value = {"dob": _dob, "pay": _pay, "addr": _address}[kind](c, c.zh)
        out.append({role: c.value(_person(c).name), "ref": _ref(c), "vendor": _org(c, c.zh),
                    label: c.value(value), "event": _event(c, c.zh)})
    return json.dumps({"items": out, "took": c.need(c.needed[3])}, ensure_ascii=False, indent=1)


def chat(c: Ctx) -> str:
    """A chat transcript: speakers by given name, full names and amounts in the messages."""
    rng = c.rng
    a, b = _person(c), _person(c)
    third = _person(c)
    if c.zh:
        sa, sb = a.name.text, b.name.text  # Chinese chats show the full name
        c.values += [a.name, b.name]
        lines = [f"[09:{rng.randint(10, 59)}] {sa}：{_ref(c)} 的发票是{_org(c, True)}开的",
                 f"[09:{rng.randint(10, 59)}] {sb}：好的，我转给{c.value(third.name)}处理",
                 f"[10:{rng.randint(10, 59)}] {sa}：{rng.choice(c.pool.pay_zh)}{c.value(_pay(c, True))}，"
                 f"下周{_event(c, True)}前报掉"]
        return "\n".join(lines)
    ga, gb = a.given, b.given
    c.values += [Value(ga, "identity", "given_name", "name", "名"), Value(gb, "identity", "given_name", "name", "名")]
    lines = [f"[09:{rng.randint(10, 59)}] {ga}: did {_org(c, False)} send the invoice for {_ref(c)}?",
             f"[09:{rng.randint(10, 59)}] {gb}: yes - forwarding to {c.value(third.name)} now",
             f"[10:{rng.randint(10, 59)}] {ga}: thanks {gb}, the {rng.choice(c.pool.pay_en)} is "
             f"{c.value(_pay(c, False))}; see {_product(c, False)}"]
    return "\n".join(lines)


def log_lines(c: Ctx) -> str:
    """Application log lines naming people, references and vendors."""
    rng, lines = c.rng, []
    for _ in range(rng.randint(2, 3)):
        person = _person(c)
        role = rng.choice(c.pool.roles_en).replace(" ", "_")
        if c.pool is POOLS["a"]:
            lines.append(f"{c.need(c.needed[7])} INFO claim {_ref(c)} assigned to {c.value(person.name)} "
                         f"(insurer: {_org(c, c.zh)})")
        else:
            lines.append(f'ts={c.need(c.needed[7])} level=info ref={_ref(c)} {role}="{c.value(person.name)}" '
                         f'vendor="{_org(c, c.zh)}"')
    return "\n".join(lines)


def email(c: Ctx) -> str:
    """An e-mail: sender, subject line (needed), greeting by given name, a signature with a home address."""
    rng, p = c.rng, c.pool
    sender, to = _person(c), _person(c)
    subject = c.need(rng.choice(p.subjects).format(ref=rng.choice(p.refs)(rng)))
    if c.zh:
        c.values.append(to.name)
        return (f"发件人：{c.value(sender.name)}\n主题：{subject}\n\n{to.name.text}你好，\n\n"
                f"{_event(c, True)}的{rng.choice(p.pay_zh)}是{c.value(_pay(c, True))}，请在{_product(c, True)}里审批。\n\n"
                f"{sender.name.text}\n{rng.choice(p.addr_zh)}：{c.value(_address(c, True))}")
    c.values.append(Value(to.given, "identity", "given_name", "name", "名"))
    return (f"From: {c.value(sender.name)}\nSubject: {subject}\n\nHi {to.given},\n\nThe {rng.choice(p.pay_en)} for "
            f"{_event(c, False)} is {c.value(_pay(c, False))}; {_org(c, False)} confirmed.\n\n"
            f"{sender.name.text}\n{c.value(_address(c, False))}")


CONTAINERS = (prose, table, csv_rows, records_json, chat, log_lines, email)


def make_case(seed: int, index: int, pool_name: str) -> Case:
    if pool_name not in POOL_NAMES:
        raise ValueError(f"unknown pool {pool_name!r}")
    rng = random.Random(f"people-{pool_name}-{seed}-{index}")
    zh = rng.random() < 0.4
    needed = _needed(rng)
    c = Ctx(rng, POOLS[pool_name], zh, needed)
    case = Case(id=f"p{pool_name}{seed}-{index}", zh=zh, body={})
    messages: list[dict[str, Any]] = [{"role": "system", "content": _SYSTEM},
                                         {"role": "user", "content": prose(c)}]
    calls = []
    for turn in range(rng.randint(2, 4)):
        call_id, call = tool_call(rng, needed[0])
        calls.append(call_id)
        messages.append(call)
        render = CONTAINERS[(index + turn + 1) % len(CONTAINERS)]
        messages.append({"role": "tool", "tool_call_id": call_id, "content": render(c)})
    case.values = c.values
    case.needed = list(dict.fromkeys(c.keep + needed + calls + [TOOLS[0], TOOLS[3]]))
    return finish(case, messages, needed)


def corpus(seed: int, cases: int, pool: str) -> list[Case]:
    return [make_case(seed, i, pool) for i in range(cases)]
