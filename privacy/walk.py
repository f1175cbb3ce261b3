"""The walk over an OpenAI chat-completions request: every string that would leave for the cloud.

Slots: message ``content`` (string or text parts), ``reasoning_content``, ``name``; tool-call ``arguments``
(JSON-aware, keys kept; an object instead of a JSON string too) and legacy ``function_call.arguments``; tool
``description`` and parameter descriptions; the ``user`` field. Then every other string anywhere in the body
(``reasoning``, ``prediction``, ``response_format`` schemas, ``stop``, vendor extras): the gateway passes unknown
fields through, so the walk cannot rely on a list of known ones. Left alone: JSON keys, tool and function
*names* (the agent needs them), and structural values (``model``, ``role``, ``type``, ids, ``tool_choice``).
Non-text content parts (images, audio, files) are reported separately so the caller can apply the ``images``
setting.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from privacy.structure import FUNCTION_KEYS, STRUCTURAL_KEYS

Kind = Literal["text", "json"]


@dataclass
class Slot:
    location: str
    text: str
    kind: Kind
    set: Callable[[str], None]

    @property
    def definition(self) -> bool:
        """Part of a tool's definition (``tools``, ``functions``: its schema and docs), the agent's own prose."""
        return self.location.startswith(("tools[", "functions["))


class _Setter:
    """Writes a scrubbed string back where it came from; knows where that is, so the walk can tell what it
    already covered."""

    def __init__(self, container: dict[str, Any] | list[Any], key: Any) -> None:
        self.container = container
        self.key = key

    def __call__(self, value: str) -> None:
        self.container[self.key] = value


class _ObjectSetter(_Setter):
    """For tool-call arguments sent as an object rather than a JSON string: scrubbed as JSON text, put back as
    an object."""

    def __call__(self, value: str) -> None:
        self.container[self.key] = json.loads(value)


def _setter(container: dict[str, Any] | list[Any], key: Any) -> Callable[[str], None]:
    return _Setter(container, key)


def _targets(slots: list[Slot]) -> list[tuple[Any, Any]]:
    return [(slot.set.container, slot.set.key) for slot in slots if isinstance(slot.set, _Setter)]


_NON_TEXT_PARTS = frozenset({"image_url", "input_image", "image", "input_audio", "audio", "file", "input_file"})


def _rest(value: Any, location: str, in_function: bool, covered: set[tuple[int, Any]], out: list[Slot]) -> None:
    """Every string not already a slot, anywhere below ``value``. A long history holds thousands of keys at every
    step: a string's cheap reasons to skip it come first, and a path is made only for what needs one."""
    if isinstance(value, dict):
        if isinstance(value.get("type"), str) and value["type"] in _NON_TEXT_PARTS:
            return  # binary payloads: reported by the content walk, never scanned as text
        for key, item in value.items():
            if isinstance(item, str):
                if key in STRUCTURAL_KEYS or (key == "name" and in_function) or (id(value), key) in covered:
                    continue
                where = f"{location}.{key}" if location else str(key)
                out.append(Slot(where, item, "json" if _looks_json(item) else "text", _setter(value, key)))
            elif isinstance(item, dict | list):
                _rest(item, f"{location}.{key}" if location else str(key),
                      key in FUNCTION_KEYS, covered, out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str):
                if (id(value), i) not in covered:
                    out.append(Slot(f"{location}[{i}]", item, "json" if _looks_json(item) else "text",
                                    _setter(value, i)))
            elif isinstance(item, dict | list):
                _rest(item, f"{location}[{i}]", in_function, covered, out)


def _looks_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def _description_slots(schema: Any, location: str, out: list[Slot]) -> None:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                out.append(Slot(f"{location}.description", value, "text", _setter(schema, key)))
            else:
                _description_slots(value, f"{location}.{key}", out)
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            _description_slots(value, f"{location}[{i}]", out)


_ATOMS = (str, int, float, bool, type(None))


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value: its dicts and lists new, its strings and numbers (immutable) shared; anything
    else deep-copied. A fifth of what ``copy.deepcopy`` costs on a long history, which has no memo to keep: a body
    parsed from JSON shares no container between two places."""
    if isinstance(value, dict):
        return {k: v if type(v) in _ATOMS else copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _ATOMS else copy_json(v) for v in value]
    return value if type(value) in _ATOMS else copy.deepcopy(value)


@dataclass
class Part:
    """One top-level part of a body walked on its own — a message of ``messages`` (``index``) or another top-level key
    with its value — so that a step can reuse what it knows of the parts it saw before. ``value``: its copy, which the
    slots write into (``box[0]``, so a bare string can be written too); ``first``: the slots of the known fields,
    ``rest``: every other string in it (a body's slots are all parts' ``first`` in ``collect``'s order, then all
    parts' ``rest`` in the body's order); ``prefix``: the location every slot's location starts with."""

    key: str
    index: int | None
    prefix: str
    box: list[Any]
    first: list[Slot]
    rest: list[Slot]
    binary: list[str]

    @property
    def value(self) -> Any:
        return self.box[0]


def _message_slots(message: dict[str, Any], where: str, slots: list[Slot], binary: list[str]) -> None:
    content = message.get("content")
    if isinstance(content, str):
        kind: Kind = "json" if _looks_json(content) else "text"
        slots.append(Slot(f"{where}.content", content, kind, _setter(message, "content")))
    elif isinstance(content, list):
        for j, part in enumerate(content):
            if isinstance(part, str):
                slots.append(Slot(f"{where}.content[{j}]", part, "text", _setter(content, j)))
            elif isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    kind = "json" if _looks_json(text) else "text"
                    slots.append(Slot(f"{where}.content[{j}].text", text, kind, _setter(part, "text")))
                elif part.get("type") in _NON_TEXT_PARTS:
                    binary.append(f"{where}.content[{j}] ({part.get('type')})")
    for key in ("reasoning_content", "name"):
        if isinstance(message.get(key), str):
            slots.append(Slot(f"{where}.{key}", message[key], "text", _setter(message, key)))
    for k, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("arguments"), str):
            slots.append(Slot(f"{where}.tool_calls[{k}].arguments", function["arguments"], "json",
                              _setter(function, "arguments")))
        elif isinstance(function, dict) and isinstance(function.get("arguments"), (dict, list)):
            slots.append(Slot(f"{where}.tool_calls[{k}].arguments",
                              json.dumps(function["arguments"], ensure_ascii=False), "json",
                              _ObjectSetter(function, "arguments")))
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and isinstance(legacy.get("arguments"), str):
        slots.append(Slot(f"{where}.function_call.arguments", legacy["arguments"], "json",
                          _setter(legacy, "arguments")))


def _finish(part: Part, in_function: bool) -> Part:
    """``part.rest``: every string of the part its known fields did not cover."""
    covered = {(id(container), key) for container, key in _targets(part.first)}
    _rest(part.box, "", in_function, covered, part.rest)  # the box's one item: the part's value, at its prefix
    for slot in part.rest:
        slot.location = part.prefix + slot.location[3:]  # "[0]…" → the prefix
    return part


def walk_part(key: str, index: int | None, value: Any, *, rest: bool = True) -> Part:
    """One top-level part (``top_parts``) walked on its own, with the slots ``collect`` finds in it. ``rest``: False
    for a body that says it is a non-text part (``binary_body``): only the known fields are read."""
    if index is not None:
        where = f"messages[{index}]"
        part = Part(key, index, where, [copy_json(value)], [], [], [])
        if isinstance(part.value, dict):
            _message_slots(part.value, where, part.first, part.binary)
        return _finish(part, False) if rest else part
    part = Part(key, None, key, [copy_json(value)], [], [], [])
    copied = part.value
    if key in ("tools", "functions") and isinstance(copied, list):
        for k, tool in enumerate(copied):
            function = tool.get("function") if key == "tools" and isinstance(tool, dict) else tool
            if isinstance(function, dict):
                _description_slots(function, f"{key}[{k}]", part.first)
    if isinstance(copied, str):
        if key == "user":
            part.first.append(Slot("user", copied, "text", _setter(part.box, 0)))
        elif key not in STRUCTURAL_KEYS and rest:
            part.rest.append(Slot(key, copied, "json" if _looks_json(copied) else "text", _setter(part.box, 0)))
        return part
    return _finish(part, key in FUNCTION_KEYS) if rest else part


def top_parts(body: dict[str, Any]) -> Iterator[tuple[str, int | None, Any]]:
    """(key, message index or None, value) of each top-level part of ``body`` in its order: each message of a
    ``messages`` list, each other key with its value."""
    for key, value in body.items():
        if key == "messages" and isinstance(value, list):
            for i, message in enumerate(value):
                yield key, i, message
        else:
            yield str(key), None, value


_FIRST = ("messages", "tools", "functions", "user")  # the order of the known fields' slots in a body's slots


def binary_body(body: dict[str, Any]) -> bool:
    """Whether the body itself says it is a non-text part: then only its known fields are read."""
    return isinstance(body.get("type"), str) and body["type"] in _NON_TEXT_PARTS


def walk_parts(body: dict[str, Any]) -> list[Part]:
    """Every top-level part of ``body`` in its order: each message of a ``messages`` list, each other key."""
    rest = not binary_body(body)
    return [walk_part(key, index, value, rest=rest) for key, index, value in top_parts(body)]


def slot_order(keys: Sequence[str]) -> list[tuple[int, bool]]:
    """(index into ``keys``, first) in the order ``collect`` lists the slots of parts with those keys (``Part.key``):
    the known fields of messages, tools, functions and ``user``, then every other string in the body's order."""
    first = [(i, True) for name in _FIRST for i, key in enumerate(keys) if key == name]
    return first + [(i, False) for i in range(len(keys))]


def assemble(body: dict[str, Any], values: Sequence[Any]) -> dict[str, Any]:
    """A body of ``body``'s shape holding ``values``, one for each of its ``top_parts`` in order."""
    out: dict[str, Any] = {}
    each = iter(values)
    for key, value in body.items():
        out[key] = [next(each) for _ in value] if key == "messages" and isinstance(value, list) else next(each)
    return out


def collect(body: dict[str, Any]) -> tuple[dict[str, Any], list[Slot], list[str]]:
    """A deep copy of ``body``, the string slots in it, and the locations of non-text content parts."""
    parts = walk_parts(body)
    out = assemble(body, [part.value for part in parts])
    for part in parts:  # a part that is one string is written where it stands in the copy, not into its box
        if isinstance(part.value, str):
            place: tuple[Any, Any] = (out["messages"], part.index) if part.index is not None else (out, part.key)
            for slot in part.first + part.rest:
                slot.set = _setter(*place)
    slots = [slot for i, first in slot_order([part.key for part in parts])
             for slot in (parts[i].first if first else parts[i].rest)]
    return out, slots, [where for part in parts for where in part.binary]
