"""Labelled values: an identifier, an amount, a name or an address is private because of the label next to it.

The label may be a JSON key or CSV column (``label``), an env or YAML name (``PASSPORT_NO=…``, ``passport: …``), a
log or form field (``Passport no.: …``), or prose (``the routing number is …``, ``护照号码是…``). Labels are English
and Chinese. Each type has a value shape (identifiers carry digits, amounts are numbers, names are capitalised
words or 2–4 Chinese characters), so a label followed by ordinary words finds nothing. A value found after a label
is found wherever else it appears in the same text.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from privacy.findings import Finding
from privacy.keyhints import structured_pairs
from privacy.secrets import _PLACEHOLDER_VALUES
from privacy.units import _escaped_forms, _literal_pattern


def _words(*phrases: str) -> str:
    """Label phrases; a space matches spaces, ``_``, ``-`` or nothing (``DRIVERS_LICENSE``, ``SortCode``)."""
    return "|".join(p.replace("'", "['’]?").replace(" ", r"[\s_\-]*") for p in phrases)


_ID_SUFFIX = r"(?:[\s_\-]*(?:no\.?|nr\.?|num(?:ber)?|#|id|code|号码?|编号))?"
_ID_VALUE = re.compile(r"^(?=[A-Za-z0-9<\-/. ]*\d)[A-Za-z0-9][A-Za-z0-9<\-/.]*"
                       r"(?: (?:(?=[A-Za-z\-]*\d)[A-Za-z0-9\-]{1,12}|[A-Z]{4})){0,7}$")
_AMOUNT_VALUE = re.compile(r"^[¥$€£]?\s?\d{1,3}(?:[,.' ]?\d{3})+(?:[.,]\d{1,2})?$|^[¥$€£]?\s?\d{4,9}(?:[.,]\d{1,2})?$")
_PHONE_VALUE = re.compile(r"^\+?[\d\s\-().]{7,20}$")
_PERSON_VALUE = re.compile(r"^(?:[A-ZÀ-Þ][\w'’\-]+(?: (?:(?:van|von|de|der|den|da|di|del|la|le|du|al|bin|ter) )*"
                           r"[A-ZÀ-Þ][\w'’\-]+){1,3}|[\u4e00-\u9fff]{2,4}|[\u4e00-\u9fff]{1,3}·[\u4e00-\u9fff]{1,6})$")
_ADDRESS_VALUE = re.compile(r"^(?=.*\d)[^\n]{6,90}$")


def _digits_between(low: int, high: int) -> Callable[[str], bool]:
    return lambda v: low <= sum(ch.isdigit() for ch in v) <= high


def _secret_like(value: str) -> bool:
    """Not a placeholder, a variable reference or a plain word: a digit, a symbol, or length."""
    if value.lower() in _PLACEHOLDER_VALUES or value.startswith(("$", "{", "<", "%")):
        return False
    return any(not ch.isalpha() for ch in value) or len(value) >= 12


@dataclass(frozen=True)
class LabelRule:
    type: str
    label: re.Pattern[str]
    shape: re.Pattern[str]
    check: Callable[[str], bool] | None = None


def _rule(type_: str, phrases: str, shape: re.Pattern[str], check: Callable[[str], bool] | None = None,
          suffix: str = _ID_SUFFIX) -> LabelRule:
    return LabelRule(type_, re.compile(r"(?:" + phrases + r")" + suffix, re.IGNORECASE), shape, check)


RULES: tuple[LabelRule, ...] = (
    _rule("PASSPORT", _words("passport", "travel document", "护照", "护照号"), _ID_VALUE, _digits_between(1, 12)),
    _rule("MRZ", _words("mrz", "machine readable zone", "机读码"), _ID_VALUE),
    _rule("DRIVERS_LICENSE", _words("driver's licen[cs]e", "drivers licen[cs]e", "driving licen[cs]e", "licen[cs]e",
                                    "dl", "dvla", "驾驶证", "驾照"), _ID_VALUE, _digits_between(4, 20)),
    _rule("NATIONAL_ID", _words("national insurance", "ni", "nino", "social security", "ssn", "a number",
                                "alien registration", "alien", "uscis", "national id", "id card", "identity card",
                                "tax id", "tin", "身份证", "国民保险号", "英国国民保险号", "外国人登记号", "社保号"),
          _ID_VALUE, _digits_between(4, 20)),
    _rule("MEDICAL_RECORD", _words("mrn", "medical record", "patient", "health record", "nhs", "病历号", "病历",
                                   "住院号", "医保号"), _ID_VALUE, _digits_between(4, 20)),
    _rule("ROUTING_NUMBER", _words("routing", "aba", "routing transit", "sort code", "bsb", "swift", "bic",
                                   "路由号", "ABA路由号", "银行代码", "行号"), _ID_VALUE, _digits_between(4, 11)),
    _rule("IBAN_CODE", _words("iban", "国际银行账号"), _ID_VALUE, _digits_between(6, 34)),
    _rule("ACCOUNT_NUMBER", _words("account", "acct", "bank account", "card", "policy", "insurance policy",
                                   "membership", "member", "case", "claim", "customer", "client", "contract",
                                   "invoice account", "loyalty", "subscriber", "账号", "帐号", "账户", "卡号",
                                   "银行卡号", "保单号", "保单", "会员号", "会员", "案件编号", "案件号", "客户编号",
                                   "客户号", "合同号"), _ID_VALUE, _digits_between(5, 30)),
    _rule("AMOUNT", _words("salary", "annual salary", "monthly salary", "base salary", "wage", "income", "balance",
                           "account balance", "net worth", "bonus", "compensation", "工资", "年薪", "月薪", "薪资",
                           "薪水", "余额", "收入", "奖金"), _AMOUNT_VALUE, suffix=""),
    _rule("ALIPAY_ACCOUNT", _words("alipay", "alipay account", "wechat pay", "支付宝", "支付宝账号", "微信支付"),
          re.compile(r"^\S{5,60}$"), suffix=""),
    _rule("PHONE_NUMBER", _words("phone", "telephone", "tel", "mobile", "cell", "phone number", "contact number",
                                 "fax", "电话", "手机", "手机号", "联系电话", "联系方式"), _PHONE_VALUE,
          _digits_between(7, 15), suffix=""),
    _rule("PASSWORD", _words("password", "passwd", "passphrase", "pwd", "pass", "secret", "token", "api key",
                             "apikey", "access key", "secret key", "access token", "auth token", "api token",
                             "client secret", "webhook secret", "signing secret", "credential", "credentials",
                             "密码", "口令", "密钥", "令牌", "访问密钥"), re.compile(r"^[^\s\[]{6,300}$"),
          _secret_like, suffix=""),
    _rule("PERSON", _words("name", "full name", "customer name", "patient name", "account holder", "holder",
                           "cardholder", "姓名", "名字", "联系人", "客户姓名", "持卡人"), _PERSON_VALUE, suffix=""),
    _rule("LOCATION", _words("address", "home address", "street address", "mailing address", "billing address",
                             "shipping address", "地址", "住址", "家庭住址", "收货地址", "通讯地址"), _ADDRESS_VALUE,
          suffix=""),
)

# A label in a key: what it names is the label itself, not a date, country or file about it.
_NOT_VALUE_KEY = re.compile(r"(?:expir\w*|date|country|issued?\w*|type|status|file|path|url|count|len(?:gth)?|"
                            r"format|valid\w*|verified|hash|mask(?:ed)?|last4|prefix|template|pattern|example|"
                            r"regex|field|column|label|schema)$", re.IGNORECASE)
_CONNECTOR = r"[\"']?\s*(?:[:=：]|=>|\bis\b|\bwas\b|是|为|：)\s*[\"']?"
_ID_CONNECTOR = r"(?:" + _CONNECTOR + r"|[ \t]+#?)"  # an identifier may follow its label after a space: "MRN 0042117"
_CHAR = r"(?:[^\s\"'<>{}\[\],;，；。、|]|,(?=\d{3}(?!\d)))"
_TEXT_VALUE = r"(" + _CHAR + r"+(?:[ ]" + _CHAR + r"+){0,6})"


def _label_types(key: str) -> list[LabelRule]:
    """Rules whose label names this key entirely (optionally after a qualifier such as ``customer_``)."""
    key = key.strip()
    if not key or _NOT_VALUE_KEY.search(key):
        return []
    out = []
    for rule in RULES:
        matches = list(rule.label.finditer(key))
        m = matches[-1] if matches else None
        if m is not None and m.end() == len(key) and (m.start() == 0 or not key[m.start() - 1].isalnum()
                                                      or key[m.start() - 1].islower() != key[m.start()].islower()
                                                      or not key[m.start()].isascii()):
            out.append(rule)
    return out


def _csv_pairs(text: str) -> Iterator[tuple[str, str]]:
    """(column, cell) of a CSV/TSV whose header names at least one labelled column (quoted cells honoured)."""
    lines = text.splitlines()
    while lines and lines[0].lstrip().startswith("#"):
        lines = lines[1:]
    if len(lines) < 2:
        return
    for sep in (",", "\t", "|", ";"):
        if sep not in lines[0]:
            continue
        try:
            rows = list(csv.reader(lines, delimiter=sep))
        except csv.Error:
            continue
        header = [h.strip() for h in rows[0]]
        if len(header) >= 2 and any(_label_types(h) for h in header):
            for cells in rows[1:]:
                if len(cells) == len(header):
                    yield from zip(header, (c.strip() for c in cells), strict=True)
            return


def _accept(rule: LabelRule, value: str) -> str | None:
    """The longest prefix of ``value`` (by whole words) that has the rule's shape, or None."""
    value = " ".join(value.split()).rstrip(".。,;:")  # a value wrapped across a line reads as one
    words = value.split(" ")
    for n in range(len(words), 0, -1):
        candidate = " ".join(words[:n]).rstrip(".。,;:")
        if rule.shape.match(candidate) and (rule.check is None or rule.check(candidate)):
            return candidate
    return None


def _in_text(text: str) -> Iterator[tuple[str, str]]:
    """(type, value) for ``label <connector> value`` anywhere in the text."""
    for rule in RULES:
        connector = _ID_CONNECTOR if rule.shape is _ID_VALUE else _CONNECTOR
        for m in re.finditer(r"(?<![A-Za-z0-9])(?:" + rule.label.pattern + r")" + connector + _TEXT_VALUE, text,
                             re.IGNORECASE):
            value = _accept(rule, m.group(1))
            if value:
                yield rule.type, value


class LabelledValueDetector:
    def find(self, text: str, label: str | None) -> list[Finding]:
        hinted: dict[str, str] = {}
        if label is not None:
            for rule in _label_types(label):
                value = _accept(rule, text)
                if value is not None and value == " ".join(text.split()):
                    hinted.setdefault(value, rule.type)
        for key, value in structured_pairs(text, _csv_pairs):
            for rule in _label_types(key):
                accepted = _accept(rule, value)
                if accepted is not None and accepted == " ".join(value.split()):
                    hinted.setdefault(accepted, rule.type)
        for type_, value in _in_text(text):
            hinted.setdefault(value, type_)
        out: list[Finding] = []
        for value, type_ in hinted.items():
            if len(value) < 2:
                continue
            pattern = re.compile("|".join(_literal_pattern(f) for f in _escaped_forms(value)))
            for m in pattern.finditer(text):
                out.append(Finding(type=type_, start=m.start(), end=m.end(), value=value, layer="patterns",
                                   key=f"{type_}:{value}"))
        return out
