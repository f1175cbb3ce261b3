"""The pipeline's completion as a Responses API ``response`` object, and the pieces the streamed events
(``responses_events``) share with it: ids, items, usage (``input_tokens_details.cached_tokens`` included)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from gateway.surfaces.responses_tools import LOCAL_SHELL, ToolMap

_ECHOED = ("instructions", "max_output_tokens", "metadata", "previous_response_id", "temperature", "top_p",
           "user", "store", "reasoning", "truncation", "top_logprobs", "service_tier", "background")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def usage_of(chat: dict[str, Any] | None) -> dict[str, Any] | None:
    if not chat:
        return None
    prompt = int(chat.get("prompt_tokens") or 0)
    completion = int(chat.get("completion_tokens") or 0)
    cached = (chat.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is None:
        cached = chat.get("prompt_cache_hit_tokens")
    reasoning = (chat.get("completion_tokens_details") or {}).get("reasoning_tokens")
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": int(cached or 0)},
            "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": int(reasoning or 0)},
            "total_tokens": int(chat.get("total_tokens") or prompt + completion)}


@dataclass
class ResponseShell:
    """What every rendering of one response shares: its id, the request's echoed fields, the tool mapping."""

    request: dict[str, Any]
    tools: ToolMap
    id: str = field(default_factory=lambda: new_id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))

    def response(self, *, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None = None,
                 model: str | None = None, finish_reason: str | None = None,
                 error: dict[str, Any] | None = None) -> dict[str, Any]:
        request = self.request
        text: dict[str, Any] = request["text"] if isinstance(request.get("text"), dict) else {}
        body: dict[str, Any] = {
            "id": self.id, "object": "response", "created_at": self.created_at, "status": status,
            "error": error, "incomplete_details": None,
            "model": model or request.get("model") or "", "output": output,
            "parallel_tool_calls": request.get("parallel_tool_calls", True),
            "tool_choice": request.get("tool_choice", "auto"), "tools": request.get("tools") or [],
            "text": {**text, "format": text.get("format") or {"type": "text"}},
            "usage": usage,
        }
        for key in _ECHOED:
            body[key] = request.get(key)
        body["metadata"] = request.get("metadata") or {}
        body["store"] = request.get("store", True)
        body["truncation"] = request.get("truncation") or "disabled"
        if status == "incomplete":
            reason = "content_filter" if finish_reason == "content_filter" else "max_output_tokens"
            body["incomplete_details"] = {"reason": reason}
        return body

    def status_of(self, finish_reason: str | None) -> str:
        return "incomplete" if finish_reason in ("length", "content_filter") else "completed"

    def call_item(self, call_id: str, name: str, arguments: str, *, status: str = "completed") -> dict[str, Any]:
        """A chat tool call as the Responses item the client's tool stood for."""
        origin = self.tools.namespaced.get(name)
        if name in self.tools.custom_tools:
            item = {"type": "custom_tool_call", "id": new_id("ctc"), "call_id": call_id, "name": name,
                    "input": custom_input(arguments), "status": status}
            if origin is not None:
                item["namespace"], item["name"] = origin
            return item
        if name == LOCAL_SHELL and self.tools.local_shell:
            try:
                action = json.loads(arguments or "{}")
            except ValueError:
                action = {}
            action = action if isinstance(action, dict) else {}
            return {"type": "local_shell_call", "id": new_id("lsh"), "call_id": call_id,
                    "action": {"type": "exec", **action}, "status": status}
        item = {"type": "function_call", "id": new_id("fc"), "call_id": call_id, "name": name,
                "arguments": arguments, "status": status}
        if origin is not None:
            item["namespace"], item["name"] = origin
        return item

    def render(self, completion: dict[str, Any]) -> dict[str, Any]:
        choice = (completion.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        output: list[dict[str, Any]] = []
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            output.append(reasoning_item(new_id("rs"), reasoning))
        if isinstance(message.get("content"), str) and message["content"]:
            output.append(message_item(new_id("msg"), message["content"], logprobs_of(choice.get("logprobs"))))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            output.append(self.call_item(str(call.get("id") or new_id("call")), str(function.get("name") or ""),
                                         str(function.get("arguments") or "")))
        finish = choice.get("finish_reason")
        return self.response(status=self.status_of(finish), output=output, usage=usage_of(completion.get("usage")),
                             model=completion.get("model"), finish_reason=finish)


def custom_input(arguments: str) -> str:
    """A freeform tool's input from the function arguments it travelled as; raw text if the model wrote that."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get("input"), str):
        return str(value["input"])
    return arguments


def message_item(item_id: str, text: str, logprobs: list[dict[str, Any]] | None = None, *,
                 status: str = "completed") -> dict[str, Any]:
    return {"type": "message", "id": item_id, "status": status, "role": "assistant",
            "content": [text_part(text, logprobs)]}


def text_part(text: str, logprobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs or []}


def reasoning_item(item_id: str, text: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": [], "content": [{"type": "reasoning_text", "text": text}]}


def logprobs_of(chat: Any) -> list[dict[str, Any]]:
    if not isinstance(chat, dict):
        return []
    out = []
    for entry in chat.get("content") or ():
        out.append({"token": entry.get("token"), "logprob": entry.get("logprob"), "bytes": entry.get("bytes"),
                    "top_logprobs": [{"token": t.get("token"), "logprob": t.get("logprob"), "bytes": t.get("bytes")}
                                     for t in entry.get("top_logprobs") or ()]})
    return out
