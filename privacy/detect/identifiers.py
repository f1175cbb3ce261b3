"""Identifiers found by their shape and check digits alone, with no label: IBANs of every country (MOD-97 and the
country's length, in any case and grouping), ICAO machine-readable passport lines (MRZ check digits), payment cards
in any grouping (Luhn), UK National Insurance and DVLA driving-licence numbers, street addresses in Chinese.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from privacy.detect.checksums import iban_ok, luhn_ok
from privacy.detect.findings import Finding
from privacy.detect.firstchars import compile_fast

# ISO 13616 lengths (SWIFT IBAN registry).
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27, "BR": 29,
    "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
    "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
    "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28,
    "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
    "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
    "SO": 23, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}


def _compact(value: str) -> str:
    return re.sub(r"[\s\-.]", "", value).upper()


def _iban_any_ok(value: str) -> bool:
    compact = _compact(value)
    return IBAN_LENGTHS.get(compact[:2]) == len(compact) and iban_ok(compact)


def mrz_check_digit(field: str) -> int:
    total = 0
    for i, ch in enumerate(field):
        v = 0 if ch == "<" else int(ch) if ch.isdigit() else ord(ch) - 55
        total += v * (7, 3, 1)[i % 3]
    return total % 10


def _mrz_ok(line: str) -> bool:
    """TD3 line 2: document number, birth date and expiry with their check digits."""
    if len(line) != 44:
        return False
    for start, end in ((0, 9), (13, 19), (21, 27)):
        if not line[end].isdigit() or mrz_check_digit(line[start:end]) != int(line[end]):
            return False
    return mrz_check_digit(line[0:10] + line[13:20] + line[21:43]) == int(line[43])


def _card_ok(value: str) -> bool:
    digits = re.sub(r"\D", "", value)
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_ok(digits) and len(set(digits)) > 2


def _email_key(value: str) -> str:
    return re.sub(r"%40|&#0*64;|&commat;|\\u0040|＠|\s?[\[(]at[\])]\s?", "@", value, flags=re.IGNORECASE).lower()


_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0))
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8))


def _digits(value: str) -> str:
    return re.sub(r"\D", "", value)


def verhoeff_ok(digits: str) -> bool:
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = _VERHOEFF_D[c][_VERHOEFF_P[i % 8][int(ch)]]
    return c == 0


def _aadhaar_ok(value: str) -> bool:
    """India's Aadhaar: 12 digits, the first 2–9, Verhoeff check digit, not one digit repeated."""
    digits = _digits(value)
    return len(digits) == 12 and digits[0] not in "01" and len(set(digits)) > 3 and verhoeff_ok(digits)


def _nric_ok(value: str) -> bool:
    """Singapore NRIC/FIN: prefix, 7 digits, check letter from the weighted digit sum."""
    prefix, digits, letter = value[0], value[1:8], value[8]
    total = sum(int(d) * w for d, w in zip(digits, (2, 7, 6, 5, 4, 3, 2), strict=True))
    if prefix in "TG":
        total += 4
    elif prefix == "M":
        total += 3
    if prefix in "ST":
        return "JZIHGFEDCBA"[total % 11] == letter
    if prefix in "FG":
        return "XWUTRQPNMLK"[total % 11] == letter
    return "KLJNPQRTUWX"[10 - total % 11] == letter  # M (FIN from 2022)


def _hkid_ok(value: str) -> bool:
    """Hong Kong identity card: one or two letters, six digits, a check digit (0–9 or A) mod 11."""
    compact = re.sub(r"[\s()]", "", value).upper()
    letters, digits, check = compact[:-7], compact[-7:-1], compact[-1]
    if len(letters) == 1:
        letters = " " + letters
    values = [36 if ch == " " else ord(ch) - 55 for ch in letters] + [int(d) for d in digits]
    total = sum(v * w for v, w in zip(values, range(9, 1, -1), strict=True))
    expected = (11 - total % 11) % 11
    return check == ("A" if expected == 10 else str(expected))


def _sin_or_tfn_ok(value: str) -> bool:
    """Canadian SIN (Luhn, not starting 0 or 8) or Australian TFN (weighted mod 11), written in groups of three."""
    digits = _digits(value)
    if len(digits) != 9 or len(set(digits)) < 3:
        return False
    if digits[0] not in "08" and luhn_ok(digits):
        return True
    return sum(int(d) * w for d, w in zip(digits, (1, 4, 3, 7, 5, 8, 6, 9, 10), strict=True)) % 11 == 0


def _nhs_ok(value: str) -> bool:
    """NHS number: ten digits, the last a mod-11 check on the first nine."""
    digits = _digits(value)
    if len(digits) != 10 or len(set(digits)) < 3:
        return False
    check = 11 - sum(int(d) * w for d, w in zip(digits, range(10, 1, -1), strict=False)) % 11
    return check != 10 and (0 if check == 11 else check) == int(digits[9])


@dataclass(frozen=True)
class _Rule:
    type: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None
    canonical: Callable[[str], str]
    shrink: bool = False  # on a failed check, try the match without its last groups (a word after a grouped IBAN)
    fold: bool = False  # matched in any case, checked upper-cased (a check digit makes a lower-case id as distinctive)


_RULES = (
    _Rule("IBAN_CODE", compile_fast(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[A-Za-z0-9]{11,30}|(?:[ \-.][A-Za-z0-9]{1,4}){3,8})"
                                  r"(?![A-Za-z0-9])"), _iban_any_ok, _compact, shrink=True),
    _Rule("PASSPORT", compile_fast(r"(?<![A-Z0-9<])[A-Z0-9<]{9}\d[A-Z<]{3}\d{6}\d[MFX<]\d{6}\d[A-Z0-9<]{14}[\d<]\d"
                                 r"(?![A-Z0-9<])"), _mrz_ok, str),
    _Rule("PASSPORT", compile_fast(r"(?<![A-Z0-9<])P[A-Z<][A-Z<]{3}[A-Z]+<<[A-Z<]{2,39}(?![A-Z0-9<])"), None, str),
    _Rule("CREDIT_CARD", compile_fast(r"(?<![\d\-.])(?:\d[ \-.]?){12,18}\d(?![\d\-])"), _card_ok,
          lambda v: re.sub(r"\D", "", v)),
    _Rule("NATIONAL_ID", compile_fast(r"(?<![A-Za-z0-9])(?![DFIQUV])[A-Z](?![DFIOQUV])[A-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]"
                                    r"(?![A-Za-z0-9])"), lambda v: v[:2] not in {"BG", "GB", "NK", "KN", "TN", "NT",
                                                                                  "ZZ"}, lambda v: v.replace(" ", "")),
    _Rule("NATIONAL_ID", compile_fast(r"(?<![\w\-.])[2-9]\d{3}([ \-]?)\d{4}\1\d{4}(?![\w\-]|\.\d)"), _aadhaar_ok,
          _digits),
    _Rule("NATIONAL_ID", compile_fast(r"(?<![A-Za-z0-9])[STFGM]\d{7}[A-Z](?![A-Za-z0-9])", re.IGNORECASE), _nric_ok, str,
          fold=True),
    _Rule("NATIONAL_ID", compile_fast(r"(?<![A-Za-z0-9])[A-Z]{1,2}\d{6}(?:\([0-9A]\)|[0-9A])(?![A-Za-z0-9])", re.IGNORECASE),
          _hkid_ok, lambda v: re.sub(r"[()]", "", v), fold=True),
    _Rule("NATIONAL_ID", compile_fast(r"(?<![\w\-.])\d{3}([ \-.])\d{3}\1\d{3}(?![\w\-]|\.\d)"), _sin_or_tfn_ok, _digits),
    _Rule("NATIONAL_ID", compile_fast(r"(?<![\w\-.])\d{3}([ \-])\d{3}\1\d{4}(?![\w\-]|\.\d)"), _nhs_ok, _digits),
    # India's PAN: five letters (the fourth the holder's kind), four digits, a letter.
    _Rule("NATIONAL_ID", compile_fast(r"(?<![A-Za-z0-9])[A-Z]{3}[PCHFATBLJG][A-Z]\d{4}[A-Z](?![A-Za-z0-9])"), None, str),
    _Rule("DRIVERS_LICENSE", compile_fast(r"(?<![A-Za-z0-9])[A-Z9]{5}\d[0156]\d[0-3]\d{2}[A-Z9]{2}\d[A-Z]{2}"
                                        r"(?![A-Za-z0-9])"), None, str),
    _Rule("EMAIL_ADDRESS", compile_fast(r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._+\-]+(?:%40|&#0*64;|&commat;|\\u0040|＠|"
                                      r"\s?[\[(]at[\])]\s?)[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"
                                      r"(?![A-Za-z0-9\-])", re.IGNORECASE), None, _email_key),
    _Rule("LOCATION", compile_fast(r"[\u4e00-\u9fff]{2,9}(?:省|自治区|市)[\u4e00-\u9fff]{0,9}(?:市|区|县|旗)"
                                 r"[\u4e00-\u9fff\d]{1,20}?(?:路|街|道|大道|巷|弄|村)\d+号"
                                 r"(?:[\d一二三四五六七八九十]+(?:栋|幢|号楼|单元|层|楼|室))*"), None, str),
)


class IdentifierDetector:
    def find(self, text: str) -> list[Finding]:
        out: list[Finding] = []
        for rule in _RULES:
            for m in rule.pattern.finditer(text):
                value = m.group(0)
                while rule.shrink and rule.check is not None and not rule.check(value) and re.search(r"[ \-.]", value):
                    value = re.split(r"[ \-.](?=[^ \-.]*$)", value)[0]
                read = value.upper() if rule.fold else value
                if rule.check is None or rule.check(read):
                    out.append(Finding(type=rule.type, start=m.start(), end=m.end(), value=value, layer="patterns",
                                       key=f"{rule.type}:{rule.canonical(read)}"))
        return out
