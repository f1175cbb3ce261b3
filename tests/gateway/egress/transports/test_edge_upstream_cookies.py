"""The edge upstream's one pooled HTTP client serves every session and every tenant: a cookie an upstream (or a
proxy in front of it) sets must not ride along on anyone's next request. (Named by host name: aiohttp keeps no
cookies from a bare IP address anyway.)"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway.config.settings import EdgeSettings
from gateway.egress.transports.openai_http import OpenAIHTTPUpstream
from tests.fakes.threaded import ThreadedServer

COMPLETION = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


async def test_a_cookie_the_upstream_sets_is_never_sent_back() -> None:
    cookies: list[str | None] = []

    async def chat(request: Request) -> JSONResponse:
        cookies.append(request.headers.get("cookie"))
        response = JSONResponse(COMPLETION)
        response.set_cookie("route", "tenant-a-session")
        return response

    server = ThreadedServer(Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])).start()
    upstream = OpenAIHTTPUpstream(EdgeSettings(base_url=server.url.replace("127.0.0.1", "localhost") + "/v1", model="m"))
    try:
        for who in ("tenant a", "tenant b"):
            await upstream.complete({"model": "m", "messages": [{"role": "user", "content": who}]})
    finally:
        await upstream.aclose()
        server.stop()
    assert cookies == [None, None]
