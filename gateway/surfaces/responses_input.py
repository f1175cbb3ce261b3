"""A Responses API request as the chat-completions body the step pipeline runs.

Items map onto chat messages: ``instructions`` and ``developer``/``system`` messages become system messages;
``input_text``/``output_text``/``input_image``/``input_file`` parts become chat parts; ``function_call`` and
Codex's ``custom_tool_call``/``local_shell_call`` join the assistant message's ``tool_calls``; their outputs become
``tool`` messages; ``reasoning`` items passed back become the assistant message's ``reasoning_content`` (their
text, so privacy scans it like any other slot). What chat cannot hold — a reasoning item's ``encrypted_content``,
a hosted tool's call record — is not sent to a chat upstream, which could not use it; the client keeps it, and
a stored response keeps every item verbatim.
Tools: see ``responses_tools``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gateway.http.errors import bad
from gateway.surfaces.responses_tools import LOCAL_SHELL, ToolMap, chat_name, chat_tool_choice, chat_tools

_PASSED_THROUGH = ("temperature", "top_p", "parallel_tool_calls", "user", "stream", "top_logprobs", "seed",
                   "service_tier")


@dataclass
class Conversion:
    """The chat body, and how the request's tools map to chat functions (for rendering the calls back)."""

    body: dict[str, Any]
    tools: ToolMap = field(default_factory=ToolMap)


def to_chat(request: dict[str, Any], history: list[dict[str, Any]]) -> Conversion:
    """``history``: the items of the stored responses ``previous_response_id`` chains to (oldest first)."""
    conversion = Conversion(body={})
    items = _input_items(request.get("input"))
    tools = chat_tools(request.get("tools"), history + items, conversion.tools)
    messages: list[dict[str, Any]] = []
    instructions = request.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise bad("'instructions' must be a string.", "instructions")
        messages.append({"role": "system", "content": instructions})
    builder = _Messages(messages)
    for item in history:
        builder.add(item, "previous_response_id")
    for i, item in enumerate(items):
        builder.add(item, f"input[{i}]")
    builder.done()
    if not messages:
        raise bad("'input' is empty; send a string or a list of input items.", "input")
    body = conversion.body
    body["messages"] = messages
    if isinstance(request.get("model"), str):
        body["model"] = request["model"]
    for key in _PASSED_THROUGH:
        if request.get(key) is not None:
            body[key] = request[key]
    cap = request.get("max_output_tokens")
    if cap is not None:
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
            raise bad(f"'max_output_tokens' must be a whole number of at least 1 (it is {cap!r}).",
                      "max_output_tokens")
        body["max_completion_tokens"] = cap
    if tools:
        body["tools"] = tools
    choice = chat_tool_choice(request.get("tool_choice"))
    if choice is not None and tools:
        body["tool_choice"] = choice
    fmt = _response_format(request.get("text"))
    if fmt is not None:
        body["response_format"] = fmt
    reasoning = request.get("reasoning")
    if isinstance(reasoning, dict) and isinstance(reasoning.get("effort"), str):
        body["reasoning_effort"] = reasoning["effort"]
    metadata = request.get("metadata")
    if isinstance(metadata, dict):
        body["metadata"] = metadata
    include = request.get("include") or ()
    if request.get("top_logprobs") or "message.output_text.logprobs" in include:
        body["logprobs"] = True
    return conversion


def _input_items(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list):
        raise bad("'input' must be a string or a list of input items.", "input")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise bad(f"input[{i}] must be an object (a message or an item with a 'type').", f"input[{i}]")
    return list(value)


class _Messages:
    """Appends items as chat messages: consecutive tool calls join one assistant message (chat's shape for
    parallel calls), and a reasoning item's text rides on the assistant message that follows it."""

    def __init__(self, out: list[dict[str, Any]]) -> None:
        self.out = out
        self.reasoning: list[str] = []

    def done(self) -> None:
        if self.reasoning:  # reasoning with nothing after it: it belongs to the last assistant turn, if any
            for message in reversed(self.out):
                if message.get("role") == "assistant":
                    self._attach_reasoning(message)
                    break

    def _attach_reasoning(self, message: dict[str, Any]) -> None:
        if self.reasoning:
            earlier = message.get("reasoning_content")
            message["reasoning_content"] = "\n".join(([earlier] if earlier else []) + self.reasoning)
            self.reasoning = []

    def _new_assistant(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None}
        self._attach_reasoning(message)
        self.out.append(message)
        return message

    def add(self, item: dict[str, Any], where: str) -> None:
        kind = item.get("type") or "message"
        if kind == "message":
            self._message(item, where)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = item.get("call_id") or item.get("id")
            if not isinstance(call_id, str):
                raise bad(f"{where}.call_id is required on a {kind} item.", f"{where}.call_id")
            last = self.out[-1] if self.out else None
            assistant = last if last is not None and last.get("role") == "assistant" else self._new_assistant()
            self._attach_reasoning(assistant)
            assistant.setdefault("tool_calls", []).append(
                {"id": call_id, "type": "function", "function": _call_function(item, kind, where)})
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            call_id = item.get("call_id") or item.get("id")
            if not isinstance(call_id, str):
                raise bad(f"{where}.call_id is required on a {kind} item.", f"{where}.call_id")
            self.out.append({"role": "tool", "tool_call_id": call_id, "content": _output_text(item.get("output"))})
        elif kind == "reasoning":
            self.reasoning.extend(_reasoning_texts(item))
        elif kind == "additional_tools":
            return  # Codex's tool list, read by ``chat_tools``
        elif kind == "item_reference":
            raise bad(f"{where} is an item_reference; the gateway resolves earlier items only through "
                      "'previous_response_id'. Send the item itself.", where)
        # Other items (hosted tool calls such as web_search_call, compaction records) have no chat form: the
        # model cannot use them, so they are not sent; the client and a stored response keep them.

    def _message(self, item: dict[str, Any], where: str) -> None:
        role = item.get("role")
        if role not in ("user", "assistant", "system", "developer"):
            raise bad(f"{where}.role is {role!r}; expected user, assistant, system or developer.", f"{where}.role")
        content = item.get("content")
        if role == "assistant":
            self._new_assistant()["content"] = _joined_text(content, where)
            return
        self.out.append({"role": "system" if role == "developer" else role, "content": _parts(content, where)})


def _call_function(item: dict[str, Any], kind: str, where: str) -> dict[str, Any]:
    name = item.get("name")
    if kind == "local_shell_call":
        return {"name": LOCAL_SHELL, "arguments": json.dumps(item.get("action") or {}, ensure_ascii=False)}
    if not isinstance(name, str) or not name:
        raise bad(f"{where}.name is required on a {kind} item.", f"{where}.name")
    if kind == "custom_tool_call":
        return {"name": chat_name(item.get("namespace"), name), "arguments": json.dumps({"input": item.get("input") or ""}, ensure_ascii=False)}
    name = chat_name(item.get("namespace"), name)
    arguments = item.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return {"name": name, "arguments": arguments}


def _output_text(output: Any) -> Any:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _parts(output, "output")
    if isinstance(output, dict):  # Codex's older shape: {"content": ..., "success": ...}
        content = output.get("content")
        return content if isinstance(content, str) else json.dumps(output, ensure_ascii=False)
    return "" if output is None else json.dumps(output, ensure_ascii=False)


def _reasoning_texts(item: dict[str, Any]) -> list[str]:
    texts = []
    for key in ("content", "summary"):
        for part in item.get(key) or ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        if texts:  # the full reasoning text when the client has it, else its summary
            break
    return texts


def _joined_text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise bad(f"{where}.content must be a string or a list of content parts.", f"{where}.content")
    texts = []
    for part in content:
        if isinstance(part, dict):
            text = part.get("text") if part.get("type") != "refusal" else part.get("refusal")
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts)


def _parts(content: Any, where: str) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad(f"{where}.content must be a string or a list of content parts.", f"{where}.content")
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise bad(f"{where}.content[{j}] must be an object with a 'type'.", f"{where}.content[{j}]")
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
            parts.append({"type": "text", "text": str(part.get("text") or "")})
        elif kind == "input_image":
            url = part.get("image_url") or part.get("file_id")
            if not isinstance(url, str):
                raise bad(f"{where}.content[{j}] needs 'image_url' (a URL or data URL).", f"{where}.content[{j}]")
            parts.append({"type": "image_url", "image_url": {"url": url, "detail": part.get("detail") or "auto"}})
        elif kind == "input_file":
            file = {k: part[k] for k in ("file_data", "file_id", "filename") if isinstance(part.get(k), str)}
            parts.append({"type": "file", "file": file})
        elif kind == "refusal":
            parts.append({"type": "text", "text": str(part.get("refusal") or "")})
        else:
            raise bad(f"{where}.content[{j}].type is {kind!r}; the gateway takes input_text, output_text, "
                      "input_image and input_file parts.", f"{where}.content[{j}].type")
    return parts


def _response_format(text: Any) -> dict[str, Any] | None:
    if text is None:
        return None
    if not isinstance(text, dict):
        raise bad("'text' must be an object such as {\"format\": {\"type\": \"json_schema\", ...}}.", "text")
    fmt = text.get("format")
    if fmt is None or (isinstance(fmt, dict) and fmt.get("type") == "text"):
        return None
    if not isinstance(fmt, dict):
        raise bad("'text.format' must be an object with a 'type'.", "text.format")
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    if fmt.get("type") == "json_schema":
        if not isinstance(fmt.get("schema"), dict) or not isinstance(fmt.get("name"), str):
            raise bad("'text.format' of type json_schema needs 'name' and 'schema'.", "text.format")
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    raise bad(f"'text.format.type' is {fmt.get('type')!r}; expected text, json_object or json_schema.",
              "text.format.type")
