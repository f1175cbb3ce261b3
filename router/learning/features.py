"""A step's features, computed from its request as numbers and labels only — never text, values or tool arguments.

What a step record keeps (``features`` column), and what a learned router reads at decision time:

- ``step_index``: assistant turns before this one, plus one;
- ``prompt_tokens``, ``history_tokens``, ``observation_tokens``: approximate tokens (characters / 4) of every
  message, of those before the trailing observation, and of the trailing observation (the tool results or user
  message the step answers);
- ``tools_offered``: the number of tools the request offers;
- ``last_role``: the role of the last message (``user``, ``tool``, ``assistant``, ``system``), a label;
- ``last_tool_error``: 1 when the trailing tool result reads as a failure (``ERROR_WORDS``), else 0;
- from the policy's edge probe (``router.entropy.first_token_stats``): ``entropy_first``, ``entropy_mean``,
  ``entropy_max``, ``margin``;
- after the step: ``latency_s`` (not known at decision time, so no fitted model reads it by default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

Features = dict[str, float | int | str]

CHARS_PER_TOKEN = 4
ROLES = ("user", "tool", "assistant", "system")
# A tool result that starts with or says one of these reads as a failed call.
ERROR_WORDS = re.compile(r"(?i)\b(error|exception|traceback|failed|failure|not found|no such file|permission denied|"
                         r"exit (?:code|status) [1-9]\d*|command not found|invalid)\b")
# The numeric features a model may read at decision time, in the order a model file lists them by default.
DECISION_FEATURES = ("entropy_first", "entropy_mean", "entropy_max", "margin", "step_index", "prompt_tokens",
                     "history_tokens", "observation_tokens", "tools_offered", "last_role_tool", "last_role_user",
                     "last_tool_error")


def _chars(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    total = 0
    if isinstance(content, str):
        total += len(content)
    elif isinstance(content, Sequence):
        total += sum(len(p["text"]) for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping):
            function = call.get("function") or {}
            if isinstance(function, Mapping):
                total += len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
    return total


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return " ".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


def request_features(request: Mapping[str, Any]) -> Features:
    """The features of a chat request (see the module's list); the text is read here and never leaves."""
    raw = request.get("messages")
    messages = [m for m in raw if isinstance(m, Mapping)] if isinstance(raw, Sequence) else []
    tail = len(messages)
    while tail > 0 and messages[tail - 1].get("role") in ("tool", "user"):
        tail -= 1
    if tail == len(messages):  # the last message is the assistant's or the system's: no observation
        tail = len(messages) - 1 if messages else 0
    history = sum(_chars(m) for m in messages[:tail])
    observation = sum(_chars(m) for m in messages[tail:])
    last_role = str(messages[-1].get("role") or "") if messages else ""
    tool_results = [m for m in messages[tail:] if m.get("role") == "tool"]
    tools = request.get("tools")
    return {
        "step_index": sum(1 for m in messages if m.get("role") == "assistant") + 1,
        "prompt_tokens": (history + observation) // CHARS_PER_TOKEN,
        "history_tokens": history // CHARS_PER_TOKEN,
        "observation_tokens": observation // CHARS_PER_TOKEN,
        "tools_offered": len(tools) if isinstance(tools, Sequence) else 0,
        "last_role": last_role if last_role in ROLES else "other",
        "last_tool_error": int(any(ERROR_WORDS.search(_text(m)[:2000]) for m in tool_results)),
    }


def vector(features: Mapping[str, Any], names: Sequence[str]) -> list[float] | None:
    """The named numeric features in order (``last_role_<role>`` is 1 when ``last_role`` is that role); None when
    one is missing (a step without an edge probe has no entropy)."""
    out: list[float] = []
    for name in names:
        if name.startswith("last_role_"):
            out.append(1.0 if features.get("last_role") == name[len("last_role_"):] else 0.0)
            continue
        value = features.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        out.append(float(value))
    return out
