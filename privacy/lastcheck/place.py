"""Replace raw values where they stand in an outgoing body — strings (JSON-escaped too) and equal numbers — but never
in its structure (``privacy.structure``: keys, tool and function names, ``role``/``type``/ids, a schema's own
strings): what stands there is left as it is and reported, for the verdict to let stand or to keep the step home."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from privacy.structure import FUNCTION_KEYS, SCHEMA_DOCS, SCHEMAS, STRUCTURAL_KEYS

# A JSON string token, and whether a colon follows it (a key). In JSON, every '"' outside a string opens one, so
# finding them left to right reads every string of a document in order.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"(\s*:)?')
# A key that reads as a program's identifier (``name``, ``file_path``, ``userId``): a heuristic value equal to it is
# more likely the key than a person or a place. Any other key (``Jane Doe``, ``Berlin office``) is data.
_IDENTIFIER_KEY = re.compile(r'"[a-z_][A-Za-z0-9_.\-]*"\s*:')


@dataclass
class Placed:
    """The body with the values replaced, which values were (``placed``), and those left standing in the body's
    structure: raw value → where (``kept``; a key, a function's name, a structural field, a schema)."""

    body: dict[str, Any]
    placed: set[str] = field(default_factory=set)
    kept: dict[str, str] = field(default_factory=dict)


def place(body: dict[str, Any], replacements: Mapping[str, str], texts: Callable[[int], str | None] | None = None,
          *, heuristic: frozenset[str] = frozenset()) -> Placed:
    """A copy of ``body`` with every occurrence of each raw value in a string (JSON-escaped too) or an equal number
    replaced by its placeholder, longer values first; a placeholder is read from ``replacements`` only when its value
    is replaced (the verdict hands out placeholders lazily). Structure is left as it is (``Placed.kept`` says what
    stood there). ``heuristic``: values a detector read from the words around them elsewhere (a person, a place, a
    handle), which may name a key or a tool by chance (``name``, ``file``, ``Bash``): replaced in the body's text
    alone, not in the keys of a JSON document inside a string (a tool call's arguments, a tool result) that read as
    a program's identifiers (a key ``Jane Doe`` is data, and is replaced), nor in a tool's docs (read for listed units and secrets alone, as the walk reads them). ``body`` is left as it is (an atomic store may run the last check again on it);
    what does not change is shared, not copied. ``texts``: a message's keys, strings and numbers as the last check
    read them, joined, by its index in ``messages`` (``EgressScan.text``; None: not known): a message whose text
    holds no form of any value is left as it is without walking it (a long history's every step)."""
    placed = Placed(body)
    forms: list[tuple[str, str]] = []  # (form, raw value)
    for raw in sorted(replacements, key=lambda r: -len(r)):
        forms += [(form, raw) for form in dict.fromkeys(
            [raw] + [json.dumps(raw, ensure_ascii=flag)[1:-1] for flag in (False, True)])]
    sure = [(form, raw) for form, raw in forms if raw not in heuristic]

    def fix(text: str, which: list[tuple[str, str]] = forms) -> str:
        for form, raw in which:
            if form in text:
                text = text.replace(form, replacements[raw])
                placed.placed.add(raw)
        return text

    def string(text: str) -> str:
        """A string's values replaced; in a JSON document, not the heuristic ones in its keys."""
        if len(sure) == len(forms) or text.lstrip()[:1] not in ("{", "[") or \
                not any(form in text for form, raw in forms if raw in heuristic):
            return fix(text)
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            return fix(text)
        out, last = [], 0
        for token in _JSON_STRING.finditer(text):
            if token.group(1) is not None:
                key = token.group()
                out += [fix(text[last:token.start()]), fix(key, sure) if _IDENTIFIER_KEY.fullmatch(key) else fix(key)]
                last = token.end()
        out.append(fix(text[last:]))
        return "".join(out)

    def stands(text: str, where: str) -> None:
        for form, raw in forms:
            if form in text:
                placed.kept.setdefault(raw, where)

    def new_value(value: Any, key: str, in_function: bool, schema: bool, top: str) -> Any:
        """``key``: the key ``value`` sits under (a list's items: the list's); ``in_function``: the object holding
        it is a function's; ``schema``: it is in a schema (``privacy.structure.SCHEMAS``); ``top``: where, for
        ``Placed.kept`` (names the wire format's own keys only: a client's key may be a private value)."""
        if isinstance(value, str):
            if key in STRUCTURAL_KEYS or (key == "name" and in_function) or (schema and key not in SCHEMA_DOCS):
                stands(value, f"'{key}' in {top}" if key in STRUCTURAL_KEYS or key == "name" else
                       f"a schema's string in {top}")
                return value
            return fix(value, sure) if schema else string(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            # the number as the last check read it; one that holds a value (-539487261, 539487261.0) leaves as
            # the placeholder's text
            text = repr(value) if isinstance(value, float) else str(value)
            if text in replacements:
                placed.placed.add(text)
                return replacements[text]
            fixed = fix(text)
            return value if fixed == text else fixed
        if isinstance(value, dict):
            for name in value:
                if isinstance(name, str):
                    stands(name, f"a key in {top}")
            items = [(k, new_value(v, str(k), key in FUNCTION_KEYS, schema, top)) for k, v in value.items()]
            if all(v is v0 for (_, v), v0 in zip(items, value.values(), strict=True)):
                return value
            return dict(items)
        if isinstance(value, list):
            new = [new_value(item, key, in_function, schema, top) for item in value]
            return value if all(a is b for a, b in zip(new, value, strict=True)) else new
        return value

    def message(i: int, value: Any) -> Any:
        text = texts(i) if texts is not None else None
        if text is not None and not any(form in text for form, _ in forms):
            return value
        return new_value(value, "messages", False, False, f"messages[{i}]")

    def top(key: Any, value: Any) -> Any:
        if key == "messages" and isinstance(value, list):
            new = [message(i, item) for i, item in enumerate(value)]
            return value if all(a is b for a, b in zip(new, value, strict=True)) else new
        name = str(key)
        known = name in SCHEMAS or name in FUNCTION_KEYS or name in STRUCTURAL_KEYS
        return new_value(value, name, name in FUNCTION_KEYS, name in SCHEMAS, name if known else "a top-level part")

    for key in body:
        if isinstance(key, str):
            stands(key, "a top-level key")
    placed.body = {k: top(k, v) for k, v in body.items()}
    return placed
