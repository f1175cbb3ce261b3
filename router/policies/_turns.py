"""One client answer made of several upstream turns (advisor consultations, a delegation).

``edge_turn`` gives a turn as chunks whether the client streams or not; ``Turn`` relays a turn's text to the
client as it comes while holding its tool calls back until the turn ends (so the gateway can hide its own
tools); ``Composer`` keeps the client's stream one coherent completion: one id, one role, one finish, and
the usage of every turn added up.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from router.channels import Channel
from router.chat_shapes import completion_to_chunks, merge_tool_call_deltas


async def turn_chunks(channel: Channel, body: dict[str, Any], *, stream: bool,
                      purpose: str = "step") -> AsyncIterator[dict[str, Any]]:
    """A turn on ``channel`` as chunks: a real stream when the client streams, else one completion replayed."""
    if stream:
        async for chunk in channel.stream(body, purpose=purpose):
            yield chunk
        return
    response = await channel.complete(body, purpose=purpose)
    for chunk in completion_to_chunks(response):
        yield chunk


def _add_usage(total: dict[str, Any], usage: Mapping[str, Any]) -> None:
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(key)
        if isinstance(value, int):
            total[key] = total.get(key, 0) + value
    details = usage.get("prompt_tokens_details")
    if isinstance(details, Mapping) and isinstance(details.get("cached_tokens"), int):
        into = total.setdefault("prompt_tokens_details", {"cached_tokens": 0})
        into["cached_tokens"] += details["cached_tokens"]


class Composer:
    def __init__(self) -> None:
        self._head: dict[str, Any] | None = None
        self._role_sent = False
        self._usage: dict[str, Any] = {}
        self._text_sent = False
        self._turn_text = False

    def begin_turn(self) -> None:
        """A new upstream turn starts: its text is set off from the earlier turns' text by a blank line."""
        self._turn_text = False

    def _base(self, chunk: Mapping[str, Any]) -> dict[str, Any]:
        if self._head is None:
            self._head = {"id": chunk.get("id") or "chatcmpl-ecgw", "object": "chat.completion.chunk",
                          "created": chunk.get("created") or int(time.time()), "model": chunk.get("model") or ""}
        return dict(self._head)

    def relay(self, chunk: Mapping[str, Any]) -> dict[str, Any] | None:
        """``chunk`` as part of the composed stream, or None when it carries nothing the client needs yet
        (usage, a repeated role, a turn's finish)."""
        base = self._base(chunk)
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            _add_usage(self._usage, usage)
        choices = []
        for choice in chunk.get("choices") or ():
            delta = dict(choice.get("delta") or {})
            if "role" in delta:
                if self._role_sent:
                    delta.pop("role")
                    if delta.get("content") == "":
                        delta.pop("content")
                self._role_sent = True
            text = delta.get("content")
            if isinstance(text, str) and text:
                if self._text_sent and not self._turn_text:
                    delta["content"] = "\n\n" + text
                self._text_sent = self._turn_text = True
            if not delta and not choice.get("logprobs"):
                continue
            choices.append({"index": choice.get("index", 0), "delta": delta,
                            "logprobs": choice.get("logprobs"), "finish_reason": None})
        if not choices:
            return None
        return {**base, "choices": choices}

    def tool_calls(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Chunks that hand ``calls`` (complete tool calls) to the client, indexed from 0."""
        base = self._base({})
        out = []
        for position, call in enumerate(calls):
            function = call.get("function") or {}
            out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{
                "index": position, "id": call.get("id"), "type": "function",
                "function": {"name": function.get("name"), "arguments": function.get("arguments") or ""},
            }]}, "logprobs": None, "finish_reason": None}]})
        return out

    def finish(self, reason: str | None) -> list[dict[str, Any]]:
        base = self._base({})
        out = []
        if not self._role_sent:
            out.append({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                             "logprobs": None, "finish_reason": None}]})
            self._role_sent = True
        out.append({**base, "choices": [{"index": 0, "delta": {}, "logprobs": None,
                                         "finish_reason": reason or "stop"}]})
        if self._usage:
            out.append({**base, "choices": [], "usage": dict(self._usage)})
        return out


class Turn:
    """Reads one upstream turn: relays its text through a ``Composer`` and keeps its tool calls."""

    def __init__(self) -> None:
        self.content = ""
        self.finish_reason: str | None = None
        self._calls: dict[int, dict[str, Any]] = {}

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [self._calls[i] for i in sorted(self._calls)]

    async def relay(self, chunks: AsyncIterator[dict[str, Any]], composer: Composer) -> AsyncIterator[dict[str, Any]]:
        composer.begin_turn()
        async for chunk in chunks:
            stripped_choices = []
            for choice in chunk.get("choices") or ():
                delta = dict(choice.get("delta") or {})
                calls = delta.pop("tool_calls", None)
                merge_tool_call_deltas(self._calls, calls)
                if isinstance(delta.get("content"), str):
                    self.content += delta["content"]
                if choice.get("finish_reason"):
                    self.finish_reason = choice["finish_reason"]
                stripped_choices.append({**choice, "delta": delta})
            out = composer.relay({**chunk, "choices": stripped_choices})
            if out is not None:
                yield out
