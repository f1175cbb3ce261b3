"""Server-sent events as OpenAI streams them: ``data: {json}\n\n`` lines, closed by ``data: [DONE]``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from gateway.jsonio import dumps, loads

DONE = b"data: [DONE]\n\n"


def encode(chunk: dict[str, Any]) -> bytes:
    return b"data: " + dumps(chunk) + b"\n\n"


async def parse(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """Chunks from an upstream's SSE lines; stops at ``[DONE]``; an ``error`` event is yielded as is."""
    async for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data:
            continue
        if data == "[DONE]":
            return
        yield loads(data)
