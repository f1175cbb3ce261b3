"""Reading and adjusting OpenAI chat request bodies."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from router.chat_shapes import text_of


def messages_of(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def first_user_text(body: Mapping[str, Any]) -> str:
    for message in messages_of(body):
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return ""


def tool_names(body: Mapping[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or ():
        if isinstance(tool, Mapping):
            function = tool.get("function")
            if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                names.append(function["name"])
    return names


def in_tool_loop(body: Mapping[str, Any]) -> bool:
    """The step continues an assistant's tool calls: the last message is a tool result."""
    messages = messages_of(body)
    return bool(messages) and messages[-1].get("role") in ("tool", "function")


def task_id(body: Mapping[str, Any]) -> str | None:
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        for key in ("task_id", "task"):
            if isinstance(metadata.get(key), str) and metadata[key]:
                return str(metadata[key])
    return None


def with_system_suffix(body: Mapping[str, Any], suffix: str) -> dict[str, Any]:
    """A copy of ``body`` with ``suffix`` appended to its first system (or developer) message, or a new
    system message first when it has none."""
    messages = [dict(m) for m in messages_of(body)]
    for message in messages:
        if message.get("role") in ("system", "developer"):
            content = message.get("content")
            if isinstance(content, list):
                message["content"] = [*content, {"type": "text", "text": "\n\n" + suffix}]
            else:
                existing = text_of(content)
                message["content"] = (existing + "\n\n" + suffix) if existing else suffix
            break
    else:
        messages.insert(0, {"role": "system", "content": suffix})
    return {**body, "messages": messages}


def function_tool(name: str, description: str, properties: Mapping[str, Any],
                  required: Sequence[str] = ()) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": dict(properties), "required": list(required)},
    }}


def can_inject_tool(body: Mapping[str, Any], name: str) -> bool:
    """A tool may be added unless the client turned tools off, forced a tool, or already has one so named."""
    choice = body.get("tool_choice")
    if choice == "none" or isinstance(choice, Mapping):
        return False
    return name not in tool_names(body)


def with_tools(body: Mapping[str, Any], tools: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {**body, "tools": [*(body.get("tools") or []), *tools]}


def call_id(call: Mapping[str, Any]) -> str:
    value = call.get("id")
    return value if isinstance(value, str) and value else "call_" + uuid.uuid4().hex[:16]
