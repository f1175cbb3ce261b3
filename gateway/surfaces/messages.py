"""Anthropic's Messages API (``POST /v1/messages``, ``POST /v1/messages/count_tokens``): Claude Code and agents on
the Anthropic SDK. The request becomes a chat step (``messages_request``), the answer an Anthropic message or event
stream (``messages_render``); routing, privacy and metering are the pipeline's, unchanged. Claude Code's
``X-Claude-Code-Session-Id`` names the session when ``X-Session-Id`` does not."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from accounting.estimate import TokenEstimator
from gateway.http.body import BodyReader
from gateway.http.failures import Failure, classify
from gateway.http.jsonio import dumps
from gateway.http.sse import event
from gateway.service import Services
from gateway.surfaces import Parsed
from gateway.surfaces.messages_render import EventStream, render
from gateway.surfaces.messages_request import EXPECT, MessagesRequest, to_chat
from gateway.surfaces.pipeline import Started

SESSION_HEADER = "x-claude-code-session-id"

# Anthropic's error types by status; the status and the message are the ones chat completions gives.
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error",
                504: "timeout_error", 529: "overloaded_error"}


def error_type(status: int) -> str:
    if status in _ERROR_TYPES:
        return _ERROR_TYPES[status]
    return "invalid_request_error" if 400 <= status < 500 else "api_error"


def error_body(failure: Failure) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type(failure.status), "message": failure.message}}


def native_anthropic(services: Services) -> bool:
    """The cloud model speaks Anthropic itself (litellm ``anthropic/…``): keep cache breakpoints and thinking."""
    cloud = services.settings.cloud
    return cloud.named_targets()[cloud.primary].model.startswith("anthropic/")


class MessagesSurface:
    relays = False  # its own event stream, rendered from the chat chunks

    def __init__(self, reader: BodyReader, *, native: bool) -> None:
        self._reader = reader
        self._native = native

    def parse(self, raw: bytes, headers: Mapping[str, str]) -> Parsed:
        chat, request = to_chat(self._reader.object(raw, expect=EXPECT), native=self._native)
        return Parsed(chat, session_hint=headers.get(SESSION_HEADER) or None, extra=request)

    async def render(self, completion: dict[str, Any], parsed: Parsed, started: Started) -> bytes:
        return dumps(render(completion, _request(parsed)))

    def stream(self, started: Started, parsed: Parsed) -> AsyncIterator[bytes]:
        return EventStream(_request(parsed)).events(started.chunks())

    def error(self, failure: Failure, headers: dict[str, str]) -> Response:
        return Response(dumps(error_body(failure)), status_code=failure.status, media_type="application/json",
                        headers=headers)

    def stream_error(self, failure: Failure, parsed: Parsed) -> bytes:
        return event("error", error_body(failure))


def _request(parsed: Parsed) -> MessagesRequest:
    assert isinstance(parsed.extra, MessagesRequest)
    return parsed.extra


class CountTokens:
    """``POST /v1/messages/count_tokens``, answered here without a model call: a tokenizer estimate (tiktoken
    ``o200k_base`` over the chat shape, as accounting estimates usage), said so in ``x-ecgw-token-count``."""

    def __init__(self, reader: BodyReader) -> None:
        self._estimator = TokenEstimator()
        self._surface = MessagesSurface(reader, native=False)  # its reading, and its error envelope

    async def handle(self, request: Request) -> Response:
        try:
            count = self._estimator.prompt_tokens(self._surface.parse(await request.body(), request.headers).body)
        except Exception as exc:
            return self._surface.error(classify(exc, request.state.request_id), {})
        return Response(dumps({"input_tokens": count}), media_type="application/json",
                        headers={"x-ecgw-token-count": "estimate (tiktoken o200k_base)"})
