"""A cloud provider for ``benchmarks.faults`` whose health can be switched while it runs: ``benchmarks.upstream``'s
fixed completion (streamed or not, with usage) in mode ``ok``; every chat request answered 429 or 500 in those
modes; in mode ``hang`` accepted and never answered (held until the client gives up). ``POST /mode`` with
``{"mode": ...}`` switches it; ``GET /stats`` counts the chat requests each mode saw, and (``raw``) those whose body
held an address at ``RAW`` as a client sent it: what a gateway must never let leave.

    python -m benchmarks.cloud_stub --port 9201
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

from benchmarks import upstream

MODES = ("ok", "429", "500", "hang")
RAW = "@example.com"  # the domain of the addresses benchmarks.faults' sessions name
_state: dict[str, Any] = {"mode": "ok", "seen": {m: 0 for m in MODES}, "raw": 0}


async def _body(receive: Any) -> bytes:
    raw = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return raw
        raw += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return raw


async def _json(send: Any, status: int, value: Any) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(value).encode()})


async def _replay(raw: bytes) -> Any:
    """A ``receive`` that hands ``upstream.app`` the body this stub already read."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return receive


async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        await upstream.app(dict(scope), receive, send)  # lifespan
        return
    path, raw = scope["path"], await _body(receive)
    if path == "/mode":
        mode = json.loads(raw)["mode"]
        if mode not in MODES:
            await _json(send, 400, {"error": f"mode must be one of {', '.join(MODES)}"})
            return
        _state["mode"] = mode
        await _json(send, 200, {"mode": mode})
        return
    if path == "/stats":
        await _json(send, 200, _state)
        return
    mode = _state["mode"] if path.endswith("/chat/completions") else "ok"
    if path.endswith("/chat/completions"):
        _state["seen"][mode] += 1
        _state["raw"] += RAW.encode() in raw
    if mode == "hang":
        while (await receive())["type"] != "http.disconnect":
            pass
        return
    if mode in ("429", "500"):
        kind = "rate_limit_exceeded" if mode == "429" else "server_error"
        await _json(send, int(mode), {"error": {"message": f"stub in mode {mode}", "type": kind, "code": kind}})
        return
    await upstream.app(dict(scope), await _replay(raw), send)


def main() -> None:
    upstream.serve(app)


if __name__ == "__main__":
    main()
