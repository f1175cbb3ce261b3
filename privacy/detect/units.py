"""Listed sensitivity units (the benchmark's ``sensitive_items.json`` schema) and their matcher.

A value matches exactly and in its normalised variants: digits with any separators (values of ≥ 7 digits),
case-folded, flexible whitespace, and the JSON-escaped and ``\\uXXXX``-escaped forms (also escaped twice, as in
JSON inside a JSON string).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from privacy.detect.findings import Finding


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


_SEPARATORS = r"[\s\-./()+]*"
_DIGITS_MIN = 7


def _escaped_forms(value: str) -> list[str]:
    forms = {value}
    for ensure_ascii in (False, True):
        once = json.dumps(value, ensure_ascii=ensure_ascii)[1:-1]
        forms.add(once)
        forms.add(json.dumps(once, ensure_ascii=ensure_ascii)[1:-1])
    return sorted(forms, key=len, reverse=True)


def _literal_pattern(form: str) -> str:
    parts = [re.escape(piece) for piece in re.split(r"\s+", form)]
    body = r"\s+".join(p for p in parts if p)
    prefix = r"(?<![A-Za-z0-9_])" if form[:1].isascii() and form[:1].isalnum() else ""
    suffix = r"(?![A-Za-z0-9_])" if form[-1:].isascii() and form[-1:].isalnum() else ""
    return prefix + body + suffix


def unit_pattern(value: str) -> re.Pattern[str]:
    alternatives = [_literal_pattern(form) for form in _escaped_forms(value) if form.strip()]
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

    def find(self, text: str) -> list[Finding]:
        out: list[Finding] = []
        for unit, pattern in self._compiled:
            for m in pattern.finditer(text):
                out.append(Finding(type=unit.type, start=m.start(), end=m.end(), value=unit.value, layer="units",
                                   key=f"unit:{unit.unit_id}", unit_id=unit.unit_id, field=unit.field,
                                   dimension=unit.dimension, weight=unit.weight))
        return out
