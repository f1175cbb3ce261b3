"""The people layer: names, dates of birth, pay and home addresses that no label rule and no English NER finds.

Names come from ``ChineseNames`` (segmenter, surname list, context) and ``EnglishNames`` (role words, greetings,
chat speakers, given names), and from table structure: in a CSV, TSV or markdown table, a column whose header is a
role word or whose other cells are names holds names in every cell that has a name's shape (``aisha whitfield``
below ``Grace Nakamura``). Dates count under a birth word (``birthdates``). Money counts next to a person (on the
same line as a name this layer found) or after a pay word (``net pay``, ``reimburse``, ``rent``, ``报销``, ``房租``);
other amounts (a price list, an order total) stay. An address counts when a Chinese address closes with a building
number (``望京西园四区27号楼2单元1095``) or after a residence phrase (``lives at``, ``家住``), with its second line
when the first ends at a line break and the next is a town with a postcode. Everything found is then found
wherever it recurs in the same text (``LayeredDetector``)."""

from __future__ import annotations

import bisect
import datetime
import re
import threading
from collections.abc import Iterator

from privacy.detect.birthdates import DATE, birth_dates, birth_label
from privacy.detect.en_names import ROLE, STRONG_ROLES, EnglishNames
from privacy.detect.findings import Finding
from privacy.detect.given_names import GivenNames
from privacy.detect.segmenter import JiebaSegmenter
from privacy.detect.zh_names import ChineseNames

_MONEY = re.compile(r"(?<![A-Za-z0-9.])(?:(?:[¥$€£₹]|(?:USD|EUR|GBP|CNY|RMB|JPY|CHF|INR|SGD|AUD|CAD|HKD)[ \t]?)[ \t]?"
                    r"(?:\d{1,3}(?:[, ]\d{3})+|\d{1,9})(?:\.\d{1,2})?(?![\d,])"
                    r"|(?:\d{1,3}(?:,\d{3})+|\d{1,9})(?:\.\d{1,2})?[ \t]?(?:USD|EUR|GBP|CNY|RMB|JPY|CHF|INR|SGD|AUD|CAD|HKD|元|万元)"
                    r"(?![A-Za-z])|\d{1,3}(?:,\d{3})+\.\d{2}(?!\d)|\d{3,6}\.\d{2}(?![\d.]))")
_PAY_WORD = re.compile(r"(?<![A-Za-z])(?:net[ _\-]?pay|take[ _\-]?home(?:[ _\-]?pay)?|gross[ _\-]?pay|pay(?:slip|out)?|"
                       r"salary|wages?|reimburse(?:ment|d)?s?|expense(?:s|[ _\-]claim)?|rent|rental|deposit|invoice"
                       r"[ _\-]?total|amount[ _\-]?due|refund|allowance|bonus|stipend|owed?)(?![A-Za-z])|"
                       r"报销(?:金额)?|房租|租金|实发(?:工资|金额)?|到手(?:工资)?|工资|薪资|薪水|奖金|补贴|押金|发票金额|应付金额", re.IGNORECASE)
_MONEY_HINT = re.compile(r"[¥$€£₹元]|USD|EUR|GBP|CNY|RMB|JPY|CHF|INR|SGD|AUD|CAD|HKD|\d\.\d\d(?!\d)")
_ZH_ADDRESS = re.compile(r"[\u4e00-\u9fff]{0,12}(?:省|市|区|县|镇|乡|街道|路|街|巷|弄|村|苑|园|城|小区|花园|新村|公寓|大厦|家园)"
                         r"[\u4e00-\u9fff0-9]{0,12}?\d{1,5}[ \t]*(?:号楼|号院|号|栋|幢|座|弄)"
                         r"(?:[ \t]*\d{1,3}[ \t]*单元)?(?:[ \t]*\d{1,5}(?:[ \t]*[室号])?)?")
_RESIDENCE = re.compile(r"(?i)(?<![A-Za-z])(?:lives|living|resides|residing|reside|moved|relocated|home)[ \t]+(?:at|in|to)"
                        r"[ \t]+|(?<![A-Za-z])(?:home(?:[ _\-]?address)?|residence|residential[ _\-]address)[ \t]*[:=][ \t]*|"
                        r"家住|住在|现居住地[：:]?|居住于|现住")
_POSTCODE = (r"(?:[A-Z]{1,2}\d[A-Z\d]?[ \t]\d[A-Z]{2}|[A-Z]{2},?[ \t]\d{5}(?:-\d{4})?|[A-Z]{2}[ \t][A-Z]\d[A-Z][ \t]?"
             r"\d[A-Z]\d|\d{4,5}[ \t][A-Z][a-z]+)")
_EN_ADDRESS = re.compile(r"(?:(?:Flat|Apt|Apartment|Unit|Suite)\.?[ \t]+\w{1,5},?[ \t]+)?\d{1,5}[A-Za-z]?,?[ \t]+"
                         r"[A-Z][A-Za-z'\-]+(?:[ \t]+[A-Z][A-Za-z'\-]+){0,3},?(?:[ \t]+|[ \t]*\n[ \t]*)"
                         r"(?:[A-Z][A-Za-z'\-]+[ \t,]+){0,3}" + _POSTCODE + r"(?![A-Za-z0-9])")
# Each address is read back from its postcode, which stands after a space, a comma or a line break there: a number
# glued to a word (``CUST-1000 Farid``) is none, and a long prompt's hundred of them cost 2.5 ms.
_POSTCODE_RE = re.compile(r"(?<=[\s,])" + _POSTCODE)
_DIGIT = re.compile(r"\d")
_RESIDENCE_HINTS = ("liv", "resid", "home", "moved", "relocat", "家住", "住在", "居住", "现住")
_LINE_ADDRESS = re.compile(r"[^\n;。；|]{4,100}?(?=[.;。；]?(?:\n|$)|[.;。；][ \t])")
_TABLE_SEPS = ("|", "\t", ",", ";")
_YEAR = re.compile(r"(?:19|20)\d{2}")
_BIRTH_YEARS = 14  # a date this far back, in a row naming a person, is read as a birth date
_ZH_ROLE = re.compile(r"人$|^(?:客户|员工|职员|租户|房东|姓名|用户|患者|学生|老师|司机|联系人|经理)$")


class PeopleDetector:
    def __init__(self, zh: ChineseNames, en: EnglishNames, *, this_year: int | None = None) -> None:
        self._zh = zh
        self._en = en
        self._born_by = (this_year or datetime.date.today().year) - _BIRTH_YEARS

    def warm(self, *, chinese: bool) -> None:
        """Load the given-name list, and the segmenter when ``chinese``, now (``PrivacyProtector.start``), not on a
        first request."""
        if chinese:
            self._zh.warm()
        self._en.warm()

    def find(self, text: str, label: str | None, scope: str) -> list[Finding]:
        """People, their birth dates, pay and homes in ``text``; ``scope``: whose text (the segmenter's cache)."""
        tables = list(self._tables(text)) if "\n" in text else []
        people = self._en.find(text) + self._zh.find(text, scope) + list(self._table_names(text, tables, scope))
        found = [_finding("PERSON", text, s, e) for s, e in people]
        if label is not None and text.strip():
            found += self._under_label(text, label, scope)
        found += [_finding("DATE_OF_BIRTH", text, s, e) for s, e in birth_dates(text)]
        found += [_finding("DATE_OF_BIRTH", text, s, e) for s, e in self._table_dates(text, tables, people)]
        found += [_finding("AMOUNT", text, s, e) for s, e in self._pay(text, people)]
        found += [_finding("LOCATION", text, s, e) for s, e in self._addresses(text)]
        return found

    def _under_label(self, text: str, label: str, scope: str) -> list[Finding]:
        value = text.strip()
        start = text.index(value)
        span = (start, start + len(value))
        if birth_label(label) and DATE.fullmatch(value):
            return [_finding("DATE_OF_BIRTH", text, *span)]
        role = _role_label(label)
        if role and (self._en.loose_cell(value) or self._zh.whole(value, scope)):
            return [_finding("PERSON", text, *span)]
        if _PAY_WORD.search(label) and _MONEY.fullmatch(value):
            return [_finding("AMOUNT", text, *span)]
        return []

    def _pay(self, text: str, people: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        if not _MONEY_HINT.search(text):
            return
        for m in _MONEY.finditer(text):  # money is rare; a pay word shortly before it is looked for then
            before = text[max(0, m.start() - 48):m.start()]
            if "\n" in before:
                before = before[before.rindex("\n") + 1:]
            if _PAY_WORD.search(before):
                yield m.start(), m.end()
        if people:
            breaks = [m.start() for m in re.finditer("\n", text)]
            lines = {bisect.bisect(breaks, s) for s, _ in people}  # a line's number, not a search back to its start
            for m in _MONEY.finditer(text):
                if bisect.bisect(breaks, m.start()) in lines:
                    yield m.start(), m.end()

    def _addresses(self, text: str) -> Iterator[tuple[int, int]]:
        if not _DIGIT.search(text):  # every address this layer reads has a number
            return
        if re.search(r"[\u4e00-\u9fff]", text):
            for m in _ZH_ADDRESS.finditer(text):
                if re.search(r"[\u4e00-\u9fff]{2}", m.group(0)):
                    yield m.start(), m.end()
        end = 0
        for code in _POSTCODE_RE.finditer(text):  # an address ends in a postcode: read back from each one
            if code.start() < end:
                continue
            # an address spans this line and at most the one before, within 120 characters (looked for no further)
            low = max(0, code.start() - 120)
            eol = text.rfind("\n", low, code.start())
            window = max(end, low, text.rfind("\n", low, eol) + 1 if eol > 0 else 0)
            for m in _EN_ADDRESS.finditer(text, window, code.end()):
                if m.end() == code.end():
                    end = m.end()
                    yield m.start(), m.end()
                    break
        lowered = text.lower()
        if not any(hint in lowered for hint in _RESIDENCE_HINTS):
            return
        for m in _RESIDENCE.finditer(text):
            line = _LINE_ADDRESS.match(text, m.end())
            if line is not None and re.search(r"\d", line.group(0)):
                yield m.end(), line.end()

    def _tables(self, text: str) -> Iterator[list[list[tuple[int, int]]]]:
        """Each table's rows as cell spans (blocks of two or more lines cut by one separator the same way)."""
        lines: list[tuple[int, str]] = []
        pos = 0
        for line in text.split("\n"):
            lines.append((pos, line))
            pos += len(line) + 1
        for sep in _TABLE_SEPS:
            if text.count(sep) < 2:
                continue
            block: list[list[tuple[int, int]]] = []
            for start, line in lines + [(len(text), "")]:
                if sep == "|" and block and re.fullmatch(r"[ \t]*\|[\s|:\-]+", line):
                    continue  # a markdown table's rule line
                cells = _cells(line, start, sep) if sep in line else None
                if block and (cells is None or len(cells) != len(block[0])):
                    if len(block) >= 2:
                        yield block
                    block = []
                if cells is not None and len(cells) >= 2:
                    block.append(cells)

    def _table_names(self, text: str, tables: list[list[list[tuple[int, int]]]],
                     scope: str) -> Iterator[tuple[int, int]]:
        for rows in tables:
            header = [text[s:e] for s, e in rows[0]]
            for col in range(len(rows[0])):
                cells = [row[col] for row in rows[1:]] if rows[1:] else []
                values = [text[s:e].strip().strip('"') for s, e in cells]
                named = sum(1 for v in values if self._en.cell(v) or self._zh.whole(v, scope))
                role = _role_label(header[col])
                if role or (named and named * 2 >= len(values)):
                    cells_all = cells if role or not self._is_name(header[col], scope) else [rows[0][col]] + cells
                    for s, e in cells_all:
                        v = text[s:e].strip().strip('"')
                        if self._en.loose_cell(v) or self._zh.whole(v, scope) or (named and _zh_like(v)):
                            i = text.index(v, s)
                            yield i, i + len(v)

    def _is_name(self, cell: str, scope: str) -> bool:
        v = cell.strip().strip('"')
        return self._en.cell(v) or self._zh.whole(v, scope)

    def _table_dates(self, text: str, tables: list[list[list[tuple[int, int]]]],
                     people: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        """Dates in a column under a birth word, and in a column without a header (its first row is a date too)
        whose every cell is a date at least ``_BIRTH_YEARS`` back, in rows that each name a person: an export of
        people without its header row. A column of recent dates (due, joined, last seen) stays."""
        inside = _Spans(people)
        for rows in tables:
            named = all(inside.any_within(row[0][0], row[-1][1]) for row in rows)
            for col, (hs, he) in enumerate(rows[0]):
                if birth_label(text[hs:he]):
                    for row in rows[1:]:
                        s, e = row[col]
                        m = DATE.search(text, s, e)
                        if m is not None:
                            yield m.start(), m.end()
                elif named:
                    dates = [_old_date(text, *row[col], self._born_by) for row in rows]
                    if all(dates):
                        yield from (span for span in dates if span is not None)


class _Spans:
    """Spans, asked whether one lies within a range in log time (a row per person made a table quadratic)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        ordered = sorted(spans)
        self._starts = [s for s, _ in ordered]
        self._least_end = [e for _, e in ordered]  # from each span on, the least end
        for i in range(len(ordered) - 2, -1, -1):
            self._least_end[i] = min(self._least_end[i], self._least_end[i + 1])

    def any_within(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self._starts, start)
        return i < len(self._starts) and self._least_end[i] <= end


def _cells(line: str, start: int, sep: str) -> list[tuple[int, int]] | None:
    if sep not in line or (sep == "|" and re.fullmatch(r"[\s|:\-]+", line)):
        return None
    body = line
    offset = start
    if sep == "|":
        stripped = body.strip()
        if not stripped.startswith("|"):
            return None
        lead = body.index("|") + 1
        body, offset = body[lead:].rstrip().rstrip("|"), start + lead
    out, pos = [], 0
    for m in re.finditer(r'"[^"]*"|[^' + re.escape(sep) + r']+|(?<=' + re.escape(sep) + r')(?=' + re.escape(sep)
                         + r'|$)', body):
        cell = m.group(0)
        lead = len(cell) - len(cell.lstrip())
        out.append((offset + m.start() + lead, offset + m.start() + len(cell.rstrip())))
        pos = m.end()
    del pos
    return out


def _old_date(text: str, start: int, end: int, born_by: int) -> tuple[int, int] | None:
    """The span of a cell that is one date (quotes aside) in ``born_by`` or before, or None."""
    m = DATE.fullmatch(text, start, end)
    if m is None and end - start > 2 and text[start] == '"' == text[end - 1]:
        m = DATE.fullmatch(text, start + 1, end - 1)
    if m is None:
        return None
    year = _YEAR.search(m.group(0))
    return (m.start(), m.end()) if year is not None and int(year.group(0)) <= born_by else None


def _zh_like(value: str) -> bool:
    return 2 <= len(value) <= 4 and all("\u4e00" <= ch <= "\u9fff" for ch in value)


def _role_label(label: str) -> bool:
    words = label.strip().strip('"').replace("_", " ").replace("-", " ")
    m = ROLE.fullmatch(words)
    return (m is not None and words.lower() not in ("from", "to", "cc", "bcc", "hi", "hello", "hey", "user")) \
        or words.lower() in STRONG_ROLES or bool(_ZH_ROLE.search(words.strip()))


def _finding(type_: str, text: str, start: int, end: int) -> Finding:
    value = text[start:end]
    return Finding(type=type_, start=start, end=end, value=value, layer="people", key=f"{type_}:{' '.join(value.split())}")


_SHARED: list[PeopleDetector] = []
_SHARED_LOCK = threading.Lock()


def shared_people() -> PeopleDetector:
    """One people layer per process: its segmenter (jieba's dictionary, ~1-3 s of CPU) and given-name list
    (~0.1 s) load once, however many gateways the process builds: at the gateway's start (``warm``), else on first
    use; never at import."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(PeopleDetector(ChineseNames(JiebaSegmenter()), EnglishNames(GivenNames())))
        return _SHARED[0]
