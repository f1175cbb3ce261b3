"""OpenAI chat-completion shapes that policies, transports and surfaces all need: the text of a message's
content, a completion turned into stream chunks and a stream back into a completion, tool-call deltas folded
into whole calls, and closing a chunk stream early."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from typing import Any


def text_of(content: Any) -> str:
    """The text of a message's ``content`` (a string, or a list of content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    return ""


def merge_tool_call_deltas(calls: dict[int, dict[str, Any]], deltas: Any) -> None:
    """Fold streamed ``tool_calls`` deltas into whole calls keyed by their ``index``: the id and name arrive
    once (some servers repeat them: a repeated name is not appended again), the arguments in pieces."""
    for call in deltas or ():
        slot = calls.setdefault(int(call.get("index") or 0),
                                {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        if call.get("id"):
            slot["id"] = call["id"]
        function = call.get("function") or {}
        name = function.get("name")
        if name and slot["function"]["name"] != name:
            slot["function"]["name"] += name
        if function.get("arguments"):
            slot["function"]["arguments"] += function["arguments"]


async def aclose(iterator: AsyncIterator[Any]) -> None:
    """Close a chunk stream a consumer stops reading (an async generator's ``aclose``; others need nothing)."""
    if isinstance(iterator, AsyncGenerator):
        await iterator.aclose()


def completion_to_chunks(response: dict[str, Any], *, include_usage: bool = True) -> Iterator[dict[str, Any]]:
    """The chunks a streaming upstream would have sent for ``response``: role, reasoning, content,
    tool calls (with ``index``/``id``/``name``), finish reason, then usage when asked."""
    base = {
        "id": response.get("id") or "chatcmpl-ecgw",
        "object": "chat.completion.chunk",
        "created": response.get("created") or int(time.time()),
        "model": response.get("model") or "",
    }
    for key in ("system_fingerprint",):
        if response.get(key) is not None:
            base[key] = response[key]

    def chunk(choice: dict[str, Any]) -> dict[str, Any]:
        return {**base, "choices": [choice]}

    for choice in response.get("choices") or ():
        index = choice.get("index", 0)
        message = choice.get("message") or {}
        yield chunk({"index": index, "delta": {"role": message.get("role") or "assistant", "content": ""},
                     "logprobs": None, "finish_reason": None})
        for key in ("reasoning_content", "reasoning"):
            if message.get(key):
                yield chunk({"index": index, "delta": {key: message[key]}, "logprobs": None, "finish_reason": None})
        if message.get("content"):
            logprobs = choice.get("logprobs")
            yield chunk({"index": index, "delta": {"content": message["content"]}, "logprobs": logprobs,
                         "finish_reason": None})
        for position, call in enumerate(message.get("tool_calls") or ()):
            function = call.get("function") or {}
            yield chunk({
                "index": index,
                "delta": {"tool_calls": [{
                    "index": position,
                    "id": call.get("id"),
                    "type": call.get("type", "function"),
                    "function": {"name": function.get("name"), "arguments": function.get("arguments") or ""},
                }]},
                "logprobs": None,
                "finish_reason": None,
            })
        yield chunk({"index": index, "delta": {}, "logprobs": None, "finish_reason": choice.get("finish_reason")})
    if include_usage and response.get("usage") is not None:
        yield {**base, "choices": [], "usage": response["usage"]}


async def chunks_to_completion(chunks: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    """Assemble a stream into the completion a non-streaming call would have returned."""
    choices: dict[int, dict[str, Any]] = {}
    head: dict[str, Any] = {}
    usage: dict[str, Any] | None = None
    async for chunk in chunks:
        if not head:
            head = {k: chunk.get(k) for k in ("id", "created", "model", "system_fingerprint")}
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            merge_delta(choices.setdefault(choice.get("index", 0), _empty_choice(choice.get("index", 0))), choice)
    response: dict[str, Any] = {
        "id": head.get("id") or "chatcmpl-ecgw",
        "object": "chat.completion",
        "created": head.get("created") or int(time.time()),
        "model": head.get("model") or "",
        "choices": [_finish_choice(choices[i]) for i in sorted(choices)],
    }
    if head.get("system_fingerprint"):
        response["system_fingerprint"] = head["system_fingerprint"]
    if usage is not None:
        response["usage"] = usage
    return response


def _empty_choice(index: int) -> dict[str, Any]:
    return {"index": index, "message": {"role": "assistant", "content": None}, "finish_reason": None,
            "logprobs": None, "_calls": {}}


def merge_delta(acc: dict[str, Any], choice: dict[str, Any]) -> None:
    """Fold one streamed choice delta into an accumulating choice."""
    delta = choice.get("delta") or {}
    message = acc["message"]
    for key in ("content", "reasoning_content", "reasoning"):
        piece = delta.get(key)
        if isinstance(piece, str) and (piece or key == "content"):
            message[key] = (message.get(key) or "") + piece
    merge_tool_call_deltas(acc["_calls"], delta.get("tool_calls"))
    logprobs = choice.get("logprobs")
    if logprobs and logprobs.get("content"):
        acc["logprobs"] = acc["logprobs"] or {"content": []}
        acc["logprobs"]["content"].extend(logprobs["content"])
    if choice.get("finish_reason"):
        acc["finish_reason"] = choice["finish_reason"]


def _finish_choice(acc: dict[str, Any]) -> dict[str, Any]:
    calls = acc.pop("_calls")
    if calls:
        acc["message"]["tool_calls"] = [calls[i] for i in sorted(calls)]
    if acc["message"].get("content") == "" and calls:
        acc["message"]["content"] = None
    return acc
