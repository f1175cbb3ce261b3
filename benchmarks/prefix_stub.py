"""An OpenAI chat stub with a real prefix memory, as one edge replica of ``benchmarks.fleet``: ``cached_tokens`` is
the longest prefix (in whole 16-token blocks, as vLLM's block size) this process has seen before under the same
``cache_salt`` — computed, not invented. Streams send a few chunks a little apart, so a replica killed mid-run has
streams in flight.

    python -m benchmarks.prefix_stub --port 9101 --name a
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from benchmarks.prefix_cache import PrefixCache

WORDS = ["Read", " the", " file", " and", " run", " the", " tests", "."]
_seen = PrefixCache()
_stats = {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0}
_name = "stub"


def _tokens(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for message in body.get("messages") or ():
        out.append(f"<{message.get('role')}>")
        content = message.get("content")
        out.extend(str(content or "").split())
    return out


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None) -> bytes:
    event: dict[str, Any] = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 1, "model": _name,
                             "choices": [] if usage else [{"index": 0, "delta": delta, "logprobs": None,
                                                           "finish_reason": finish}]}
    if usage:
        event["usage"] = usage
    return b"data: " + json.dumps(event).encode() + b"\n\n"


async def _body(receive: Any) -> bytes:
    raw = b""
    while True:
        message = await receive()
        raw += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return raw


async def _send_json(send: Any, status: int, value: Any) -> None:
    payload = json.dumps(value).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": payload})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    path = scope["path"]
    if path.endswith("/models"):
        await _send_json(send, 200, {"object": "list", "data": [{"id": _name, "object": "model"}]})
        return
    if path.endswith("/stats"):
        await _send_json(send, 200, _stats)
        return
    if path.endswith("/reset"):
        _seen.clear()
        _stats.update(requests=0, prompt_tokens=0, cached_tokens=0)
        await _send_json(send, 200, {"ok": True})
        return
    body = json.loads(await _body(receive))
    prompt = _tokens(body)
    cached = _seen.cached(prompt, body.get("cache_salt"))
    _stats["requests"] += 1
    _stats["prompt_tokens"] += len(prompt)
    _stats["cached_tokens"] += cached
    usage = {"prompt_tokens": len(prompt), "completion_tokens": len(WORDS), "total_tokens": len(prompt) + len(WORDS),
             "prompt_tokens_details": {"cached_tokens": cached}}
    if not body.get("stream"):
        await _send_json(send, 200, {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": 1, "model": _name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(WORDS)}, "logprobs": None,
                         "finish_reason": "stop"}], "usage": usage})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": _chunk({"role": "assistant", "content": ""}), "more_body": True})
    for word in WORDS:
        await asyncio.sleep(0.03)
        await send({"type": "http.response.body", "body": _chunk({"content": word}), "more_body": True})
    tail = _chunk({}, "stop") + _chunk({}, usage=usage) + b"data: [DONE]\n\n"
    await send({"type": "http.response.body", "body": tail})


def main() -> None:
    import uvicorn

    global _name
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="stub")
    args = parser.parse_args()
    _name = args.name
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
