"""The bare relay ``benchmarks.cpu`` reads the gateway against: the same stub relayed by the stack the gateway stands
on and nothing else — uvicorn, one Starlette route, one aiohttp session — the request's body posted on as it came,
the upstream's bytes sent back (a stream through Starlette's ``StreamingResponse``). What the gateway costs above it
is the gateway's own work."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


def bare_app(upstream: str) -> Starlette:
    """``upstream``: the stub's base URL (``…/v1``)."""
    url = upstream.rstrip("/") + "/chat/completions"
    holder: dict[str, aiohttp.ClientSession] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        holder["session"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        try:
            yield
        finally:
            await holder["session"].close()

    async def relay(request: Request) -> Response:
        body = await request.body()
        upstream_response = await holder["session"].post(url, data=body,
                                                         headers={"content-type": "application/json"})
        if upstream_response.content_type != "text/event-stream":
            async with upstream_response:
                return Response(await upstream_response.read(), status_code=upstream_response.status,
                                media_type="application/json")

        async def pieces() -> AsyncIterator[bytes]:
            async with upstream_response:
                async for piece in upstream_response.content.iter_any():
                    yield piece

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", relay, methods=["POST"])], lifespan=lifespan)
