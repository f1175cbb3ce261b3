"""An agent run's transcript in OpenClaw's session format (``chat.jsonl``), the file AceBench graders read.

One JSON object per line: a ``{"type": "session", ...}`` header, then ``{"type": "message", "id", "parentId",
"timestamp", "message": {...}}`` entries whose message is a ``user`` turn, an ``assistant`` turn (content
blocks ``text`` / ``thinking`` / ``toolCall`` with parsed ``arguments``, plus ``usage`` and ``stopReason``), or a
``toolResult`` (``toolCallId``, ``toolName``, ``content``, ``isError``).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}


class Transcript:
    def __init__(self, session_id: str, *, cwd: str = "/tmp_workspace", provider: str = "ecgw", model: str = "ecgw",
                 clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.provider = provider
        self.model = model
        self.entries: list[dict[str, Any]] = [
            {"type": "session", "version": 3, "id": session_id, "timestamp": _iso(clock()), "cwd": cwd}]
        self._parent: str | None = None

    def _add(self, message: dict[str, Any]) -> None:
        now = self._clock()
        message["timestamp"] = int(now * 1000)
        entry_id = uuid.uuid4().hex[:8]
        self.entries.append({"type": "message", "id": entry_id, "parentId": self._parent,
                             "timestamp": _iso(now), "message": message})
        self._parent = entry_id

    def user(self, text: str) -> None:
        self._add({"role": "user", "content": [{"type": "text", "text": text}]})

    def assistant(self, content: str | None, tool_calls: Sequence[Mapping[str, Any]] = (), *,
                  reasoning: str | None = None, usage: Mapping[str, int] | None = None,
                  stop_reason: str | None = None, error: str | None = None) -> None:
        blocks: list[dict[str, Any]] = []
        if reasoning:
            blocks.append({"type": "thinking", "thinking": reasoning})
        if content:
            blocks.append({"type": "text", "text": content})
        for call in tool_calls:
            blocks.append({"type": "toolCall", "id": call["id"], "name": call["name"],
                           "arguments": parse_arguments(call.get("arguments"))})
        u = dict(usage or {})
        prompt, cached, output = u.get("prompt_tokens", 0), u.get("cached_tokens", 0), u.get("completion_tokens", 0)
        message: dict[str, Any] = {
            "role": "assistant", "content": blocks, "api": "openai-completions", "provider": self.provider,
            "model": self.model,
            "usage": {"input": max(prompt - cached, 0), "output": output, "cacheRead": cached, "cacheWrite": 0,
                      "totalTokens": prompt + output},
            "stopReason": stop_reason or ("error" if error else "toolUse" if tool_calls else "stop"),
        }
        if error:
            message["errorMessage"] = error
        self._add(message)

    def tool_result(self, call_id: str, name: str, text: str, is_error: bool) -> None:
        self._add({"role": "toolResult", "toolCallId": call_id, "toolName": name,
                   "content": [{"type": "text", "text": text}], "isError": is_error})

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in self.entries), encoding="utf-8")
