"""API surfaces: thin adapters between a client's wire format and the one step pipeline.

A surface parses its request into the chat-completions shape the pipeline runs, and renders the pipeline's
completion or chunk stream back into its own format (JSON or SSE) and its own error envelope. Everything else —
sessions, policy, privacy, metering, request metrics — is shared here (authentication and the body limit are
``gateway.routes.gatekeeper``'s, in front of every route)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from gateway.http.failures import Failure, classify
from gateway.state.tenancy import Identity
from gateway.surfaces.pipeline import Outcome, Started, StepPipeline
from router.chat_shapes import aclose
from router.spans import NO_SPAN, make_current


@dataclass
class Parsed:
    """A surface's request in the pipeline's terms: the chat-shaped body, the surface's own session header if it
    has one, and whatever the surface needs to render its answer (the original request, say)."""

    body: dict[str, Any]
    session_hint: str | None = None
    extra: Any = None

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))


class Surface(Protocol):
    relays: bool  # its stream is OpenAI's chat SSE as it is: an edge-only step may hand it the upstream's bytes

    def parse(self, raw: bytes, headers: Mapping[str, str]) -> Parsed:
        """Raises ``gateway.http.errors.ClientError`` naming the bad field."""
        ...

    async def render(self, completion: dict[str, Any], parsed: Parsed, started: Started) -> bytes:
        """The JSON body for a whole completion (``started``: the step that produced it)."""
        ...

    def stream(self, started: Started, parsed: Parsed) -> AsyncIterator[bytes]:
        """The SSE bytes for the step's chat chunk stream (``started.chunks()``), up to and including the
        surface's end-of-stream marker. (A relayed stream, for a surface that ``relays``, is the client's bytes
        already: the endpoint sends ``started.relayed`` itself.)"""
        ...

    def error(self, failure: Failure, headers: dict[str, str]) -> Response: ...

    def stream_error(self, failure: Failure, parsed: Parsed) -> bytes:
        """The SSE bytes for a failure mid-stream, after whatever ``stream`` already sent."""
        ...


class SurfaceEndpoint:
    """One surface's Starlette endpoint (``handle``)."""

    def __init__(self, surface: Surface, pipeline: StepPipeline) -> None:
        self._surface = surface
        self._pipeline = pipeline

    async def handle(self, request: Request) -> Response:
        request_id: str = request.state.request_id  # set by gateway.routes.gatekeeper, echoed on every response
        services = self._pipeline.services
        tracing = services.tracing
        if tracing.enabled:  # else NO_SPAN, already current (no URL built for attributes nobody records)
            span = tracing.request("ecgw.request", **{"ecgw.request_id": request_id,
                                                      "http.route": request.scope["path"]})
            make_current(span)
        else:
            span = NO_SPAN
        outcome = self._pipeline.begin(request_id, span)
        try:
            response = await self._handle(request, request_id, outcome)
        except ClientDisconnect:
            response = Response(status_code=499)
        except Exception as exc:
            failure = classify(exc, request_id)
            headers = {**failure.headers, "x-ecgw-request-id": request_id}
            if span.trace_id is not None:
                headers[services.settings.observability.trace_header] = span.trace_id
            response = self._surface.error(failure, headers)
        if not isinstance(response, StreamingResponse):  # a stream's request ends with its last byte
            self._pipeline.end(outcome, response.status_code, request.state.identity)
        return response

    async def _handle(self, request: Request, request_id: str, outcome: Outcome) -> Response:
        identity: Identity = request.state.identity  # set by gateway.routes.gatekeeper
        parsed = await self._parse(request, identity)
        started = await self._pipeline.start(request.headers, parsed.body, identity=identity, outcome=outcome,
                                             session_hint=parsed.session_hint, relay=self._surface.relays)
        if started.completion is not None:
            return Response(await self._surface.render(started.completion, parsed, started),
                            media_type="application/json", headers=started.headers)
        return EventStreamResponse(
            self._relay(started, parsed, request_id, outcome, identity),
            media_type="text/event-stream",
            headers={**started.headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def _relay(self, started: Started, parsed: Parsed, request_id: str, outcome: Outcome,
                     identity: Identity) -> AsyncIterator[bytes]:
        status = 499  # the client went away before the end
        try:
            if started.relayed is not None:  # already the client's bytes, [DONE] included
                yield started.relayed_first
                async for data in started.relayed:
                    yield data
            else:
                async for data in self._surface.stream(started, parsed):
                    yield data
            status = 200
        except Exception as exc:
            failure = classify(exc, request_id, mid_stream=True)
            status = failure.status
            yield self._surface.stream_error(failure, parsed)
        finally:
            if started.rest is not None:
                await aclose(started.rest)
            if started.relayed is not None:
                await aclose(started.relayed)
            self._pipeline.end(outcome, status, identity)

    # A step a surface's endpoint may extend (the Responses surface reads stored responses here).
    async def _parse(self, request: Request, identity: Identity) -> Parsed:
        return self._surface.parse(await read_body(request), request.headers)


async def read_body(request: Request) -> bytes:
    """The request's body, read from ``receive`` as ``Request.body`` does, less its generator and list (a step's
    body nearly always comes in one message), and kept where ``Request.body`` keeps it, so a later reader of the
    same request gets it instead of waiting on ``receive``. Every surface's step reads its body here."""
    chunks: list[bytes] = []
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            request._body = body
            return body


class EventStreamResponse(StreamingResponse):
    """Starlette's ``StreamingResponse`` without its anyio task group: under uvicorn's ASGI 2.3 Starlette runs the
    body in a task group beside a task listening for the disconnect, ~80 µs of CPU per stream. Here one plain task
    waits for ``http.disconnect`` and cancels the request's task, as the task group would: the body's generator
    stops (its ``finally`` meters the call as 499 and closes the upstream), and the request ends normally."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None
        gone = False

        async def watch() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            gone = True
            task.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await self.stream_response(send)
        except asyncio.CancelledError:
            if not gone:  # cancelled from outside (the server stopping): not ours to swallow
                raise
            task.uncancel()
        finally:
            watcher.cancel()
        if self.background is not None:
            await self.background()
