"""Server-sent events as OpenAI streams them: ``data: {json}\n\n`` lines, closed by ``data: [DONE]``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from accounting.errors import EcgwError
from gateway.http.jsonio import dumps, loads

DONE = b"data: [DONE]\n\n"


def encode(chunk: dict[str, Any]) -> bytes:
    return b"data: " + dumps(chunk) + b"\n\n"


def event(name: str, data: dict[str, Any]) -> bytes:
    """A named event (``event:`` line, then its data), as the Responses and Messages streams send them."""
    return b"event: " + name.encode() + b"\ndata: " + dumps(data) + b"\n\n"


async def lines(pieces: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Complete lines from arbitrary byte pieces, however long a line is."""
    buffer = b""
    async for piece in pieces:
        buffer += piece
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                break
            yield buffer[:end].rstrip(b"\r")
            buffer = buffer[end + 1:]
    if buffer:
        yield buffer


class Unfinished(EcgwError):
    """The upstream's body ended before its ``data: [DONE]``."""


def failure(chunk: dict[str, Any]) -> str | None:
    """The message of an upstream's mid-stream ``error`` event (OpenAI's shape, or a bare string), else None."""
    if "error" not in chunk or "choices" in chunk:
        return None
    err = chunk["error"]
    return str(err.get("message") if isinstance(err, dict) else err)


def data(line: bytes) -> bytes | None:
    """What an SSE line carries: a ``data:`` line's payload (``[DONE]`` included), None for any other line or an
    empty payload."""
    if not line.startswith(b"data:"):
        return None
    return line[5:].strip() or None


async def parse(source: AsyncIterator[bytes]) -> AsyncIterator[dict[str, Any]]:
    """Chunks from an upstream's SSE lines; stops at ``[DONE]``; an ``error`` event is yielded as is. A body that
    ends without ``[DONE]`` raises ``Unfinished`` after its last chunk (the caller decides whether that broke)."""
    async for line in source:
        if (payload := data(line)) is None:
            continue
        if payload == b"[DONE]":
            return
        yield loads(payload)
    raise Unfinished
