"""A fast OpenAI chat upstream for benchmarks: a fixed short completion, streaming or not, with usage.
Raw ASGI (no framework) so that the upstream costs as little as possible; every contender calls the same one.
A stream whose request says ``"bench_hold_s": S`` holds S seconds after its first word (``benchmarks.memory``'s
slow streams: the gateway passes fields it does not know on to the edge).

    python -m benchmarks.upstream --port 9001
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

WORDS = ["The", " answer", " is", " forty", "-two", "."]
USAGE = {"prompt_tokens": 50, "completion_tokens": len(WORDS), "total_tokens": 50 + len(WORDS),
         "prompt_tokens_details": {"cached_tokens": 32}}
COMPLETION = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(WORDS)}, "logprobs": None,
                 "finish_reason": "stop"}],
    "usage": USAGE}).encode()


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return b"data: " + json.dumps({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1,
                                   "model": "bench", "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                                  "finish_reason": finish}]}).encode() + b"\n\n"


STREAM = ([_chunk({"role": "assistant", "content": ""})] + [_chunk({"content": w}) for w in WORDS]
          + [_chunk({}, "stop")])
USAGE_CHUNK = b"data: " + json.dumps({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1,
                                      "model": "bench", "choices": [], "usage": USAGE}).encode() + b"\n\n"
MODELS = json.dumps({"object": "list", "data": [{"id": "bench", "object": "model", "owned_by": "bench"}]}).encode()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["method"] == "GET":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": MODELS})
        return
    request = json.loads(body or b"{}")
    if not request.get("stream"):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": COMPLETION})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    hold = float(request.get("bench_hold_s") or 0)
    for n, piece in enumerate(STREAM):
        await send({"type": "http.response.body", "body": piece, "more_body": True})
        if n == 1 and hold > 0:  # after its first word: the gateway has begun the client's stream
            await asyncio.sleep(hold)
    if (request.get("stream_options") or {}).get("include_usage"):
        await send({"type": "http.response.body", "body": USAGE_CHUNK, "more_body": True})
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


def serve(asgi: Any) -> None:
    """``asgi`` on 127.0.0.1 at the ``--port`` of the command line, quietly (this stub's main, and the cloud stub's)."""
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(asgi, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


def main() -> None:
    serve(app)


if __name__ == "__main__":
    main()
