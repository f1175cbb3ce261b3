"""What every route shares, as one ASGI middleware: a request id (``request.state.request_id``, echoed as
``x-ecgw-request-id`` on every response, refusals included), the body limit (``server.max_body_bytes``) on every
request, and the API key on every route but the open ones (the caller's ``Identity`` lands in
``request.state.identity``).
Refusals come in the shape the route's clients read: Anthropic's for ``/v1/messages``, OpenAI's everywhere else.
Health, readiness and ``/metrics`` are open; the dashboard (``/ui``) signs in its own admins."""

from __future__ import annotations

import os
from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.http.errors import ClientError
from gateway.http.failures import Failure, client_failure
from gateway.live.snapshot import Configuration

OPEN = ("/healthz", "/readyz", "/metrics", "/ui")
REQUEST_ID_HEADER = "x-ecgw-request-id"
Render = Callable[[str, Failure], Response]  # (path, failure) → the error response for that route's clients


def too_large(limit: int, declared: int | None = None) -> ClientError:
    said = f"The request body is {declared} bytes; the limit is {limit}" if declared is not None else (
        f"The request body is over the limit of {limit} bytes")
    return ClientError(413, f"{said} (server.max_body_bytes).", code="request_too_large")


class Gatekeeper:
    def __init__(self, app: ASGIApp, *, config: Configuration, max_body_bytes: int, render: Render) -> None:
        self._app = app
        self._config = config
        self._limit = max_body_bytes
        self._render = render

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path: str = scope["path"]
        headers = Headers(scope=scope)
        request_id = new_request_id()
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        send = _with_request_id(send, request_id)
        with self._config.pinned() as snapshot:  # the whole request, its stream included, on one snapshot
            try:
                declared = headers.get("content-length")
                if declared and declared.isdigit() and int(declared) > self._limit:
                    raise too_large(self._limit, int(declared))
                if not path.startswith(OPEN):
                    state["identity"] = await snapshot.tenancy.resolve(headers)
            except ClientError as exc:
                await self._render(path, client_failure(exc))(scope, receive, send)
                return
            await self._app(scope, self._limited(receive), send)

    def _limited(self, receive: Receive) -> Receive:
        """``receive`` that refuses a body growing past the limit (one sent without a Content-Length): the reader
        gets ``ClientError(413)``, which every handler maps to its clients' error shape."""
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self._limit:
                    raise too_large(self._limit)
            return message

        return limited


def new_request_id() -> str:
    return "req-" + os.urandom(10).hex()  # 80 random bits, as uuid4's first 20 hex digits, without a UUID built


def _with_request_id(send: Send, request_id: str) -> Send:
    """``send`` that names the request id on the response, unless the handler already did (the same id)."""
    name = REQUEST_ID_HEADER.encode()

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(key.lower() == name for key, _ in headers):
                message = {**message, "headers": [*headers, (name, request_id.encode())]}
        await send(message)

    return sending
