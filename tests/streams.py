"""Reading a gateway's streamed answer in tests."""

from __future__ import annotations

import json
from typing import Any

import httpx


def sse_events(response: httpx.Response) -> list[tuple[str | None, Any]]:
    """Every event of an SSE body as (its ``event:`` name or None, its data parsed; ``"[DONE]"`` as the string)."""
    out: list[tuple[str | None, Any]] = []
    name: str | None = None
    for line in response.iter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
            out.append((name, data if data == "[DONE]" else json.loads(data)))
            name = None
    return out
