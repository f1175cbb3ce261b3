"""What one upstream call costs the gateway's process in CPU, by transport, on the same benchmark upstream
(``benchmarks/upstream.py``, in a process of its own): the cloud door's two transports behind the provider boundary
(litellm, and the own OpenAI-compatible one of ``cloud.transport: openai``) and the edge's transport (aiohttp). Calls run ``concurrency``
at a time in this process's event loop; CPU time covers every thread of the process (litellm's own included).

    python -m benchmarks.transport                # µs of CPU per call, JSON and streamed, every transport
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from benchmarks.contenders import start_upstream
from benchmarks.workload import small_request


class Transport(Protocol):
    async def complete(self, body: dict[str, Any]) -> dict[str, Any]: ...

    def stream(self, body: dict[str, Any]) -> Any: ...

    async def aclose(self) -> None: ...


async def _drain(transport: Transport, body: dict[str, Any]) -> None:
    async for _ in transport.stream(body):
        pass


async def _cpu_per_call(call: Callable[[], Awaitable[Any]], *, calls: int, concurrency: int) -> float:
    """µs of the process's CPU per call, ``calls`` of them, ``concurrency`` at a time."""
    left = calls

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await call()

    cpu0 = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return round((time.process_time() - cpu0) / calls * 1e6, 1)


async def _measure(args: argparse.Namespace, workdir: Path) -> dict[str, dict[str, float]]:
    from gateway.cli.offline import prepare_offline_environment
    from gateway.config.settings import CloudSettings, EdgeSettings
    from gateway.egress.transports.boundary import ProviderBoundary
    from gateway.egress.transports.cloud import LiteLLMUpstream
    from gateway.egress.transports.cloud_http import OpenAIWireCloud
    from gateway.egress.transports.openai_http import OpenAIHTTPUpstream
    from gateway.egress.transports.provider_request import RequestShape

    prepare_offline_environment()
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    upstream = start_upstream(workdir)
    try:
        transports: dict[str, Transport] = {
            "ecgw-openai-http": OpenAIHTTPUpstream(EdgeSettings(base_url=upstream.url, model="bench")),
            "litellm": ProviderBoundary(LiteLLMUpstream(CloudSettings(model="openai/bench", api_base=upstream.url,
                                                                      api_key_env=None)), RequestShape(())),
            "ecgw-cloud-openai": ProviderBoundary(OpenAIWireCloud(CloudSettings(
                model="openai/bench", api_base=upstream.url, api_key_env=None, transport="openai")), RequestShape(())),
        }
        body = dict(small_request(), model="bench")
        out: dict[str, dict[str, float]] = {}
        for name, transport in transports.items():
            def complete(t: Transport = transport) -> Awaitable[Any]:
                return t.complete(body)

            def stream(t: Transport = transport) -> Awaitable[None]:
                return _drain(t, {**body, "stream": True})

            result: dict[str, float] = {}
            for kind, call in (("json", complete), ("stream", stream)):
                await _cpu_per_call(call, calls=args.warmup, concurrency=args.concurrency)
                result[f"{kind}_cpu_us_per_call"] = await _cpu_per_call(call, calls=args.calls,
                                                                        concurrency=args.concurrency)
            out[name] = result
            await transport.aclose()
        return out
    finally:
        upstream.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ecgw-transport-") as tmp:
        result = asyncio.run(_measure(args, Path(tmp)))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
