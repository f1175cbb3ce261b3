"""Sensitivity units: the benchmark's ``gt/sensitive_items.json`` schema, loaded and validated.

``{"items": [{"entity_id", "name", "sensitive_fields": [{"field", "value", "dimension", "weight"}]}]}``
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.tasks import TaskFormatError


@dataclass(frozen=True)
class SensitiveField:
    field: str
    value: str
    dimension: str
    weight: float


@dataclass(frozen=True)
class SensitiveItem:
    entity_id: str
    name: str
    fields: tuple[SensitiveField, ...]


def parse_sensitive_items(data: Any, path: Path) -> list[SensitiveItem]:
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise TaskFormatError(path, "items", "expected an object with an 'items' list")
    items = []
    for i, raw in enumerate(data["items"]):
        where = f"items[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("sensitive_fields"), list):
            raise TaskFormatError(path, where, "expected an object with a 'sensitive_fields' list")
        fields = []
        for j, f in enumerate(raw["sensitive_fields"]):
            if not isinstance(f, dict) or not isinstance(f.get("value"), str) or not f.get("field"):
                raise TaskFormatError(path, f"{where}.sensitive_fields[{j}]", "needs 'field' and a string 'value'")
            weight = f.get("weight", 1.0)
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
                raise TaskFormatError(path, f"{where}.sensitive_fields[{j}]", f"weight must be > 0, not {weight!r}")
            fields.append(SensitiveField(str(f["field"]), f["value"], str(f.get("dimension", "")), float(weight)))
        items.append(SensitiveItem(str(raw.get("entity_id", i)), str(raw.get("name", "")), tuple(fields)))
    return items


def load_sensitive_items(path: Path) -> list[SensitiveItem]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TaskFormatError(path, "file", f"cannot read sensitive items: {exc}") from None
    return parse_sensitive_items(data, path)
