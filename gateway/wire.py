"""Checks on a client's chat-completions body. Tolerant: unknown fields pass through untouched; only what
the gateway itself relies on is checked, and an error names the field."""

from __future__ import annotations

from typing import Any

from gateway.errors import ClientError
from gateway.jsonio import JSONDecodeError, loads

ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _bad(message: str, param: str) -> ClientError:
    return ClientError(400, message, param=param)


def parse_chat_request(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise _bad("The request body is empty; send a JSON chat-completions request with a 'messages' list.",
                   "body")
    try:
        body = loads(raw)
    except JSONDecodeError as exc:
        raise _bad(f"The request body is not valid JSON ({exc}).", "body") from None
    if not isinstance(body, dict):
        raise _bad("The request body must be a JSON object with a 'messages' list.", "body")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' is required and must be a non-empty list of chat messages.", "messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _bad(f"messages[{i}] must be an object with 'role' and 'content'.", f"messages[{i}]")
        role = message.get("role")
        if role not in ROLES:
            raise _bad(f"messages[{i}].role is {role!r}; expected one of {', '.join(ROLES)}.",
                       f"messages[{i}].role")
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise _bad(f"messages[{i}].content must be a string, a list of content parts, or null.",
                       f"messages[{i}].content")
    if "model" in body and not isinstance(body["model"], str):
        raise _bad("'model' must be a string.", "model")
    if "stream" in body and body["stream"] is not None and not isinstance(body["stream"], bool):
        raise _bad("'stream' must be true or false.", "stream")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise _bad("'tools' must be a list of tool definitions.", "tools")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise _bad("'stream_options' must be an object.", "stream_options")
    return body


def client_wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return bool(isinstance(options, dict) and options.get("include_usage"))
