"""Anthropic Messages requests in the chat-completions shape the pipeline runs.

``system`` (a string or text blocks) and ``role: "system"`` messages become system messages; content blocks
``text`` and ``image`` become content parts; ``tool_use`` becomes an assistant tool call and ``tool_result`` a
``tool`` message (``is_error`` said in its text); ``tools``/``tool_choice``/``stop_sequences``/``max_tokens``/
``metadata.user_id`` map to their chat fields. Thinking blocks the client passes back travel as the assistant's
``reasoning_content``, or — when the cloud model itself speaks Anthropic (``native``) — as litellm's
``thinking_blocks`` with their signatures, next to the ``cache_control`` breakpoints and the ``thinking`` setting.
Everything ends up in the chat body, so the privacy walk sees it before anything leaves for the cloud.
Fields with no chat meaning (``context_management``, ``output_config``, ``container``, ``service_tier``) are
accepted and dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gateway.http.errors import bad

# Sampling and control fields copied as they are.
_SAME = ("model", "max_tokens", "temperature", "top_p", "top_k", "stream")
_SUPPORTED_BLOCKS = "text, image, tool_use, tool_result, thinking, redacted_thinking"


@dataclass
class MessagesRequest:
    """The client's request as sent, and what the answer needs from it."""

    raw: dict[str, Any]
    model: str
    stop_sequences: list[str]
    thinking: bool  # the client asked for extended thinking (enabled or adaptive)


EXPECT = "a JSON Messages request with 'model', 'max_tokens' and 'messages'"


def to_chat(body: dict[str, Any], *, native: bool) -> tuple[dict[str, Any], MessagesRequest]:
    """The chat body for ``body`` (a Messages request), and what rendering the answer needs."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("'messages' is required and must be a non-empty list of messages.", "messages")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad("'model' must be a string.", "model")
    max_tokens = body.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)
                                   or max_tokens < 1):
        raise bad("'max_tokens' must be a positive integer.", "max_tokens")
    if "stream" in body and body["stream"] is not None and not isinstance(body["stream"], bool):
        raise bad("'stream' must be true or false.", "stream")
    stops = body.get("stop_sequences")
    if stops is not None and (not isinstance(stops, list) or not all(isinstance(s, str) for s in stops)):
        raise bad("'stop_sequences' must be a list of strings.", "stop_sequences")

    chat: dict[str, Any] = {k: body[k] for k in _SAME if body.get(k) is not None}
    chat["messages"] = _system(body.get("system"), native) + [
        m for i, message in enumerate(messages) for m in _message(message, i, native)]
    if stops:
        chat["stop"] = stops
    tools = _tools(body.get("tools"), native)
    if tools:
        chat["tools"] = tools
    _tool_choice(body.get("tool_choice"), chat)
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str) and metadata["user_id"]:
        chat["user"] = metadata["user_id"]
    thinking = body.get("thinking")
    wants_thinking = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    if native and isinstance(thinking, dict):
        chat["thinking"] = thinking
    if chat.get("stream"):
        chat["stream_options"] = {"include_usage": True}  # message_delta carries the usage
    return chat, MessagesRequest(raw=body, model=model or "", stop_sequences=list(stops or ()),
                                 thinking=wants_thinking)


def _system(system: Any, native: bool) -> list[dict[str, Any]]:
    if system is None or system == "" or system == []:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    if isinstance(system, list):
        parts = [_text_part(block, f"system[{i}]", native) for i, block in enumerate(system)]
        return [{"role": "system", "content": parts if native else _joined(parts)}]
    raise bad("'system' must be a string or a list of text blocks.", "system")


def _joined(parts: list[dict[str, Any]]) -> str:
    return "\n\n".join(part["text"] for part in parts)


def _text_part(block: Any, where: str, native: bool) -> dict[str, Any]:
    if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
        raise bad(f"{where} must be a text block: {{\"type\": \"text\", \"text\": \"...\"}}.", where)
    part: dict[str, Any] = {"type": "text", "text": block["text"]}
    if native and isinstance(block.get("cache_control"), dict):
        part["cache_control"] = block["cache_control"]
    return part


def _image_part(block: dict[str, Any], where: str) -> dict[str, Any]:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64" and isinstance(source.get("data"), str):
        url = f"data:{source.get('media_type') or 'image/png'};base64,{source['data']}"
    elif isinstance(source, dict) and source.get("type") == "url" and isinstance(source.get("url"), str):
        url = source["url"]
    else:
        raise bad(f"{where}.source must be {{\"type\": \"base64\", \"media_type\", \"data\"}} or "
                  "{\"type\": \"url\", \"url\"}.", f"{where}.source")
    return {"type": "image_url", "image_url": {"url": url}}


def _message(message: Any, i: int, native: bool) -> list[dict[str, Any]]:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise bad(f"{where} must be an object with 'role' and 'content'.", where)
    role = message.get("role")
    if role not in ("user", "assistant", "system"):
        raise bad(f"{where}.role is {role!r}; expected user or assistant.", f"{where}.role")
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise bad(f"{where}.content must be a string or a list of content blocks.", f"{where}.content")
    if role == "assistant":
        return [_assistant(content, where, native)]
    out: list[dict[str, Any]] = []  # tool results first: they must follow the assistant's tool calls
    parts: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(_text_part(block, at, native))
        elif kind == "image":
            parts.append(_image_part(block, at))
        elif kind == "tool_result" and role == "user":
            tool, images = _tool_result(block, at, native)
            out.append(tool)
            parts.extend(images)
        elif kind in ("thinking", "redacted_thinking"):
            continue  # only an assistant's turn carries thinking; nothing to pass on from elsewhere
        else:
            raise bad(f"{at} has type {kind!r}; a {role} message takes blocks of type {_SUPPORTED_BLOCKS}.",
                      f"{at}.type")
    if parts:
        text_only = all(p["type"] == "text" and "cache_control" not in p for p in parts)
        out.append({"role": role, "content": _joined(parts) if text_only and role == "system" else parts})
    return out


def _tool_result(block: dict[str, Any], where: str, native: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise bad(f"{where}.tool_use_id is required: the id of the tool_use block this result answers.",
                  f"{where}.tool_use_id")
    content = block.get("content")
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for k, item in enumerate(content):
            at = f"{where}.content[{k}]"
            if isinstance(item, dict) and item.get("type") == "image":
                images.append(_image_part(item, at))
            else:
                texts.append(_text_part(item, at, native)["text"])
    elif content is not None:
        raise bad(f"{where}.content must be a string or a list of text and image blocks.", f"{where}.content")
    text = "\n".join(texts)
    if block.get("is_error"):
        text = f"Error: {text}" if text else "Error"
    tool: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": text}
    if native and isinstance(block.get("cache_control"), dict):
        tool["cache_control"] = block["cache_control"]  # Claude Code's moving breakpoint; litellm keeps it
    return tool, images


def _assistant(content: list[Any], where: str, native: bool) -> dict[str, Any]:
    texts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(_text_part(block, at, native))
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise bad(f"{at} needs a string 'id' and 'name'.", at)
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            calls.append({"id": block["id"], "type": "function",
                          "function": {"name": block["name"], "arguments": arguments}})
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append({k: v for k, v in block.items() if k != "cache_control"})
        else:
            raise bad(f"{at} has type {kind!r}; an assistant message takes blocks of type {_SUPPORTED_BLOCKS}.",
                      f"{at}.type")
    message: dict[str, Any] = {"role": "assistant"}
    if native and any("cache_control" in part for part in texts):
        message["content"] = texts
    else:
        message["content"] = _joined(texts) if texts else None
    if calls:
        message["tool_calls"] = calls
    reasoning = "".join(b["thinking"] for b in thinking if isinstance(b.get("thinking"), str))
    if native and thinking:
        message["thinking_blocks"] = thinking  # litellm's name; sent back to Anthropic with their signatures
    if reasoning:
        message["reasoning_content"] = reasoning
    return message


def _tools(tools: Any, native: bool) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise bad("'tools' must be a list of tool definitions.", "tools")
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise bad(f"tools[{i}] must be an object with a 'name' and an 'input_schema'.", f"tools[{i}]")
        schema = tool.get("input_schema")
        if schema is None:
            continue  # a server tool of Anthropic's own (web search, tool search): nothing a chat model runs
        if not isinstance(schema, dict):
            raise bad(f"tools[{i}].input_schema must be a JSON schema object.", f"tools[{i}].input_schema")
        function: dict[str, Any] = {"name": tool["name"], "parameters": schema}
        if isinstance(tool.get("description"), str):
            function["description"] = tool["description"]
        entry: dict[str, Any] = {"type": "function", "function": function}
        if native and isinstance(tool.get("cache_control"), dict):
            entry["cache_control"] = tool["cache_control"]
        out.append(entry)
    return out


def _tool_choice(choice: Any, chat: dict[str, Any]) -> None:
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "auto":
        chat["tool_choice"] = "auto"
    elif kind == "any":
        chat["tool_choice"] = "required"
    elif kind == "none":
        chat["tool_choice"] = "none"
    elif kind == "tool" and isinstance(choice.get("name"), str):
        chat["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    else:
        raise bad("'tool_choice' must be {\"type\": \"auto\"}, {\"type\": \"any\"}, {\"type\": \"none\"} or "
                  "{\"type\": \"tool\", \"name\": ...}.", "tool_choice")
    if isinstance(choice, dict) and choice.get("disable_parallel_tool_use") and kind != "none":
        chat["parallel_tool_calls"] = False
