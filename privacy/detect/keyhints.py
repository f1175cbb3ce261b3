"""Key hints: a value under a key (JSON) or column (CSV) that names a person or an address is one.

Catches what NER misses on bare values (names it does not know, Chinese names) without running NER on keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from privacy.detect.findings import Finding
from privacy.detect.recurrence import recurrences
from privacy.detect.units import _escaped_forms

_NAME_KEYS = re.compile(r"^(?:(?:full|first|last|given|family|customer|contact|client|patient|employee|account|card)?"
                        r"[_\- ]?name|holder|cardholder|account_holder|owner_name|contact|customer|patient|"
                        r"recipient|sender|姓名|名字|联系人|客户|客户姓名|收件人|发件人|持卡人|负责人|员工|患者)$",
                        re.IGNORECASE)
_ADDRESS_KEYS = re.compile(r"^(?:(?:home|street|mailing|billing|shipping|postal)?[_\- ]?address|street|"
                           r"地址|住址|家庭住址|收货地址|通讯地址)$", re.IGNORECASE)
_PERSON_VALUE = re.compile(r"^(?:[A-Z][a-zA-Z'’\-]+(?: [A-Z][a-zA-Z'’\-]+){1,3}|[\u4e00-\u9fff·]{2,5})$")


def _hint(key: str, value: str) -> str | None:
    value = value.strip()
    if _NAME_KEYS.match(key) and _PERSON_VALUE.match(value):
        return "PERSON"
    if _ADDRESS_KEYS.match(key) and len(value) >= 4 and not value.startswith(("http", "/")):
        return "LOCATION"
    return None


def _pairs(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _pairs(v, str(k))
    elif isinstance(value, list):
        for item in value:
            yield from _pairs(item, key)
    elif isinstance(value, str):
        if value.lstrip()[:1] in ("{", "["):
            try:
                yield from _pairs(json.loads(value), key)
                return
            except (ValueError, RecursionError):  # nested deeper than the parser goes: text
                pass
        yield key, value


def _csv_pairs(text: str) -> Iterator[tuple[str, str]]:
    lines = text.splitlines()
    if len(lines) < 2:
        return
    for sep in (",", "\t", "|", ";"):
        header = [h.strip().strip('"') for h in lines[0].split(sep)]
        if len(header) >= 2 and any(_NAME_KEYS.match(h) or _ADDRESS_KEYS.match(h) for h in header):
            for line in lines[1:]:
                cells = [c.strip().strip('"') for c in line.split(sep)]
                if len(cells) == len(header):
                    yield from zip(header, cells, strict=True)
            return


def structured_pairs(text: str, csv_pairs: Callable[[str], Iterator[tuple[str, str]]]
                     ) -> Iterator[tuple[str, str]]:
    """(key, value) pairs of a text that is JSON (any depth), else of a CSV/TSV table as ``csv_pairs`` reads it."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return _pairs(json.loads(text))
        except (ValueError, RecursionError):  # nested deeper than the parser goes: text
            return iter(())
    if "\n" in text:
        return csv_pairs(text)
    return iter(())


class KeyHintDetector:
    def find(self, text: str, label: str | None) -> list[Finding]:
        hinted: dict[str, str] = {}
        if label is not None:
            type_ = _hint(label, text)
            if type_:
                hinted[text.strip()] = type_
        for key, value in structured_pairs(text, _csv_pairs):
            type_ = _hint(key, value)
            if type_:
                hinted.setdefault(value.strip(), type_)
        forms = {form: value for value in hinted for form in _escaped_forms(value)}
        return [Finding(type=hinted[value], start=start, end=end, value=value, layer="keys",
                        key=f"{hinted[value]}:{value}") for start, end, value in recurrences(text, forms)]
