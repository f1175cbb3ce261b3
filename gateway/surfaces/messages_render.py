"""The pipeline's chat answer as an Anthropic message: a whole one (JSON), or the official event sequence (SSE):
``message_start``, ``ping``, per block ``content_block_start`` / ``content_block_delta`` (``thinking_delta``,
``signature_delta``, ``text_delta``, ``input_json_delta``) / ``content_block_stop``, ``message_delta`` (stop
reason, usage), ``message_stop`` — each framed with its ``event:`` line."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from accounting.usage import normalise
from gateway.http.sse import event
from gateway.surfaces.messages_request import MessagesRequest

_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens",
         "content_filter": "refusal"}


def message_id(chat_id: Any) -> str:
    return "msg_" + (str(chat_id).removeprefix("chatcmpl-") if chat_id else uuid.uuid4().hex[:24])


def stop_reason(finish: str | None, matched: Any, request: MessagesRequest) -> tuple[str | None, str | None]:
    """(stop_reason, stop_sequence). ``matched`` is what the upstream says stopped it (vLLM's ``stop_reason``)."""
    if finish is None:
        return None, None
    if finish == "stop" and isinstance(matched, str) and matched in request.stop_sequences:
        return "stop_sequence", matched
    return _STOP.get(finish, "end_turn"), None


def usage(chat_usage: Any) -> dict[str, int]:
    """Anthropic's usage: ``input_tokens`` excludes the cache reads and writes reported beside it."""
    tokens = normalise(chat_usage) if isinstance(chat_usage, dict) else None
    if tokens is None:
        return {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0}
    return {"input_tokens": tokens.raw_input, "output_tokens": tokens.output,
            "cache_creation_input_tokens": tokens.cache_write, "cache_read_input_tokens": tokens.cache_read}


def tool_input(arguments: Any) -> Any:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return {"_raw_arguments": arguments}  # the model wrote something that is not JSON; show it, not lose it
    return value if isinstance(value, dict) else {"value": value}


def _thinking_blocks(message: dict[str, Any], request: MessagesRequest) -> list[dict[str, Any]]:
    if not request.thinking:
        return []
    blocks = [b for b in message.get("thinking_blocks") or () if isinstance(b, dict)
              and b.get("type") in ("thinking", "redacted_thinking")]
    if blocks:
        return blocks
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return [{"type": "thinking", "thinking": reasoning, "signature": ""}] if reasoning else []


def render(completion: dict[str, Any], request: MessagesRequest) -> dict[str, Any]:
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = _thinking_blocks(message, request)
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        content.append({"type": "tool_use", "id": call.get("id") or "toolu_" + uuid.uuid4().hex[:24],
                        "name": function.get("name") or "", "input": tool_input(function.get("arguments"))})
    reason, sequence = stop_reason(choice.get("finish_reason"), choice.get("stop_reason"), request)
    return {"id": message_id(completion.get("id")), "type": "message", "role": "assistant",
            "model": request.model or completion.get("model") or "", "content": content,
            "stop_reason": reason, "stop_sequence": sequence, "usage": usage(completion.get("usage"))}


class EventStream:
    """Chat chunks in, Anthropic events out; one open content block at a time, indices in order."""

    def __init__(self, request: MessagesRequest) -> None:
        self._request = request
        self._index = -1
        self._open: str | None = None  # "thinking", "text" or "tool:<chat index>"
        self._finish: str | None = None
        self._matched: Any = None
        self._usage: Any = None

    async def events(self, chunks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
        started = False
        async for chunk in chunks:
            if not started:
                started = True
                yield self._start(chunk)
                yield event("ping", {"type": "ping"})
            if chunk.get("usage"):
                self._usage = chunk["usage"]
            for choice in chunk.get("choices") or ():
                if choice.get("index", 0) != 0:
                    continue
                for data in self._delta(choice):
                    yield data
        if not started:
            yield self._start({})
        for data in self._close():
            yield data
        reason, sequence = stop_reason(self._finish or "stop", self._matched, self._request)
        yield event("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": reason, "stop_sequence": sequence},
                                      "usage": usage(self._usage)})
        yield event("message_stop", {"type": "message_stop"})

    def _start(self, chunk: dict[str, Any]) -> bytes:
        return event("message_start", {"type": "message_start", "message": {
            "id": message_id(chunk.get("id")), "type": "message", "role": "assistant",
            "model": self._request.model or chunk.get("model") or "", "content": [], "stop_reason": None,
            "stop_sequence": None, "usage": usage(None)}})

    def _begin(self, kind: str, block: dict[str, Any]) -> Iterator[bytes]:
        yield from self._close()
        self._index += 1
        self._open = kind
        yield event("content_block_start", {"type": "content_block_start", "index": self._index,
                                            "content_block": block})

    def _close(self) -> Iterator[bytes]:
        if self._open is not None:
            self._open = None
            yield event("content_block_stop", {"type": "content_block_stop", "index": self._index})

    def _emit(self, delta: dict[str, Any]) -> bytes:
        return event("content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta})

    def _delta(self, choice: dict[str, Any]) -> Iterator[bytes]:
        delta = choice.get("delta") or {}
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning and self._request.thinking:
            if self._open != "thinking":
                yield from self._begin("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            yield self._emit({"type": "thinking_delta", "thinking": reasoning})
        for block in delta.get("thinking_blocks") or ():
            if (self._request.thinking and isinstance(block, dict) and block.get("signature")
                    and self._open == "thinking"):
                yield self._emit({"type": "signature_delta", "signature": block["signature"]})
        text = delta.get("content")
        if isinstance(text, str) and text:
            if self._open != "text":
                yield from self._begin("text", {"type": "text", "text": ""})
            yield self._emit({"type": "text_delta", "text": text})
        for call in delta.get("tool_calls") or ():
            kind = f"tool:{call.get('index', 0)}"
            function = call.get("function") or {}
            if self._open != kind:
                yield from self._begin(kind, {"type": "tool_use",
                                              "id": call.get("id") or "toolu_" + uuid.uuid4().hex[:24],
                                              "name": function.get("name") or "", "input": {}})
            if function.get("arguments"):
                yield self._emit({"type": "input_json_delta", "partial_json": function["arguments"]})
        if choice.get("finish_reason"):
            self._finish = choice["finish_reason"]
            self._matched = choice.get("stop_reason")
