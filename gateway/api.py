"""What every HTTP route shares (the API key check, the body limit), and the small routes: models, health,
readiness. The model-calling surfaces live in ``gateway.surfaces``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.errors import ClientError, error_response
from gateway.jsonio import dumps
from gateway.service import Services
from gateway.tenancy import Identity


def authenticate(services: Services, request: Request) -> Identity:
    """The caller; raises 401 when keys are configured and this one is not among them."""
    return services.tenancy.authenticate(request.headers)


def guarded(services: Services, handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` behind the gateway's API keys, with OpenAI-shaped errors for bad keys; the caller's identity is
    ``request.state.identity``."""

    async def endpoint(request: Request) -> Response:
        try:
            request.state.identity = authenticate(services, request)
        except ClientError as exc:
            return error_response(exc.status, exc.message, exc.type, code=exc.code)
        return await handler(request)

    return endpoint


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ClientError(413, f"The request body is {declared} bytes; the limit is {limit} "
                               "(server.max_body_bytes).", code="request_too_large")
    chunks: list[bytes] = []
    size = 0
    async for piece in request.stream():
        size += len(piece)
        if size > limit:
            raise ClientError(413, f"The request body is over the limit of {limit} bytes "
                                   "(server.max_body_bytes).", code="request_too_large")
        chunks.append(piece)
    return b"".join(chunks)


async def list_models(request: Request) -> Response:
    services: Services = request.app.state.services
    data = [{"id": model_id, "object": "model", "created": 0, "owned_by": "ecgw"}
            for model_id in services.chooser.model_ids()]
    listing: dict[str, Any] = {"object": "list", "data": data}
    if request.headers.get("anthropic-version"):  # Anthropic's SDK: its own fields beside OpenAI's
        for model in data:
            model.update(type="model", display_name=model["id"], created_at="1970-01-01T00:00:00Z")
        listing.update(has_more=False, first_id=data[0]["id"] if data else None,
                       last_id=data[-1]["id"] if data else None)
    return Response(dumps(listing), media_type="application/json")


async def healthz(request: Request) -> Response:
    return Response(dumps({"status": "ok"}), media_type="application/json")


async def readyz(request: Request) -> Response:
    services: Services = request.app.state.services
    checks: dict[str, Any] = {}
    ok = True
    for name, (ready, detail) in (await services.doors.ready()).items():
        checks[name] = {"ready": ready, "detail": detail}
        ok = ok and ready
    return Response(dumps({"status": "ready" if ok else "not ready", "upstreams": checks}),
                    status_code=200 if ok else 503, media_type="application/json")
