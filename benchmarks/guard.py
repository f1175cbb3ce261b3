"""``make bench``: what ``privacy.response_guard``'s stream hold-back costs in time to first byte.

A stub cloud streams an answer of 60 words, one word per event every ``--pace-ms`` (10 ms: ~100 tokens/s, a
cloud model's pace), the sensitive value near the end. Three gateways, served in this process on loopback with
``cloud-only`` and privacy on, differ only in ``privacy.response_guard.action``: ``off``, ``audit`` (scans when
the stream ends: no hold-back) and ``redact`` (holds back the trailing window: 64 characters by default). Each is
sent the same streamed chat request ``--requests`` times, one at a time, contenders alternating; reported: time to
the first content byte and to the end of the stream, p50 and p90.

    python -m benchmarks.guard [--requests 20] [--pace-ms 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import threading
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import uvicorn

from benchmarks.contenders import free_port
from benchmarks.results import append
from gateway.app import create_app
from gateway.cli.offline import prepare_offline_environment
from gateway.config.settings import load_settings

WORDS = [f"word{i} " for i in range(55)] + ["call ", "me ", "at ", "415-555-0199 ", "today."]


def stub_cloud(pace_s: float) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})

        async def event(delta: dict[str, Any], finish: str | None = None) -> None:
            data = {"id": "chatcmpl-guard", "object": "chat.completion.chunk", "created": 1, "model": "bench",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            await send({"type": "http.response.body", "body": b"data: " + json.dumps(data).encode() + b"\n\n",
                        "more_body": True})

        await event({"role": "assistant", "content": ""})
        for word in WORDS:
            await asyncio.sleep(pace_s)
            await event({"content": word})
        await event({}, "stop")
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    return app


class Served:
    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                     lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def gateway(cloud_url: str, action: str) -> Served:
    settings = load_settings(None, edge={"base_url": cloud_url + "/v1", "model": "bench", "launch": "never"},
                             cloud={"model": "openai/bench", "api_base": cloud_url + "/v1", "api_key_env": None},
                             database_url="sqlite://", policy={"default": "cloud-only"},
                             privacy={"layers": {"ner": False}, "response_guard": {"action": action}})
    return Served(create_app(settings))


def one(url: str) -> tuple[float, float, str]:
    body = {"model": "ecgw/cloud-only", "stream": True, "messages": [{"role": "user", "content": "Say something."}]}
    started = time.perf_counter()
    first, text = None, []
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=60) as response:
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            for choice in json.loads(line[6:]).get("choices") or ():
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    first = first or time.perf_counter()
                    text.append(piece)
    end = time.perf_counter()
    return ((first or end) - started) * 1000, (end - started) * 1000, "".join(text)


def _q(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=10)[int(q * 10) - 1] if len(values) > 1 else values[0]


def main(requests: int, pace_ms: float) -> str:
    prepare_offline_environment()  # litellm's tokenizer files from the package, not the network
    cloud = Served(stub_cloud(pace_ms / 1000))
    actions = ("off", "audit", "redact")
    gateways = {a: gateway(cloud.url, a) for a in actions}
    try:
        for a in actions:  # warm-up: litellm's first call, the detectors' first use
            one(gateways[a].url)
        ttfb: dict[str, list[float]] = {a: [] for a in actions}
        total: dict[str, list[float]] = {a: [] for a in actions}
        texts: dict[str, str] = {}
        for _ in range(requests):
            for a in actions:
                first, end, texts[a] = one(gateways[a].url)
                ttfb[a].append(first)
                total[a].append(end)
    finally:
        for served in (*gateways.values(), cloud):
            served.stop()
    assert "415-555-0199" not in texts["redact"] and "[INBOUND_PHONE_NUMBER]" in texts["redact"], texts["redact"]
    lines = [
        f"\n## Response guard: the stream hold-back in time to first byte ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        "`python -m benchmarks.guard`)\n",
        f"A stub cloud streams 60 words, one event every {pace_ms:g} ms; three in-process gateways (cloud-only, "
        f"privacy on) differ only in `privacy.response_guard.action`; {requests} streams each, alternating.\n",
        "| action | TTFB p50 ms | TTFB p90 ms | stream p50 ms | TTFB added vs off, p50 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    base = statistics.median(ttfb["off"])
    for a in actions:
        lines.append(f"| {a} | {statistics.median(ttfb[a]):.1f} | {_q(ttfb[a], 0.9):.1f} | "
                     f"{statistics.median(total[a]):.1f} | {statistics.median(ttfb[a]) - base:+.1f} |")
    load = os.getloadavg()[0]
    lines += ["", f"Load average at the end: {load:.1f} on {os.cpu_count()} cores (the figures include that load). "
                  "`redact` releases the first byte once 64 characters (the hold window) are in — here ~9 events "
                  "of the stub's pace; `audit` scans after the stream and adds nothing to the first byte."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--pace-ms", type=float, default=10.0)
    parser.add_argument("--no-write", action="store_true", help="print only; do not append to RESULTS.md")
    args = parser.parse_args()
    text = main(args.requests, args.pace_ms)
    print(text)
    if not args.no_write:
        append(text)
