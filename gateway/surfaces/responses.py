"""OpenAI's Responses API (``POST /v1/responses``), the wire format of Codex CLI and the OpenAI Agents SDK.

The request becomes a chat-shaped step (``responses_input``), runs through the one pipeline (policies, the cloud
door's privacy, metering), and the completion or chunk stream comes back as a ``response`` object or the official
event sequence (``responses_output``). ``previous_response_id`` continues a response stored here
(``responses_store``); Codex sends ``store: false`` and the whole conversation every turn, which needs no storage.
Session id: ``X-Session-Id``, else Codex's ``session-id`` header, else the session of the previous response."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.http import sse
from gateway.http.body import BodyReader
from gateway.http.errors import bad, error_body, error_response
from gateway.http.failures import Failure
from gateway.http.jsonio import dumps
from gateway.service import Services
from gateway.state.tenancy import Identity
from gateway.surfaces import Parsed, SurfaceEndpoint, read_body
from gateway.surfaces.pipeline import Started, StepPipeline
from gateway.surfaces.responses_events import EventStream
from gateway.surfaces.responses_input import to_chat
from gateway.surfaces.responses_output import ResponseShell
from gateway.surfaces.responses_store import ResponseStore

log = logging.getLogger("ecgw")


@dataclass
class ResponsesRequest:
    """``Parsed.extra`` for this surface: the request as sent, and what answering and storing it needs."""

    raw: dict[str, Any]
    shell: ResponseShell | None = None
    owner: str = "anonymous"
    input_items: list[dict[str, Any]] = field(default_factory=list)
    stream: EventStream | None = None

    @property
    def store(self) -> bool:
        return self.raw.get("store") is not False


EXPECT = "a JSON Responses request with 'model' and 'input'"


def _check(body: dict[str, Any]) -> dict[str, Any]:
    if "model" in body and not isinstance(body["model"], str):
        raise bad("'model' must be a string.", "model")
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        raise bad("'stream' must be true or false.", "stream")
    previous = body.get("previous_response_id")
    if previous is not None and not isinstance(previous, str):
        raise bad("'previous_response_id' must be a string (a response id such as resp_…).", "previous_response_id")
    if body.get("metadata") is not None and not isinstance(body["metadata"], dict):
        raise bad("'metadata' must be an object of string values.", "metadata")
    if body.get("include") is not None and not isinstance(body["include"], list):
        raise bad("'include' must be a list of strings.", "include")
    return body


class ResponsesSurface:
    relays = False  # its own event stream, rendered from the chat chunks

    def __init__(self, store: ResponseStore, reader: BodyReader) -> None:
        self._store = store
        self._reader = reader

    def parse(self, raw: bytes, headers: Mapping[str, str]) -> Parsed:
        """Without ``previous_response_id``; ``prepare`` completes the step with the stored history."""
        return Parsed({}, session_hint=headers.get("session-id") or None, extra=ResponsesRequest(_check(self._reader.object(raw, expect=EXPECT))))

    async def prepare(self, parsed: Parsed, owner: str | None, confined_to: str | None = None) -> Parsed:
        """``owner``: the caller's (``Identity.owner``; None in single-tenant mode); ``confined_to``: the one
        session a bound key may continue responses of (``Identity.confined_to``)."""
        request: ResponsesRequest = parsed.extra
        raw = request.raw
        request.owner = owner or "anonymous"
        history = []
        hint = parsed.session_hint
        previous = raw.get("previous_response_id")
        if previous:
            found = await self._store.history(previous, owner=request.owner, session=confined_to)
            history = found.items
            hint = hint or found.session_id
        conversion = to_chat(raw, history)
        if conversion.tools.dropped_tools:
            log.info("responses: tools %s are hosted tools no upstream here runs; left out",
                     ", ".join(conversion.tools.dropped_tools))
        request.input_items = conversion_input(raw)
        request.shell = ResponseShell(raw, conversion.tools)
        return Parsed(conversion.body, session_hint=hint, extra=request)

    async def render(self, completion: dict[str, Any], parsed: Parsed, started: Started) -> bytes:
        """The response object, stored (when the request asks for it) for a later ``previous_response_id``."""
        request: ResponsesRequest = parsed.extra
        assert request.shell is not None
        response = request.shell.render(completion)
        await self._save(request, started, response["output"])
        return dumps(response)

    async def _save(self, request: ResponsesRequest, started: Started, output: list[dict[str, Any]]) -> None:
        if not request.store or request.shell is None:
            return
        try:
            await self._store.save(request.shell.id, owner=request.owner, session_id=started.session_id,
                                   previous=request.raw.get("previous_response_id"),
                                   input_items=request.input_items, output=output)
        except Exception:  # the answer is paid for and ready: deliver it; a follow-up naming it gets the 404
            log.warning("could not store response %s for previous_response_id", request.shell.id, exc_info=True)

    async def stream(self, started: Started, parsed: Parsed) -> AsyncIterator[bytes]:
        """The event stream; the response is stored once it is complete, before its last events go out."""
        request: ResponsesRequest = parsed.extra
        assert request.shell is not None
        include = request.raw.get("include") or ()
        events = request.stream = EventStream(request.shell, logprobs="message.output_text.logprobs" in include
                                              or bool(request.raw.get("top_logprobs")))
        for event in events.start():
            yield _frame(event)
        async for chunk in started.chunks():
            for event in events.feed(chunk):
                yield _frame(event)
        last = list(events.finish_events())
        await self._save(request, started, events.items)
        for event in last:
            yield _frame(event)

    def error(self, failure: Failure, headers: dict[str, str]) -> Response:
        return error_response(failure.status, failure.message, failure.type, param=failure.param,
                              code=failure.code, headers=headers)

    def stream_error(self, failure: Failure, parsed: Parsed) -> bytes:
        """Mid-stream: an ``error`` event, then ``response.failed``, numbered after what was already sent."""
        request: ResponsesRequest = parsed.extra
        if request.stream is None:
            return sse.encode(error_body(failure.message, failure.type, param=failure.param, code=failure.code))
        return b"".join(_frame(event) for event in request.stream.fail(failure.code or failure.type,
                                                                         failure.message))


def conversion_input(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's own input as items (a string input is one user message), as a stored response keeps it."""
    value = raw.get("input")
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value or [])


def _frame(event: dict[str, Any]) -> bytes:
    return sse.event(str(event["type"]), event)


class ResponsesEndpoint(SurfaceEndpoint):
    """The shared endpoint, with the history of ``previous_response_id`` read before the step (for the caller's
    owner); the surface stores the response after it (``render``, ``stream``)."""

    _surface: ResponsesSurface

    async def _parse(self, request: Request, identity: Identity) -> Parsed:
        parsed = self._surface.parse(await read_body(request), request.headers)
        return await self._surface.prepare(parsed, identity.owner, identity.confined_to)


def responses_endpoint(services: Services, pipeline: StepPipeline, reader: BodyReader) -> ResponsesEndpoint:
    surface = ResponsesSurface(ResponseStore(services.sessions), reader)
    return ResponsesEndpoint(surface, pipeline)
