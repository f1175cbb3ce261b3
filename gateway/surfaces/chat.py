"""OpenAI's chat completions: the pipeline's own shape, so this surface only checks the body and frames SSE."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.responses import Response

from gateway.http import sse
from gateway.http.body import BodyReader
from gateway.http.errors import error_body, error_response
from gateway.http.failures import Failure
from gateway.http.jsonio import dumps
from gateway.http.wire import EXPECT, check_chat_request, client_wants_usage
from gateway.surfaces import Parsed
from gateway.surfaces.pipeline import Started


class ChatSurface:
    relays = True  # OpenAI's stream is this surface's own: a relayed one goes out as it came (the endpoint's)

    def __init__(self, reader: BodyReader) -> None:
        self._reader = reader

    def parse(self, raw: bytes, headers: Mapping[str, str]) -> Parsed:
        return Parsed(check_chat_request(self._reader.object(raw, expect=EXPECT)))

    async def render(self, completion: dict[str, Any], parsed: Parsed, started: Started) -> bytes:
        return dumps(completion)

    async def stream(self, started: Started, parsed: Parsed) -> AsyncIterator[bytes]:
        wants_usage = client_wants_usage(parsed.body)
        async for chunk in started.chunks():
            if not wants_usage:
                if _usage_only(chunk):
                    continue
                if "usage" in chunk:
                    chunk = {k: v for k, v in chunk.items() if k != "usage"}
            yield sse.encode(chunk)
        yield sse.DONE

    def error(self, failure: Failure, headers: dict[str, str]) -> Response:
        return error_response(failure.status, failure.message, failure.type, param=failure.param,
                              code=failure.code, headers=headers)

    def stream_error(self, failure: Failure, parsed: Parsed) -> bytes:
        return sse.encode(error_body(failure.message, failure.type, code=failure.code))


def _usage_only(chunk: dict[str, Any]) -> bool:
    return not chunk.get("choices") and chunk.get("usage") is not None
