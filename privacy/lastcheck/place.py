"""Replace raw values where they stand in an outgoing body: keys, strings (JSON-escaped too) and equal numbers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def place(body: dict[str, Any], replacements: list[tuple[str, str]],
          texts: Callable[[int], str | None] | None = None) -> dict[str, Any]:
    """A copy of ``body`` with every occurrence of each raw value — in keys, strings (JSON-escaped too) and equal
    numbers — replaced by its placeholder, longer values first. ``body`` is left as it is (an atomic store may run
    the last check again on it); what does not change is shared, not copied. ``texts``: a message's keys, strings
    and numbers as the last check read them, joined, by its index in ``messages`` (``EgressScan.text``; None: not
    known): a message whose text holds no form of any value is left as it is without walking it (a long history's
    every step)."""
    pairs: list[tuple[str, str]] = []
    for raw, placeholder in sorted(replacements, key=lambda p: -len(p[0])):
        pairs += [(form, placeholder) for form in dict.fromkeys(
            [raw] + [json.dumps(raw, ensure_ascii=flag)[1:-1] for flag in (False, True)])]
    numbers = dict(replacements)

    def fix(text: str) -> str:
        for form, placeholder in pairs:
            if form in text:
                text = text.replace(form, placeholder)
        return text

    def new_value(value: Any) -> Any:
        if isinstance(value, str):
            return fix(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            # the number as the last check read it; one that holds a value (-539487261, 539487261.0) leaves as
            # the placeholder's text
            text = repr(value) if isinstance(value, float) else str(value)
            if text in numbers:
                return numbers[text]
            placed = fix(text)
            return value if placed == text else placed
        if isinstance(value, dict):
            items = [(fix(str(k)) if isinstance(k, str) else k, new_value(v)) for k, v in value.items()]
            if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
                return value
            return dict(items)
        if isinstance(value, list):
            new = [new_value(item) for item in value]
            return value if all(a is b for a, b in zip(new, value, strict=True)) else new
        return value

    def message(i: int, value: Any) -> Any:
        text = texts(i) if texts is not None else None
        if text is not None and not any(form in text for form, _ in pairs):
            return value
        return new_value(value)

    def top(key: Any, value: Any) -> Any:
        if key == "messages" and isinstance(value, list) and texts is not None:
            new = [message(i, item) for i, item in enumerate(value)]
            return value if all(a is b for a, b in zip(new, value, strict=True)) else new
        return new_value(value)

    items = [(fix(k) if isinstance(k, str) else k, top(k, v)) for k, v in body.items()]
    return dict(items)
