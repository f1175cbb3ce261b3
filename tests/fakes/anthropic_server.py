"""A scriptable double of Anthropic's Messages API (``POST /v1/messages``), for a cloud model that speaks Anthropic
natively (litellm ``anthropic/…``). It answers in the real wire format — a message object, or the event sequence
with ``event:`` lines — with thinking blocks and their signatures, and usage that splits the prompt the way
Anthropic does: ``input_tokens`` (uncached), ``cache_read_input_tokens``, ``cache_creation_input_tokens``. It
records every request body and its headers."""

from __future__ import annotations

import json
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class AnthropicReply:
    text: str = "OK"
    thinking: str | None = None
    signature: str = "c2lnLWZyb20tYW50aHJvcGlj"
    input_tokens: int = 10
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 5


class AnthropicServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._script: deque[AnthropicReply] = deque()
        self.app = Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"])])

    def script(self, *replies: AnthropicReply) -> None:
        self._script.extend(replies)

    def reset(self) -> None:
        self._script.clear()
        self.requests.clear()
        self.headers.clear()

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        reply = self._script.popleft() if self._script else AnthropicReply()
        content: list[dict[str, Any]] = []
        if reply.thinking is not None:
            content.append({"type": "thinking", "thinking": reply.thinking, "signature": reply.signature})
        content.append({"type": "text", "text": reply.text})
        usage = {"input_tokens": reply.input_tokens, "cache_read_input_tokens": reply.cache_read,
                 "cache_creation_input_tokens": reply.cache_write, "output_tokens": reply.output_tokens}
        message = {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
                   "model": body.get("model"), "content": content, "stop_reason": "end_turn",
                   "stop_sequence": None, "usage": usage}
        if body.get("stream"):
            return StreamingResponse(self._events(message), media_type="text/event-stream")
        return JSONResponse(message)

    @staticmethod
    def _events(message: dict[str, Any]) -> Iterator[bytes]:
        def event(name: str, data: dict[str, Any]) -> bytes:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

        usage = message["usage"]
        start = {**message, "content": [], "stop_reason": None,
                 "usage": {**usage, "output_tokens": 1}}
        yield event("message_start", {"type": "message_start", "message": start})
        yield event("ping", {"type": "ping"})
        for index, block in enumerate(message["content"]):
            if block["type"] == "thinking":
                yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": {"type": "thinking", "thinking": "",
                                                                      "signature": ""}})
                yield event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "thinking_delta", "thinking": block["thinking"]}})
                yield event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "signature_delta", "signature": block["signature"]}})
            else:
                yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": {"type": "text", "text": ""}})
                yield event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "text_delta", "text": block["text"]}})
            yield event("content_block_stop", {"type": "content_block_stop", "index": index})
        yield event("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                      "usage": {"output_tokens": usage["output_tokens"]}})
        yield event("message_stop", {"type": "message_stop"})
