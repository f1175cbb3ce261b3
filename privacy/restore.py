"""The way back: placeholders in cloud output become the real values before the client sees them.

Tolerant of how models echo placeholders: ``[EMAIL_ADDRESS_001]``, ``[email_address_1]``, ``[ PHONE_NUMBER_002 ]``,
markdown-escaped ``\\[PERSON\\_003\\]`` and the bare ``PERSON_003``. Inside JSON text (tool-call arguments) the
value is JSON-escaped. Streams hold back at most the longest live placeholder (plus a few characters of slack).

A credential's or key's placeholder in a tool call's arguments is the one restore that can carry a secret out by
way of a tool (``send_message(to=attacker, body=[PASSWORD_001])``): ``ToolSecrets`` says which placeholders those
are and what ``privacy.restore_secrets_in_tools`` does with them — restore (``allow``), restore and tell the audit
which tool and which type (``audit``), or leave the placeholder and tell the audit so (``deny``).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

_SHAPE = re.compile(r"^\[([A-Z][A-Z0-9_]*)_(\d+)\]$")


@functools.lru_cache(maxsize=1 << 16)
def _shape(placeholder: str) -> tuple[str, int] | None:
    """``("EMAIL_ADDRESS", 3)`` for ``[EMAIL_ADDRESS_003]``; None for what is not a placeholder. Remembered: every
    call of a session hands a restorer all its placeholders again (hundreds, on the request path)."""
    m = _SHAPE.match(placeholder)
    return (m.group(1), int(m.group(2))) if m else None
_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z0-9_]*_\d+\]")
_SLACK = 6


def given_placeholders(pairs: Iterable[tuple[str, str]]) -> set[str]:
    """The placeholders protection put into the outgoing text, from ``(text as sent by the client, text as sent
    to the cloud)`` pairs: those that occur more often after than before. One the client's text already held
    (copied from a web page, a tool result) was not given by the gateway and is never restored."""
    given: set[str] = set()
    for before, after in pairs:
        if before == after:
            continue
        there = Counter(_PLACEHOLDER.findall(before))
        given.update(p for p, n in Counter(_PLACEHOLDER.findall(after)).items() if n > there[p])
    return given


ToolSecretsPolicy = Literal["allow", "audit", "deny"]


@dataclass
class ToolSecrets:
    """Which placeholders stand for credentials or keys, and what restoring one into tool-call arguments does.
    ``record(tool, type, value, restored)`` is told of each (``audit`` and ``deny``)."""

    placeholders: frozenset[str] = frozenset()
    policy: ToolSecretsPolicy = "audit"
    record: Callable[[str, str, str, bool], None] | None = None
    _ids: set[tuple[str, int]] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        for placeholder in self.placeholders:
            shape = _shape(placeholder)
            if shape is not None:
                self._ids.add(shape)

    def restores(self, tool: str, key: tuple[str, int], value: str) -> bool:
        """Whether a placeholder restores into ``tool``'s arguments (and the audit told, where it asks to be)."""
        if key not in self._ids or self.policy == "allow":
            return True
        if self.record is not None:
            self.record(tool, key[0], value, self.policy != "deny")
        return self.policy != "deny"


class Restorer:
    def __init__(self, values: dict[str, str], tool_secrets: ToolSecrets | None = None) -> None:
        self._tool_secrets = tool_secrets or ToolSecrets()
        self._by_id: dict[tuple[str, int], str] = {}
        for placeholder, value in values.items():
            shape = _shape(placeholder)
            if shape is not None:
                self._by_id[shape] = value
        types = sorted({t for t, _ in self._by_id}, key=len, reverse=True)
        self.max_len = max((len(p) for p in values), default=0) + _SLACK
        self._prefixes: set[str] = set()
        if types:
            alternatives = "|".join(re.escape(t).replace("_", r"\\?_") for t in types)
            self._pattern: re.Pattern[str] | None = re.compile(
                r"\\?\[\s*(" + alternatives + r")\\?_(\d{1,6})\s*\\?\]"
                r"|(?<![A-Za-z0-9_\[])(" + "|".join(re.escape(t) for t in types) + r")_(\d{3,6})(?![A-Za-z0-9_])",
                re.IGNORECASE)
            self._types = re.compile(r"(?:" + "|".join(re.escape(t) for t in types) + r")_\d*", re.IGNORECASE)
            for t in types:
                for i in range(1, len(t) + 2):
                    self._prefixes.add((t + "_")[:i])
        else:
            self._pattern = None

    @property
    def active(self) -> bool:
        return self._pattern is not None

    @staticmethod
    def _key(m: re.Match[str]) -> tuple[str, int]:
        return (m.group(1) or m.group(3) or "").replace("\\", "").upper(), int(m.group(2) or m.group(4))

    def text(self, text: str, *, json_escape: bool = False, tool: str | None = None) -> str:
        """``text`` with this call's placeholders restored; ``tool``: the text is that tool call's arguments."""
        if self._pattern is None or not text:
            return text

        def swap(m: re.Match[str]) -> str:
            key = self._key(m)
            value = self._by_id.get(key)
            if value is None or (tool is not None and not self._tool_secrets.restores(tool, key, value)):
                return m.group(0)
            return json.dumps(value, ensure_ascii=False)[1:-1] if json_escape else value

        return self._pattern.sub(swap, text)

    def arguments(self, text: str, tool: str) -> str:
        return self.text(text, json_escape=text.lstrip()[:1] in ("{", "["), tool=tool)

    def held_from(self, buffer: str, previous: str) -> int:
        """Where a possibly unfinished placeholder starts at the end of ``buffer`` (``len`` if none).
        ``previous`` is the last character already sent before ``buffer``."""
        if self._pattern is None:
            return len(buffer)
        for i in range(max(0, len(buffer) - self.max_len), len(buffer)):
            if self._could_start(buffer[i:], buffer[i - 1] if i else previous):
                return i
        return len(buffer)

    def _could_start(self, tail: str, before: str) -> bool:
        if tail[0] in "[\\":
            core = tail.lstrip("\\")
            if not core.startswith("[") and core:
                return False
            inner = core[1:].replace("\\", "").strip().upper()
            if "]" in inner:
                return False
            return not inner or inner in self._prefixes or bool(self._types.fullmatch(inner))
        if before and (before.isalnum() or before == "_"):
            return False
        return tail in self._prefixes or bool(self._types.fullmatch(tail))

    def response(self, response: dict[str, Any]) -> dict[str, Any]:
        if self._pattern is None:
            return response
        return answer_texts(response, lambda text, _, tool: self.text(text) if tool is None
                            else self.arguments(text, tool))


def answer_texts(response: dict[str, Any], fn: Callable[[str, str, str | None], str]) -> dict[str, Any]:
    """A copy of a chat response with ``fn(text, where, tool)`` applied to each text of each choice's message:
    content, reasoning, refusal, thinking blocks (signatures kept), and tool-call arguments (``tool``: the tool's
    name; None for the rest)."""
    response = copy.deepcopy(response)
    for i, choice in enumerate(response.get("choices") or ()):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        for key in ("content", "reasoning_content", "refusal"):
            if isinstance(message.get(key), str):
                message[key] = fn(message[key], f"choices[{i}].{key}", None)
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                name = str(function.get("name") or "")
                function["arguments"] = fn(function["arguments"], f"choices[{i}].tool_calls[{name}].arguments", name)
        for block in message.get("thinking_blocks") or ():  # Anthropic's, through litellm; signatures kept
            if isinstance(block, dict) and isinstance(block.get("thinking"), str):
                block["thinking"] = fn(block["thinking"], f"choices[{i}].thinking_blocks", None)
        legacy = message.get("function_call")
        if isinstance(legacy, dict) and isinstance(legacy.get("arguments"), str):
            name = str(legacy.get("name") or "")
            legacy["arguments"] = fn(legacy["arguments"], f"choices[{i}].function_call[{name}].arguments", name)
    return response
