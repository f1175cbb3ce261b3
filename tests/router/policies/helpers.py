"""Driving a running gateway with the openai SDK, streaming or not, and reading back route and purposes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import openai

from accounting.calls import MemoryMeter
from tests.conftest import RunningGateway

TOOLS = [
    {"type": "function", "function": {"name": "read_file", "description": "read a file",
                                      "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                     "required": ["path"]}}},
    {"type": "function", "function": {"name": "write_file", "description": "write a file",
                                      "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
]


@dataclass
class Answer:
    content: str | None
    tool_calls: list[tuple[str, str]]  # (name, arguments)
    finish_reason: str | None
    headers: dict[str, str]
    usage: Any = None
    chunks: list[Any] = field(default_factory=list)


def client(gw: RunningGateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key="test", max_retries=0, timeout=20)


def ask(gw: RunningGateway, messages: list[dict[str, Any]], *, stream: bool, session: str = "s1",
        policy: str | None = None, arm: str | None = None, tools: list[dict[str, Any]] | None = None,
        **extra: Any) -> Answer:
    headers = {"X-Session-Id": session}
    if policy:
        headers["X-ECGW-Policy"] = policy
    if arm:
        headers["X-ECGW-Arm"] = arm
    kwargs: dict[str, Any] = {"model": "agent-model", "messages": messages, "extra_headers": headers, **extra}
    if tools:
        kwargs["tools"] = tools
    raw = client(gw).chat.completions.with_raw_response.create(stream=stream, **kwargs)
    hdrs = {k.lower(): v for k, v in raw.headers.items()}
    if not stream:
        done: Any = raw.parse()
        choice = done.choices[0]
        calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or ()]
        return Answer(choice.message.content, calls, choice.finish_reason, hdrs, done.usage)
    content: str | None = None
    calls_by_index: dict[int, list[str]] = {}
    finish = None
    usage = None
    chunks = []
    parsed: Any = raw.parse()
    for chunk in parsed:
        chunks.append(chunk)
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                content = (content or "") + choice.delta.content
            for call in choice.delta.tool_calls or ():
                slot = calls_by_index.setdefault(call.index, ["", ""])
                if call.function and call.function.name:
                    slot[0] += call.function.name
                if call.function and call.function.arguments:
                    slot[1] += call.function.arguments
            if choice.finish_reason:
                finish = choice.finish_reason
    calls = [(n, a) for n, a in (calls_by_index[i] for i in sorted(calls_by_index))]
    return Answer(content, calls, finish, hdrs, usage, chunks)


def purposes(meter: MemoryMeter) -> list[tuple[str, str]]:
    """(side, purpose) of every metered call, in order."""
    return [(c.side, c.purpose) for c in meter.calls]


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": text}]


def start_policy(start: Any, policy: str, knobs: dict[str, Any] | None = None, **overrides: Any) -> RunningGateway:
    """A gateway whose default policy is ``policy``, with its own in-memory session state."""
    settings: dict[str, Any] = {"policy": {"default": policy, "knobs": {policy: knobs or {}}},
                                "sessions": {"store": "memory"}}
    settings.update(overrides)
    gw: RunningGateway = start(**settings)
    return gw
