"""Labelled values: an identifier, an amount, a name or an address is private because of the label next to it.

The label may be a JSON key or CSV column (``label``), an env, ini or YAML name (``PASSPORT_NO=…``, ``passport: …``),
a log or form field (``Passport no.: …``), or prose (``the routing number is …``, ``护照号码是…``). What a label names
is read from its words (``privacy.detect.lexicon``), so labels nobody wrote a rule for (``acct_ref``, ``comp_total``,
``参考号``) are understood too. Each type has a value shape (identifiers carry digits, amounts are numbers, names are
capitalised words or 2–4 Chinese characters, addresses a number and words or Chinese address characters), so a label
followed by ordinary words finds nothing. Values may be upper-cased, wrapped across a line (a newline or an escaped
``\\n`` inside the value) or use other separators. A value found after a label is found wherever else it appears in
the same text, in any case.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from privacy.detect.findings import Finding
from privacy.detect.keyhints import structured_pairs
from privacy.detect.lexicon import Lexicon
from privacy.detect.manifests import named_value_pairs
from privacy.detect.normalise import canonical
from privacy.detect.recurrence import recurrences
from privacy.detect.references import business_reference
from privacy.detect.secrets import _PLACEHOLDER_VALUES, CODE_VALUE
from privacy.detect.units import _escaped_forms

_CURRENCY = r"(?:[¥$€£₹]|(?:USD|EUR|GBP|CNY|RMB|JPY|CHF|INR|SGD|AUD|CAD|HKD)[\s.]?)"
_CURRENCY_AFTER = r"(?:\s?(?:USD|EUR|GBP|CNY|RMB|JPY|CHF|INR|SGD|AUD|CAD|HKD|元|万元|万|k|K))"
_NUMBER = r"(?:\d{1,4}(?:\.\d{1,2})?\s?[kKmM](?![A-Za-z])|\d{1,3}(?:[,.' ]\d{3})+(?:[.,]\d{1,2})?|\d{4,10}(?:[.,]\d{1,2})?)"
# A value that is something else the agent needs: a hash, a UUID, a date, a version, an IP, a path.
_NOT_ID = (r"^(?:(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{4}-\d{2}-\d{2}(?:T.*)?|"
           r"(?!(?:\D*\d){9})v?\d+(?:\.\d+){1,3}|\d{1,3}(?:\.\d{1,3}){3}|\d+(?:\.\d+)?\s?(?:ms|s|KB|MB|GB|bytes|rows|lines))$")


_NOT_ACCOUNT = frozenset({"enabled", "disabled", "none", "null", "true", "false", "required", "optional", "unknown",
                          "pending", "active", "inactive", "verified", "linked", "unlinked", "string"})


def _digits_between(low: int, high: int) -> Callable[[str], bool]:
    return lambda v: low <= sum(ch.isdigit() for ch in v) <= high


def _secret_like(value: str) -> bool:
    """Not a placeholder, a variable reference or a plain word: a digit, a symbol, or length."""
    if value.lower() in _PLACEHOLDER_VALUES or value.startswith(("$", "{", "<", "%")) or CODE_VALUE.match(value):
        return False
    return any(not ch.isalpha() for ch in value) or len(value) >= 12


@dataclass(frozen=True)
class Shape:
    """What a value of one type looks like: a pattern on the whole value and an optional check."""

    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    reject: re.Pattern[str] | None = None

    def fits(self, value: str) -> bool:
        return (self.pattern.match(value) is not None and (self.check is None or self.check(value))
                and (self.reject is None or self.reject.match(value) is None))


def _shapes() -> dict[str, Shape]:
    ident = re.compile(r"^(?=[A-Za-z0-9<\-/. ]*\d)[A-Za-z0-9][A-Za-z0-9<\-/.]*"
                       r"(?: (?:(?=[A-Za-z\-]*\d)[A-Za-z0-9\-]{1,12}|[A-Z]{4}|[a-z]{4})){0,7}$")
    not_id = re.compile(_NOT_ID)

    not_id_but_grouped = re.compile(r"(?!\d{2}\.\d{2}\.\d{2}$)" + _NOT_ID[1:])  # a sort code ``08.97.52``

    def id_shape(low: int, high: int, reject: re.Pattern[str] = not_id) -> Shape:
        return Shape(ident, _digits_between(low, high), reject)

    caps = re.compile(r"[A-Z0-9]{10,20}")

    def licence(value: str) -> bool:
        """Four digits or more, or a run of capitals and digits (Washington's ``WDL3RTAMPQT1``), not ``MIT-0``."""
        return _digits_between(4, 20)(value) or caps.fullmatch(value) is not None

    person = re.compile(r"^(?:[A-ZÀ-Þ][\w'’\-]+(?: (?:(?:van|von|de|der|den|da|di|del|la|le|du|al|bin|ter) )*"
                        r"[A-ZÀ-Þ][\w'’\-.]+){1,3}|[\u4e00-\u9fff]{2,4}|[\u4e00-\u9fff]{1,3}·[\u4e00-\u9fff]{1,6})$")
    return {
        "PASSPORT": id_shape(1, 30),
        "DRIVERS_LICENSE": Shape(ident, licence, not_id),
        "NATIONAL_ID": id_shape(4, 20),
        "MEDICAL_RECORD": id_shape(4, 20),
        "ROUTING_NUMBER": id_shape(4, 11, not_id_but_grouped),
        "IBAN_CODE": id_shape(6, 34),
        "CREDIT_CARD": id_shape(12, 19),
        "ACCOUNT_NUMBER": id_shape(5, 30),
        "AMOUNT": Shape(re.compile(r"^" + _CURRENCY + r"?\s?" + _NUMBER + _CURRENCY_AFTER + r"?$", re.IGNORECASE)),
        "ALIPAY_ACCOUNT": Shape(re.compile(r"^[\w.@+\-]{5,60}$"), lambda v: v.lower() not in _NOT_ACCOUNT),
        "PHONE_NUMBER": Shape(re.compile(r"^\+?[\d\s\-().]{7,20}$|^\+?\(?\d[\d\s\-()./]{6,19}$"),
                              _digits_between(7, 15)),
        "EMAIL_ADDRESS": Shape(re.compile(r"^[\w.+\-]+\s?(?:@|＠|\[at\]|\(at\)| at )\s?[\w\-]+"
                                          r"(?:\s?(?:[./]|\[dot\]|\(dot\)| dot )\s?[\w\-]+)+$", re.IGNORECASE)),
        "CARD_SECURITY_CODE": Shape(re.compile(r"^\d{3,4}$")),
        "ACCESS_CODE": Shape(re.compile(r"^(?=[A-Za-z\-]*\d)[A-Za-z0-9](?:[A-Za-z0-9\-]{2,10})[A-Za-z0-9]$")),
        "API_TOKEN": Shape(re.compile(r"^(?=\S*\d)(?=\S*[A-Za-z])[A-Za-z0-9_\-+/=.!]{16,300}$")),
        "PASSWORD": Shape(re.compile(r"^[^\s\[]{6,300}$"), _secret_like),
        "PERSON": Shape(person),
        "LOCATION": Shape(re.compile(r"^(?:(?=.*\d)(?=.*[A-Za-zÀ-ÿ]{3})(?!\w+://)[A-Za-z0-9À-ÿ][^\n=<>{}]{5,118}|"
                                     r"(?=.*[\u4e00-\u9fff])(?=.*(?:省|市|区|县|路|街|道|巷|弄|村|镇|号|楼|室))"
                                     r"[\u4e00-\u9fff0-9A-Za-z\-—·（）()#]{4,60})$"),
                          reject=re.compile(r"^(?:\d[\d\s.:,\-]*|.*\.(?:py|js|ts|json|ya?ml|md|txt|csv|log)|"
                                            r".*(?:/\w+/|://|\w\(|\b(?:and|then|the|to|write|update)\b).*)$",
                                            re.IGNORECASE)),
    }


_WRAP = re.compile(r"(?:\\r)?\\n\s*|\r?\n\s*")
_SEPARATED = re.compile(r"(?<=[A-Za-z])[./](?=[A-Z])")
_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}|&#?\w+;|\\u[0-9a-fA-F]{4}|[\u200b-\u200d\u2060\ufeff\u00ad]")


def _readings(raw: str) -> list[str]:
    """How a raw value may read: whitespace collapsed; a line wrap removed or read as a space; dots or underscores
    between capitalised words read as spaces (``Oliver.Patel``); %-escapes, HTML entities and zero-width characters decoded."""
    out: list[str] = []
    if ("\n" in raw or "\\" in raw) and _WRAP.search(raw):
        out.append(" ".join(_WRAP.sub("", raw).split()))
        out.append(" ".join(_WRAP.sub(" ", raw).split()))
    else:
        out.append(" ".join(raw.split()))
    if ("." in raw or "_" in raw or "/" in raw) and _SEPARATED.search(out[0]):
        out.append(_SEPARATED.sub(" ", out[0]))
    if (not raw.isascii() or "%" in raw or "&" in raw or "\\" in raw) and _ENCODED.search(raw):
        decoded = canonical(raw)
        if decoded != raw:
            out += [r for r in _readings(decoded) if r not in out]
    return out


_TRAILING = ".。,，;；:："
_CONNECTOR = (r"(?:(?P<conn>(?:[ \t]*\([A-Za-z$€£¥%]{1,5}\))?[\"']?[ \t]*(?:[:=：]|=>|->|\bis\b|\bwas\b|\bare\b|是|为|為)"
              r"[ \t]*)(?:(?P<q>[\"'])|\\\"|)"
              r"|[ \t]+(?:#[ \t]?)?(?=[A-Za-z]{0,4}[\-/]?\d))")
_CHAR = r"(?:[^\s\"'<>{}\[\],;，；。、|()（）]|,(?=\d{3}(?!\d))|(?<=\w)['’](?=\w)|(?<=[A-Z0-9<])<|\\n ?)"
_TEXT_VALUE = _CHAR + r"{1,300}(?:[ ]" + _CHAR + r"{1,300}){0,6}"  # no shape is longer: bounded, so that
# a label costs what its value does, not the rest of the text
_LINE_VALUE = r"(?:[^\n\"|;()（）<>{}\[\]。；.]|\.(?!\s+[A-Z]|\s*$)){1,160}"  # to the end of the line or sentence
_LABEL_CACHE = 4096
# The rest of a value wrapped onto the next line: a line that is no new field (nothing like ``key:`` or ``k=v``).
_NEXT_LINE = re.compile(r"\r?\n[ \t]*[^\s\"'<>{}\[\],;:=：]+(?=[^\n:=：]*(?:\n|$))")
_BLOCKS = re.compile(r"\n[ \t]*\n")
_MD_RULE = re.compile(r"^\s*\|?[\s:\-|]+\|?\s*$")
_BEFORE = re.compile(r"([A-Za-z]+)(?:[_\-.]|(?<=[a-z])(?=[A-Z])| )?$")


class LabelledValueDetector:
    def __init__(self) -> None:
        self._lexicon = Lexicon()
        self._shapes = _shapes()
        self._connector = re.compile(_CONNECTOR)
        self._text_value = re.compile(_TEXT_VALUE)
        self._line_value = re.compile(_LINE_VALUE)
        self._label_cache: dict[str, tuple[str, ...]] = {}
        self._quoted = {q: re.compile(r"[^\n" + q + r"]{1,200}(?=" + q + r")") for q in ("\"", "'", "\\\"")}

    def _accept(self, types: tuple[str, ...], raw: str, whole: bool) -> tuple[str, str, int] | None:
        """(type, canonical value, raw length) of the longest prefix of ``raw`` (whole words) one of ``types``
        fits; ``whole``: only all of ``raw``."""
        raw = raw.rstrip()
        ends = [len(raw)] if whole else [m.start() for m in re.finditer(r"\s+", raw)][::-1]
        if not whole:
            ends.insert(0, len(raw))
        for end in ends:
            candidate = raw[:end].rstrip(_TRAILING) if not whole else raw[:end]
            if not candidate:
                continue
            for type_ in types:
                shape = self._shapes[type_]
                for reading in _readings(candidate):
                    if shape.fits(reading):
                        return type_, reading, len(candidate)
        return None

    def label_types(self, key: str) -> tuple[str, ...]:
        """What a key or column names (cached: the same keys recur in every tool result)."""
        types = self._label_cache.get(key)
        if types is None:
            types = self._lexicon.types(key.strip()) if key.strip() else ()
            if len(self._label_cache) >= _LABEL_CACHE:
                self._label_cache.clear()
            self._label_cache[key] = types
        return types

    def _csv_pairs(self, text: str) -> Iterator[tuple[str, str]]:
        """(label, value) pairs of every table in the text: each block between blank lines is read as CSV, TSV or a
        markdown table; a table whose header names a column gives (column, cell), and a two-column table is read as
        key and value per row too (``UTR,4039545479``, ``| 年薪 | CNY 227,500 |``)."""
        for block in _BLOCKS.split(text):
            if "\n" in block or block.count("|") >= 3:
                yield from self._table_pairs(block)

    def _table_pairs(self, text: str) -> Iterator[tuple[str, str]]:
        lines = [line for line in text.split("\n") if line.strip() and not line.lstrip().startswith("#")]
        if lines and all(line.lstrip().startswith("|") for line in lines[1:]) and not lines[0].lstrip().startswith("|"):
            lines = lines[1:]  # a sentence introducing a markdown table
        if lines and all(line.lstrip().startswith("|") for line in lines):
            lines = [line.strip().strip("|") for line in lines if not _MD_RULE.match(line)]
            seps: tuple[str, ...] = ("|",)
        else:
            seps = (",", "\t", "|", ";")
        if not lines:
            return
        for sep in seps:
            # the header: the first line with the separator that a line with it follows (a title line may precede)
            start = next((i for i in range(min(3, len(lines))) if sep in lines[i]
                          and (i + 1 == len(lines) or sep in lines[i + 1])), None)
            if start is None:
                continue
            body = "\n".join(lines[start:])
            try:  # a quoted cell may hold a line break (a wrapped value): read the text, not its lines
                rows = [[c.strip() for c in row] for row in csv.reader(io.StringIO(body), delimiter=sep) if row]
            except csv.Error:
                continue
            header = rows[0]
            read = False
            if len(header) >= 2 and any(self.label_types(h) for h in header):
                read = True
                for cells in rows[1:]:
                    if len(cells) == len(header):
                        yield from zip(header, cells, strict=True)
            pairs = [(row[0], row[1]) for row in rows if len(row) == 2 and row[0] and row[1]]
            if len(pairs) * 2 > len(rows) and any(self.label_types(key) for key, _ in pairs):
                read = True
                yield from pairs
            if read:  # else the separator was inside the values (``$166,500`` in a TSV): try the next one
                return

    def _in_text(self, text: str) -> Iterator[tuple[str, str, int, int, str]]:
        """(type, canonical value, start, end, label) for ``label <connector> value`` anywhere in the text."""
        taken = 0  # the end of the last value read: a label inside it is part of it (``密码：密码：…``)
        for m in self._lexicon.phrase.finditer(text):
            if m.start() < taken:
                continue
            c = self._connector.match(text, m.end())
            if c is None:
                continue
            before = _BEFORE.search(text, max(0, m.start() - 24), m.start())
            types = self._lexicon.types(m.group(0), before.group(1) if before else "")
            if not types:
                continue
            spaced = c.group("conn") is None
            if spaced and not any(t in _SPACED for t in types):
                continue
            types = tuple(t for t in types if t in _SPACED) if spaced else types
            start = c.end()
            quote = c.group("q") or ("\\\"" if c.group(0).endswith("\\\"") else None)
            if quote is not None:
                v = self._quoted[quote].match(text, start)
                whole = True
            elif "LOCATION" in types:
                v = self._line_value.match(text, start)
                whole = False
            else:
                v = self._text_value.match(text, start)
                whole = False
            if v is None:
                continue
            accepted = self._accept(types, v.group(0), whole)
            if accepted is None and quote is not None:
                accepted = self._accept(types, v.group(0), False)
            if accepted is None and quote is None:  # a value wrapped onto the next line
                more = _NEXT_LINE.match(text, v.end())
                if more is not None:
                    accepted = self._accept(types, text[start:more.end()], False)
            if accepted is not None:
                type_, value, length = accepted
                taken = start + length
                yield type_, value, start, start + length, m.group(0)

    def find(self, text: str, label: str | None) -> list[Finding]:
        hinted: dict[str, str] = {}
        out: list[Finding] = []
        if label is not None:
            types = self.label_types(label)
            if types:
                accepted = self._accept(types, text.strip(), True)
                if accepted is not None and not _reference(accepted[0], label, text):
                    hinted.setdefault(text.strip(), accepted[0])
        for key, value in itertools.chain(structured_pairs(text, self._csv_pairs), _json_label_pairs(text),
                                          named_value_pairs(text), _query_pairs(text)):
            types = self.label_types(key)
            if types:
                accepted = self._accept(types, value.strip(), True)
                if accepted is not None and not _reference(accepted[0], key, value):
                    hinted.setdefault(value.strip(), accepted[0])
        for type_, value, start, end, phrase in self._in_text(text):
            raw = text[start:end]
            if _reference(type_, phrase, raw):
                continue
            out.append(Finding(type=type_, start=start, end=end, value=raw, layer="patterns",
                               key=f"{type_}:{value}"))
            hinted.setdefault(raw, type_)
            hinted.setdefault(value, type_)
        forms: dict[str, tuple[str, str]] = {}
        for value, type_ in hinted.items():
            if len(value) >= 2:
                key = f"{type_}:{' '.join(_readings(value)[0].split())}"
                for form in _escaped_forms(value):
                    forms.setdefault(form, (type_, key))
        for start, end, (type_, key) in recurrences(text, forms, ignore_case=True):
            out.append(Finding(type=type_, start=start, end=end, value=text[start:end], layer="patterns", key=key))
        return out


def _reference(type_: str, label: str, value: str) -> bool:
    """An account-number reading that is a business reference the agent needs (``privacy.detect.references``)."""
    return type_ == "ACCOUNT_NUMBER" and business_reference(label, value)


_LABEL_KEYS = ("text", "name", "label", "key", "field", "display", "title")


def _label_of(item: dict[str, Any]) -> str | None:
    """The label a ``{"type": {"text": "Passport"}, "value": …}`` or ``{"name": "TFN", "value": …}`` entry carries."""
    for holder in (item, item.get("type"), item.get("code")):
        if isinstance(holder, dict):
            for key in _LABEL_KEYS:
                label = holder.get(key)
                if isinstance(label, str) and label:
                    return label
    return None


def _json_label_pairs(text: str) -> Iterator[tuple[str, str]]:
    """(label, value) pairs JSON states outside its keys: an entry naming its value (FHIR identifiers, settings
    lists: ``{"type": {"text": "护照号"}, "value": "141421939"}``) and an index keyed by value (``{"by_SIN":
    {"182586206": {…}}}``)."""
    if text.lstrip()[:1] not in ("{", "[") or ('"value"' not in text and '"by_' not in text):
        return
    try:
        stack: list[Any] = [json.loads(text)]
    except (ValueError, RecursionError):  # nested deeper than the parser goes: text
        return
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            value = node.get("value")
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                label = _label_of(node)
                if label is not None:
                    yield label, str(value)
            for key, child in node.items():
                if isinstance(key, str) and key.startswith("by_") and isinstance(child, dict):
                    for indexed in child:
                        yield key[3:], indexed
                stack.append(child)


_QUERY = re.compile(r"[?&]((?:%[0-9A-Fa-f]{2})+)=([^&\s\"'\\#]{2,200})")


def _query_pairs(text: str) -> Iterator[tuple[str, str]]:
    """(parameter, value) of URL query parameters whose name is percent-encoded (a label in Chinese: the free-text
    reading sees only ``%E6%8A%A4…``)."""
    if "%" not in text:
        return
    for m in _QUERY.finditer(text):
        yield urllib.parse.unquote(m.group(1)), urllib.parse.unquote(m.group(2))


# Types whose value may follow its label after a space alone (``MRN 0042117``, ``passport K5707355``).
_SPACED = frozenset({"PASSPORT", "DRIVERS_LICENSE", "NATIONAL_ID", "MEDICAL_RECORD", "ROUTING_NUMBER", "IBAN_CODE",
                     "CREDIT_CARD", "ACCOUNT_NUMBER", "ACCESS_CODE", "CARD_SECURITY_CODE"})
