"""Listed sensitivity units (the benchmark's ``sensitive_items.json`` schema) and their matcher.

A value matches exactly and in its normalised variants: digits with any separators (values of ≥ 7 digits; ``_``
and ``,`` count), case-folded, full-width and Cyrillic/Greek look-alikes read as ASCII (``normalise.fold``),
flexible whitespace, a multi-word value's words joined by ``_``, ``-`` or nothing (``Theodora_Vanterpool``,
``TheodoraVanterpool``: the shapes identifiers and OpenAI's ``name`` field force), a value of ≥ 8 non-space
characters with whitespace anywhere inside it, and the JSON-escaped and ``\\uXXXX``-escaped forms (also escaped
twice, as in JSON inside a JSON string).

A listed value is a secret wherever it stands: glued to letters, digits or ``_`` (``report_ZQX-4471-KAPPA.pdf``,
``tokenZQX-4471-KAPPA``) it still matches. Only a short value — under 6 characters, or under 7 when all digits —
needs word boundaries, or it would match inside unrelated words and numbers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from privacy.detect.findings import Finding
from privacy.detect.normalise import fold


class SensitiveField(BaseModel):
    model_config = ConfigDict(extra="allow")

    field: str
    value: str | int | float
    dimension: str | None = None
    weight: float = 1.0


class SensitiveItem(BaseModel):
    model_config = ConfigDict(extra="allow")

    entity_id: str
    name: str | None = None
    sensitive_fields: list[SensitiveField] = Field(default_factory=list)


class UnitsDocument(BaseModel):
    model_config = ConfigDict(extra="allow")

    items: list[SensitiveItem] = Field(default_factory=list)

    @classmethod
    def from_file(cls, path: str | Path) -> UnitsDocument:
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Unit:
    """One listed value: a field of an entity."""

    unit_id: str  # "<entity_id>.<field>"
    entity_id: str
    field: str
    value: str
    type: str
    dimension: str | None
    weight: float


def units_of(document: UnitsDocument) -> list[Unit]:
    units: list[Unit] = []
    for item in document.items:
        for f in item.sensitive_fields:
            value = str(f.value).strip()
            if not value:
                continue
            units.append(Unit(unit_id=f"{item.entity_id}.{f.field}", entity_id=item.entity_id, field=f.field,
                              value=value, type=placeholder_type(f.field, f.dimension), dimension=f.dimension,
                              weight=f.weight))
    return units


def placeholder_type(field: str, dimension: str | None) -> str:
    for candidate in (field, dimension or ""):
        name = re.sub(r"[^A-Za-z0-9]+", "_", candidate).strip("_").upper()
        if name and name[0].isalpha():
            return name[:24]
    return "ITEM"


_SEPARATORS = r"[\s\-./()+_,]*"
_DIGITS_MIN = 7
_BOUNDED_BELOW = 6  # a value shorter than this needs word boundaries (all digits: one more)
SPREAD_MIN = 8  # non-space characters from which a value is found across whitespace (and across strings)
_WORD_JOIN = r"(?:\s+|[_\-]|)"  # between a value's words: whitespace, an identifier's joiner, or nothing


def _escaped_forms(value: str) -> list[str]:
    forms = {value}
    for ensure_ascii in (False, True):
        once = json.dumps(value, ensure_ascii=ensure_ascii)[1:-1]
        forms.add(once)
        forms.add(json.dumps(once, ensure_ascii=ensure_ascii)[1:-1])
    return sorted(forms, key=len, reverse=True)


def bounded(value: str) -> bool:
    """Whether ``value`` is short enough to need word boundaries."""
    return len(value) < _BOUNDED_BELOW + (1 if value.isdigit() else 0)


def _literal_pattern(form: str) -> str:
    """``form`` as a word: its words in order, any whitespace between them, and no letter, digit or ``_`` glued
    on either side (how the other layers find every occurrence of a value they detected)."""
    parts = [re.escape(piece) for piece in re.split(r"\s+", form)]
    body = r"\s+".join(p for p in parts if p)
    prefix = r"(?<![A-Za-z0-9_])" if form[:1].isascii() and form[:1].isalnum() else ""
    suffix = r"(?![A-Za-z0-9_])" if form[-1:].isascii() and form[-1:].isalnum() else ""
    return prefix + body + suffix


def _listed_pattern(form: str, value: str) -> str:
    """A listed value's form: a word only when the value is short (``bounded``); a multi-word value's words also
    joined as an identifier joins them."""
    if bounded(value):
        return _literal_pattern(form)
    parts = [re.escape(piece) for piece in re.split(r"\s+", form)]
    return (_WORD_JOIN if _is_words(form) else r"\s+").join(p for p in parts if p)


def _is_words(form: str) -> bool:
    """Two or more words of letters (a name, a place): those are written as identifiers too."""
    words = form.split()
    return len(words) > 1 and all(w.isalpha() for w in words)


def squeezed(text: str) -> str:
    """``text`` without whitespace, case-folded: how a value spread over whitespace and strings is compared."""
    return "".join(fold(text).split()).casefold()


def unit_pattern(value: str) -> re.Pattern[str]:
    value = fold(value)
    alternatives = [_listed_pattern(form, value) for form in _escaped_forms(value) if form.strip()]
    core = squeezed(value)
    if len(core) >= SPREAD_MIN and not core.isdigit():
        alternatives.append(r"\s*".join(re.escape(ch) for ch in core))
    digits = re.sub(r"\D", "", value)
    if len(digits) >= _DIGITS_MIN and len(digits) >= 0.6 * len(re.sub(r"\s", "", value)):
        alternatives.append(r"(?<![\d(+])[(+]?" + _SEPARATORS.join(digits) + r"(?!\d)")
    return re.compile("|".join(alternatives), re.IGNORECASE)


class UnitMatcher:
    """Finds listed values in text. Built once per set of units (per session and registration)."""

    def __init__(self, units: list[Unit]) -> None:
        self._compiled = [(unit, unit_pattern(unit.value)) for unit in units if len(unit.value) >= 2]

    def __len__(self) -> int:
        return len(self._compiled)

    @property
    def units(self) -> list[Unit]:
        return [unit for unit, _ in self._compiled]

    def find(self, text: str) -> list[Finding]:
        """Listed values in ``text`` (look-alikes and full-width forms read as ASCII; spans fit ``text``)."""
        text = fold(text)
        out: list[Finding] = []
        for unit, pattern in self._compiled:
            for m in pattern.finditer(text):
                out.append(Finding(type=unit.type, start=m.start(), end=m.end(), value=unit.value, layer="units",
                                   key=f"unit:{unit.unit_id}", unit_id=unit.unit_id, field=unit.field,
                                   dimension=unit.dimension, weight=unit.weight))
        return out
