"""A server that answers every request with a 307 to another URL (307 keeps the method and the body)."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import Route


def redirecting(to: str) -> Any:
    """The ASGI app; ``to``: the server whose ``/v1/chat/completions`` every answer points at."""

    async def moved(request: Request) -> RedirectResponse:
        return RedirectResponse(to + "/v1/chat/completions", status_code=307)

    return Starlette(routes=[Route("/{path:path}", moved, methods=["GET", "POST"])])
