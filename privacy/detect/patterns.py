"""PII patterns with validators, English and mainland-China formats.

Coverage: emails; phones (US/NANP, UK, international ``+CC``, mainland-China mobiles and landlines in every
common separator); credit cards (Luhn); IBANs (mod 97); US SSNs; passport numbers (after a passport label, en/zh);
mainland-China resident IDs (mod-11 check); bank accounts (after an account label, en/zh); IPv4/IPv6 addresses
(not loopback); dates of birth after a label; Chinese names and addresses after a label (姓名/联系人/地址…).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass

from privacy.detect.checksums import cn_resident_id_ok, iban_ok, luhn_ok
from privacy.detect.findings import Finding
from privacy.detect.firstchars import compile_fast


def _digits(value: str) -> str:
    return re.sub(r"\D", "", value)


def _phone_ok(value: str) -> bool:
    return 8 <= len(_digits(value)) <= 15


def _card_ok(value: str) -> bool:
    digits = _digits(value)
    return 13 <= len(digits) <= 19 and digits[0] in "3456" and luhn_ok(digits) and len(set(digits)) > 1


def _ip_ok(value: str) -> bool:
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return False
    # A private or link-local address (10.x, 192.168.x, fd00::…) names a machine inside somebody's network, not a
    # person, and agents need them (a service's bind address, an access log); a public address can be a person's.
    return not (address.is_loopback or address.is_unspecified or address.is_multicast or address.is_private
                or address.is_link_local or str(address).startswith("255."))


def _email_ok(value: str) -> bool:
    local = value.split("@", 1)[0].lower()
    return local not in {"git", "noreply", "no-reply"}


@dataclass(frozen=True)
class PatternRule:
    type: str
    pattern: re.Pattern[str]
    group: int = 0
    check: Callable[[str], bool] | None = None
    canonical: Callable[[str], str] = str


_D = r"[\s\-.]?"
_CJK = r"\u4e00-\u9fff"
_LOWER = str.lower

RULES: tuple[PatternRule, ...] = (
    PatternRule("EMAIL_ADDRESS", compile_fast(r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*"
                                            r"\.[A-Za-z]{2,}(?![A-Za-z0-9\-])"), check=_email_ok, canonical=_LOWER),
    PatternRule("CN_RESIDENT_ID", compile_fast(r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])"
                                             r"(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![0-9A-Za-z])"),
                check=cn_resident_id_ok, canonical=str.upper),
    PatternRule("CREDIT_CARD", compile_fast(r"(?<![\d\-])(?:\d[ \-]?){12,18}\d(?![\d\-])"), check=_card_ok,
                canonical=_digits),
    PatternRule("IBAN_CODE", compile_fast(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?"
                                        r"(?![A-Za-z0-9])"), check=iban_ok, canonical=lambda v: v.replace(" ", "")),
    # the dashed shape is the signal, valid or not (9xx, the ITIN range, 666); validity gates only spaced digits
    PatternRule("US_SSN", compile_fast(r"(?<![\d\-])(?:\d{3}-\d{2}-\d{4}|(?!000|666|9\d\d)\d{3} (?!00)\d{2} "
                                     r"(?!0000)\d{4})(?![\d\-])"),
                canonical=_digits),
    PatternRule("PHONE_NUMBER", compile_fast(r"(?<![0-9A-Za-z_+])(?:\+?86[\s\-]?)?1[3-9]\d" + r"(?:[\s\-.]?\d{4}){2}(?!\d)"),
                canonical=lambda v: _digits(v)[-11:]),
    PatternRule("PHONE_NUMBER", compile_fast(r"(?<![0-9A-Za-z_])0\d{2,3}-\d{7,8}(?!\d)"), canonical=_digits),
    PatternRule("PHONE_NUMBER", compile_fast(r"(?<![0-9A-Za-z_+])(?:\+?1[\s.\-]?)?(?:\([2-9]\d{2}\)\s?|[2-9]\d{2}[\s.\-])"
                                           r"[2-9]\d{2}[\s.\-]\d{4}(?!\d)"), check=_phone_ok,
                canonical=lambda v: _digits(v)[-10:]),
    PatternRule("PHONE_NUMBER", compile_fast(r"(?<![0-9A-Za-z_+])(?:\+44\s?|0)(?:7\d{3}|20|1\d{2,3})\s?\d{3,4}\s?\d{3,4}(?!\d)"),
                check=_phone_ok, canonical=lambda v: _digits(v)[-10:]),
    PatternRule("PHONE_NUMBER", compile_fast(r"(?<![0-9A-Za-z_+])\+\d{1,3}(?:[\s\-.]?(?:\(\d{1,5}\)|\d{1,5})){2,5}(?![\d])"),
                check=_phone_ok, canonical=_digits),
    PatternRule("PASSPORT", compile_fast(r"(?i)(?:passport|护照)(?:\s*(?:no\.?|number|#|号码?))?\s*[:：#]?\s*"
                                       r"([A-Z]{1,2}\d{6,8}|\d{9})(?![A-Za-z0-9])"), group=1, canonical=str.upper),
    PatternRule("BANK_ACCOUNT", compile_fast(r"(?i)(?:account(?:\s*(?:no\.?|number|#))?|acct\.?|routing(?:\s*number)?|"
                                           r"银行卡号?|卡号|账号|帐号|账户|開戶|开户账号)\s*[:：#]?\s*((?:\d[\s\-]?){7,22}\d)"
                                           r"(?!\d)"), group=1, canonical=_digits),
    PatternRule("IP_ADDRESS", compile_fast(r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}"
                                         r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.])"), check=_ip_ok),
    PatternRule("IP_ADDRESS", compile_fast(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}(?![0-9A-Fa-f:])"),
                check=_ip_ok, canonical=_LOWER),
    PatternRule("DATE_OF_BIRTH", compile_fast(r"(?i)(?:\bdob|date of birth|birth ?date|birthday|出生日期|生日)\s*[:：]?\s*"
                                            r"(\d{4}[\-/.年]\d{1,2}[\-/.月]\d{1,2}日?|\d{1,2}[\-/.]\d{1,2}[\-/.]\d{4})"),
                group=1),
    PatternRule("PERSON", compile_fast(r"(?:姓名|联系人|客户姓名|收件人|发件人|寄件人|收货人|负责人|患者|申请人|持卡人|户主)\s*[:：]\s*"
                                     r"([" + _CJK + r"·]{2,5})"), group=1),
    PatternRule("LOCATION", compile_fast(r"(?:地址|住址|家庭住址|收货地址|居住地)\s*[:：]\s*([^\s\"'，,;；|]{4,60})"), group=1),
    PatternRule("LOCATION", compile_fast(r"(?i)\b(?:home |mailing |street |billing |shipping )?address\s*[:：]\s*"
                                       r"(\d[^\n\"|;]{5,80}?)(?=\s*(?:\n|\"|\||;|$))"), group=1),
)


class PatternDetector:
    def find(self, text: str) -> list[Finding]:
        out: list[Finding] = []
        for rule in RULES:
            for m in rule.pattern.finditer(text):
                start, end = m.span(rule.group)
                value = text[start:end].rstrip()
                end = start + len(value)
                if not value or (rule.check is not None and not rule.check(value)):
                    continue
                out.append(Finding(type=rule.type, start=start, end=end, value=value, layer="patterns",
                                   key=f"{rule.type}:{rule.canonical(value)}"))
        return out
