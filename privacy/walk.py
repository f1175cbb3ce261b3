"""The walk over an OpenAI chat-completions request: every string that would leave for the cloud.

Slots: message ``content`` (string or text parts), ``reasoning_content``, ``name``; tool-call ``arguments``
(JSON-aware, keys kept) and legacy ``function_call.arguments``; tool ``description`` and parameter descriptions;
the ``user`` field. Tool and function *names* are left alone: the agent needs them to work. Non-text content
parts (images, audio, files) are reported separately so the caller can apply the ``images`` setting.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["text", "json"]


@dataclass
class Slot:
    location: str
    text: str
    kind: Kind
    set: Callable[[str], None]


def _setter(container: dict[str, Any] | list[Any], key: Any) -> Callable[[str], None]:
    def set_value(value: str) -> None:
        container[key] = value

    return set_value


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


def collect(body: dict[str, Any]) -> tuple[dict[str, Any], list[Slot], list[str]]:
    """A deep copy of ``body``, the string slots in it, and the locations of non-text content parts."""
    body = copy.deepcopy(body)
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
                    elif part.get("type") not in (None, "text"):
                        binary.append(f"{where}.content[{j}] ({part.get('type')})")
        for key in ("reasoning_content", "name"):
            if isinstance(message.get(key), str):
                slots.append(Slot(f"{where}.{key}", message[key], "text", _setter(message, key)))
        for k, call in enumerate(message.get("tool_calls") or ()):
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                slots.append(Slot(f"{where}.tool_calls[{k}].arguments", function["arguments"], "json",
                                  _setter(function, "arguments")))
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
    return body, slots, binary
