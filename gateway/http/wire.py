"""Checks on a client's chat-completions body (read by ``gateway.http.body``). Tolerant: unknown fields pass through
untouched; only what the gateway itself relies on, or what no upstream could take (a content part that is not an
object, a ``response_format`` of no known type), is checked, and an error names the field — a 400 here rather
than an upstream's failure later."""

from __future__ import annotations

from typing import Any

from gateway.http.errors import bad

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
EXPECT = "a JSON chat-completions request with a 'messages' list"
RESPONSE_FORMATS = ("text", "json_object", "json_schema")


def check_chat_request(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("'messages' is required and must be a non-empty list of chat messages.", "messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise bad(f"messages[{i}] must be an object with 'role' and 'content'.", f"messages[{i}]")
        role = message.get("role")
        if role not in ROLES:
            raise bad(f"messages[{i}].role is {role!r}; expected one of {', '.join(ROLES)}.",
                      f"messages[{i}].role")
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                _check_part(part, f"messages[{i}].content[{j}]")
        elif content is not None and not isinstance(content, str):
            raise bad(f"messages[{i}].content must be a string, a list of content parts, or null.",
                      f"messages[{i}].content")
    if "model" in body and not isinstance(body["model"], str):
        raise bad("'model' must be a string.", "model")
    if "stream" in body and body["stream"] is not None and not isinstance(body["stream"], bool):
        raise bad("'stream' must be true or false.", "stream")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise bad("'tools' must be a list of tool definitions.", "tools")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise bad("'stream_options' must be an object.", "stream_options")
    _check_response_format(body.get("response_format"))
    return body


def _check_part(part: Any, where: str) -> None:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise bad(f"{where} must be an object with a 'type' (text, image_url, ...).", where)
    kind = part["type"]
    if kind == "text" and not isinstance(part.get("text"), str):
        raise bad(f"{where} is a text part: it needs a string 'text'.", f"{where}.text")
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if not isinstance(url, str) or not url:
            raise bad(f"{where} is an image_url part: it needs 'image_url': {{\"url\": \"...\"}}.",
                      f"{where}.image_url")


def _check_response_format(value: Any) -> None:
    if value is None:
        return
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in RESPONSE_FORMATS:
        raise bad("'response_format' must be an object with 'type' text, json_object or json_schema.",
                  "response_format")
    if kind == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or (
                "schema" in spec and not isinstance(spec["schema"], dict)):
            raise bad("'response_format' of type json_schema needs 'json_schema': {\"name\": \"...\", \"schema\": "
                      "{...}}.", "response_format.json_schema")


def client_wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return bool(isinstance(options, dict) and options.get("include_usage"))
