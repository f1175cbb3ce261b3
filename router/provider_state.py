"""State in a chat body that only one provider understands, and its removal before another provider sees it.

The Messages surface keeps Anthropic's own state in the chat body when the cloud speaks Anthropic (litellm's
``thinking_blocks`` with their signatures on assistant messages, ``cache_control`` breakpoints on content parts, the
``thinking`` setting). A fallback to a target of another provider would be rejected for it (a signature only
Anthropic can verify) or would misread it, so the cloud door drops it for that target and says so in the log.
"""

from __future__ import annotations

from typing import Any

# provider -> (top-level fields, message fields, content-part and tool fields) only it understands
_OWN: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "anthropic": (("thinking",), ("thinking_blocks",), ("cache_control",)),
}


def foreign_state(body: dict[str, Any], provider: str) -> tuple[dict[str, Any], list[str]]:
    """``body`` without the state of providers other than ``provider``, and what was dropped (``field×count``);
    ``body`` itself when nothing was."""
    dropped: dict[str, int] = {}
    out = body
    for owner, (top, message_keys, part_keys) in _OWN.items():
        if owner == provider:
            continue
        for key in top:
            if key in out:
                out = {k: v for k, v in out.items() if k != key}
                dropped[key] = dropped.get(key, 0) + 1
        messages = []
        changed = False
        for message in out.get("messages") or ():
            if isinstance(message, dict):
                cleaned = _without(message, message_keys, dropped)
                content = cleaned.get("content")
                if isinstance(content, list):
                    parts = [_without(p, part_keys, dropped) if isinstance(p, dict) else p for p in content]
                    if any(a is not b for a, b in zip(parts, content, strict=True)):
                        cleaned = {**cleaned, "content": parts}
                changed = changed or cleaned is not message
                message = cleaned
            messages.append(message)
        if changed:
            out = {**out, "messages": messages}
        tools = out.get("tools")
        if isinstance(tools, list):
            cleaned_tools = [_without(t, part_keys, dropped) if isinstance(t, dict) else t for t in tools]
            if any(a is not b for a, b in zip(cleaned_tools, tools, strict=True)):
                out = {**out, "tools": cleaned_tools}
    return out, [f"{key}×{count}" for key, count in sorted(dropped.items())]


def _without(item: dict[str, Any], keys: tuple[str, ...], dropped: dict[str, int]) -> dict[str, Any]:
    found = [k for k in keys if k in item]
    if not found:
        return item
    for key in found:
        dropped[key] = dropped.get(key, 0) + 1
    return {k: v for k, v in item.items() if k not in found}
