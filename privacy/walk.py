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
from collections.abc import Callable
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


def _copy(value: Any) -> Any:
    """A deep copy of a JSON value: its dicts and lists new, its strings and numbers (immutable) shared; anything
    else deep-copied. A fifth of what ``copy.deepcopy`` costs on a long history, which has no memo to keep: a body
    parsed from JSON shares no container between two places."""
    if isinstance(value, dict):
        return {k: v if type(v) in _ATOMS else _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _ATOMS else _copy(v) for v in value]
    return value if type(value) in _ATOMS else copy.deepcopy(value)


def collect(body: dict[str, Any]) -> tuple[dict[str, Any], list[Slot], list[str]]:
    """A deep copy of ``body``, the string slots in it, and the locations of non-text content parts."""
    body = _copy(body)
    slots: list[Slot] = []
    binary: list[str] = []
    for i, message in enumerate(body.get("messages") or ()):
        if not isinstance(message, dict):
            continue
        where = f"messages[{i}]"
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
    for k, tool in enumerate(body.get("tools") or ()):
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            _description_slots(function, f"tools[{k}]", slots)
    for k, function in enumerate(body.get("functions") or ()):
        if isinstance(function, dict):
            _description_slots(function, f"functions[{k}]", slots)
    if isinstance(body.get("user"), str):
        slots.append(Slot("user", body["user"], "text", _setter(body, "user")))
    covered = {(id(container), key) for container, key in _targets(slots)}
    _rest(body, "", False, covered, slots)
    return body, slots, binary
