"""Dates of birth. A date is not sensitive by itself (agents need timestamps, due dates, event days); a date
under a birth word is (``born 14 March 1987``, ``出生于1990年5月3日``, ``dob: 1987-03-14``, a ``birth_date`` key or
column), in ISO, numeric, written-out and Chinese forms."""

from __future__ import annotations

import re

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
          r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
DATE = re.compile(
    r"(?<![\dA-Za-z])(?:(?:19|20)\d{2}[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])(?![\d:T])"
    r"|(?:0?[1-9]|[12]\d|3[01])[-/.](?:0?[1-9]|1[0-2])[-/.](?:19|20)\d{2}"
    r"|(?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])[-/.](?:19|20)\d{2}"
    r"|(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?[ \t]+" + _MONTH + r"\.?,?[ \t]+(?:19|20)\d{2}"
    r"|" + _MONTH + r"\.?[ \t]+(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?,?[ \t]+(?:19|20)\d{2}"
    r"|(?:19|20)\d{2}[ \t]*年[ \t]*(?:0?[1-9]|1[0-2])[ \t]*月(?:[ \t]*(?:0?[1-9]|[12]\d|3[01])[ \t]*[日号])?)"
    r"(?!\d)", re.IGNORECASE)
BIRTH_WORD = re.compile(r"(?i)(?<![A-Za-z])(?:born(?:[ _\-]?on)?|birth(?:[ _\-]?date|[ _\-]?day)?|birthdate|"
                        r"birthday|dob|d\.o\.b\.?|date[ _\-]?of[ _\-]?birth|geb(?:oren|\.)?|née)(?![A-Za-z])|"
                        r"出生(?:于|日期|年月日?|时间)?|生日|生于|出生地?")
_GAP = re.compile(r"""["'\\]*[ \t]*(?:[:=：]|\bis\b|\bwas\b|\bon\b|\bin\b|于|为|是)?[ \t"'|,\\]*""", re.IGNORECASE)


_HINTS = ("born", "birth", "dob", "d.o.b", "geb", "née", "出生", "生日", "生于")


def birth_label(label: str) -> bool:
    """Whether a key or column names a date of birth (``dob``, ``birth_date``, ``DateOfBirth``, ``出生日期``)."""
    return BIRTH_WORD.search(re.sub(r"(?<=[a-z])(?=[A-Z])", "_", label)) is not None


def birth_dates(text: str) -> list[tuple[int, int]]:
    """Spans of dates that follow a birth word (a few separators or ``on``/``于`` between them)."""
    spans: list[tuple[int, int]] = []
    lowered = text.lower()
    if not any(hint in lowered for hint in _HINTS):
        return spans
    for word in BIRTH_WORD.finditer(text):
        gap = _GAP.match(text, word.end())
        start = gap.end() if gap else word.end()
        m = DATE.match(text, start)
        if m is not None:
            spans.append((m.start(), m.end()))
    return spans
