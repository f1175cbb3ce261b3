"""Make a server that bends the OpenAI spec work for clients that follow it (see ``edge.compat``)."""

from __future__ import annotations

from typing import Any

from gateway.config.settings import CompatSettings
from router.chat_shapes import text_of


def normalise_request(body: dict[str, Any], compat: CompatSettings) -> dict[str, Any]:
    """A copy of ``body`` the server accepts. Only touches what a switch names."""
    out = dict(body)
    if compat.send_max_tokens and "max_completion_tokens" in out:
        value = out.pop("max_completion_tokens")
        out.setdefault("max_tokens", value)
    if compat.string_content or compat.null_content_as_empty:
        messages = []
        for message in out.get("messages") or ():
            content = message.get("content")
            if compat.string_content and isinstance(content, list):
                message = {**message, "content": text_of(content)}
            elif compat.null_content_as_empty and content is None:
                message = {**message, "content": ""}
            messages.append(message)
        out["messages"] = messages
    return out


class ToolNameDeduper:
    """Some servers repeat ``function.name`` (and ``id``) in every tool-call delta and mirror them in the legacy
    ``function_call``; clients would concatenate them."""

    def __init__(self) -> None:
        self._seen: set[tuple[int, int]] = set()

    def __call__(self, chunk: dict[str, Any]) -> dict[str, Any]:
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("tool_calls") and delta.get("function_call"):
                delta.pop("function_call")  # the legacy field mirrors tool_calls; clients would merge both
            for call in delta.get("tool_calls") or ():
                function = call.get("function")
                if not function or not function.get("name"):
                    continue
                key = (choice.get("index", 0), call.get("index", 0))
                if key in self._seen:
                    function.pop("name", None)
                    call.pop("id", None)
                    call.pop("type", None)
                else:
                    self._seen.add(key)
        return chunk
