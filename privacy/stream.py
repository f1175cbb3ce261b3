"""Restore placeholders in a chat-completions stream, chunk by chunk, holding back only a possible placeholder — and,
with ``privacy.response_guard``, guard what was restored (``privacy.guard``: its own hold-back, after restore's)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from privacy.guard import AnswerGuard, location
from privacy.restore import Restorer

_TEXT_FIELDS = ("content", "reasoning_content")


@dataclass
class _Buffer:
    held: str = ""
    last: str = ""  # the last character sent
    json: bool | None = None  # tool-call arguments: decided on the first non-blank character


class RestoringStream:
    def __init__(self, restorer: Restorer, on_usage: Any = None, guard: AnswerGuard | None = None) -> None:
        self._r = restorer
        self._guard = guard
        self._buffers: dict[tuple[int, str, int], _Buffer] = {}
        self._on_usage = on_usage
        self._template: dict[str, Any] | None = None
        self._tools: dict[tuple[int, int], str] = {}  # (choice, tool call) → its function's name

    def _take(self, key: tuple[int, str, int], piece: str, *, final: bool = False) -> str:
        buf = self._buffers.setdefault(key, _Buffer())
        text = buf.held + piece
        if key[1] == "arguments" and buf.json is None and text.strip():
            buf.json = text.lstrip()[:1] in ("{", "[")
        cut = len(text) if final else self._r.held_from(text, buf.last)
        ready, buf.held = text[:cut], text[cut:]
        if ready:
            buf.last = ready[-1]
        tool = self._tools.get((key[0], key[2]), "") if key[1] == "arguments" else None
        restored = self._r.text(ready, json_escape=bool(buf.json), tool=tool)
        if self._guard is None:
            return restored
        return self._guard.take(key, location(key, tool or ""), restored, final=final, as_json=bool(buf.json))

    def feed(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        if chunk.get("usage") and self._on_usage is not None:
            self._on_usage(chunk["usage"])
        if not (self._r.active or self._guard is not None) or not chunk.get("choices"):
            return [chunk]
        self._template = {k: v for k, v in chunk.items() if k not in ("choices", "usage")}
        chunk = copy.deepcopy(chunk)
        out: list[dict[str, Any]] = []
        for choice in chunk["choices"]:
            index = int(choice.get("index") or 0)
            delta = choice.get("delta") or {}
            # The last chunk of a choice (vLLM puts text and finish_reason together) releases everything it
            # holds in place, so nothing held back comes out after text that followed it.
            final = bool(choice.get("finish_reason"))
            # A field that another follows is complete (the text before a tool call, one call's arguments before
            # the next's): what it holds goes out first, so no client sees text arrive after what followed it.
            touched = {(index, field, 0) for field in _TEXT_FIELDS if isinstance(delta.get(field), str) and delta[field]}
            touched |= {(index, "arguments", int(call.get("index") or 0)) for call in delta.get("tool_calls") or ()}
            if touched:
                held = self._drain(index, keep=touched)
                if held is not None:
                    out.append(held)
            for field in _TEXT_FIELDS:
                if isinstance(delta.get(field), str):
                    delta[field] = self._take((index, field, 0), delta[field], final=final)
            for call in delta.get("tool_calls") or ():
                function = call.get("function")
                if isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"]:
                    self._tools[(index, int(call.get("index") or 0))] = function["name"]
                if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                    function["arguments"] = self._take((index, "arguments", int(call.get("index") or 0)),
                                                       function["arguments"], final=final)
            if final:  # what other fields still hold goes out before the closing chunk
                held = self._drain(index)
                if held is not None:
                    out.append(held)
        out.append(chunk)
        return out

    def _drain(self, index: int, keep: set[tuple[int, str, int]] | frozenset[tuple[int, str, int]] = frozenset(),
               ) -> dict[str, Any] | None:
        delta: dict[str, Any] = {}
        for key, buf in list(self._buffers.items()):
            if key[0] != index or key in keep or not (buf.held or (self._guard is not None and self._guard.holds(key))):
                continue
            text = self._take(key, "", final=True)
            if key[1] == "arguments":
                delta.setdefault("tool_calls", []).append({"index": key[2], "function": {"arguments": text}})
            else:
                delta[key[1]] = text
        if not delta:
            return None
        return {**(self._template or {}), "choices": [{"index": index, "delta": delta, "finish_reason": None}]}

    def flush(self) -> list[dict[str, Any]]:
        out = []
        for index in sorted({key[0] for key in self._buffers}):
            held = self._drain(index)
            if held is not None:
                out.append(held)
        self.close()
        return out

    def close(self) -> None:
        """The stream is over, however it ended: the guard records what it found (``privacy.guard``)."""
        if self._guard is not None:
            self._guard.close()
