"""An OpenAI-compatible server (vLLM in production) over one pooled ``aiohttp.ClientSession``.

aiohttp rather than httpx on this path: measured here, an httpx request costs ~1,200 µs of CPU against
~200 µs for aiohttp on the same loopback upstream, and this call sits on every edge step.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import aiohttp

from gateway.config.settings import EdgeDeployment, EdgeSettings
from gateway.egress.transports.compat import ToolNameDeduper, normalise_request
from gateway.egress.transports.http_errors import error_message
from gateway.egress.transports.relay import SSERelay
from gateway.egress.transports.stream_end import StreamEnd
from gateway.http import sse
from gateway.http.jsonio import JSONDecodeError, dumps, loads
from router.chat_shapes import completion_to_chunks
from router.errors import UpstreamError
from router.upstreams import Relayed

# The edge is tolerant: a request's fields reach it as JSON body fields (vLLM's sampling extras, chat template
# switches), never as the URL, headers or credentials (fixed here at construction, from edge.*). These few vLLM
# fields choose the edge server's infrastructure rather than the generation, so a request may not set them.
EDGE_WITHHELD: Final[Mapping[str, str]] = {
    "kv_transfer_params": "disaggregated serving's KV transfer names the remote host and port vLLM pulls from",
    "priority": "the scheduling priority among tenants is the operator's",
    "request_id": "vLLM's own request id (another tenant's would collide)",
    "chat_template": "which template the server runs is the operator's",
    "logits_processors": "which code the server loads is the operator's",
}


class OpenAIHTTPUpstream:
    side = "edge"
    provider = "openai-compatible"

    def __init__(self, settings: EdgeSettings, *, on_drop: Callable[[str], None] | None = None) -> None:
        self.model = settings.model
        self._on_drop = on_drop
        self._settings = settings
        self._compat = settings.compat
        self._base = settings.base_url.rstrip("/")
        self._url = self._base + "/chat/completions"
        self._headers = {"content-type": "application/json"}
        key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        if key:
            self._headers["authorization"] = f"Bearer {key}"
        self._timeout = aiohttp.ClientTimeout(total=None, connect=settings.connect_timeout_s,
                                              sock_read=settings.read_timeout_s)
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def for_deployment(cls, deployment: EdgeDeployment, settings: EdgeSettings, *,
                       on_drop: Callable[[str], None] | None = None) -> OpenAIHTTPUpstream:
        """One member of the edge pool: its own URL, model, key and switches; the pool's timeouts."""
        return cls(settings.model_copy(update={"base_url": deployment.base_url, "model": deployment.model,
                                               "api_key_env": deployment.api_key_env,
                                               "compat": deployment.compat, "deployments": []}), on_drop=on_drop)

    def _client(self) -> aiohttp.ClientSession:
        # Created on first use: a session belongs to the running event loop.
        if self._session is None or self._session.closed:
            # No cookie jar: the one client serves every session and tenant (a cookie one response set would
            # ride on everyone's next request), and matching cookies cost CPU on every call. No call follows a
            # redirect: the body and the key go to edge.base_url only, whatever the server answers.
            self._session = aiohttp.ClientSession(
                headers=self._headers, timeout=self._timeout, cookie_jar=aiohttp.DummyCookieJar(),
                connector=aiohttp.TCPConnector(limit=self._settings.max_connections, ttl_dns_cache=300))
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def ready(self) -> tuple[bool, str]:
        try:
            async with self._client().get(self._base + "/models", timeout=aiohttp.ClientTimeout(total=3.0),
                                          allow_redirects=False) as response:
                status = response.status
        except (TimeoutError, aiohttp.ClientError) as exc:
            return False, f"{self._base}/models: {type(exc).__name__}"
        return status < 500, f"{self._base}/models: HTTP {status}"

    def _prepare(self, body: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        out = normalise_request(body, self._compat)
        for name in EDGE_WITHHELD:
            if out.pop(name, None) is not None and self._on_drop is not None:
                self._on_drop(name)
        out["model"] = self.model
        out["stream"] = stream
        if stream and self._compat.stream_usage:
            out["stream_options"] = {**(out.get("stream_options") or {}), "include_usage": True}
        else:
            out.pop("stream_options", None)
        return out

    def _fault(self, exc: BaseException) -> UpstreamError:
        if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)) and not isinstance(
                exc, aiohttp.ConnectionTimeoutError):
            return UpstreamError(504, f"The edge upstream at {self._url} did not answer in time "
                                      f"({type(exc).__name__}); raise edge.read_timeout_s or check the server.",
                                 upstream="edge", type_="upstream_timeout")
        return UpstreamError(502, f"The edge upstream at {self._url} is unreachable or broke off "
                                  f"({type(exc).__name__}); start the edge model server (e.g. vLLM) or fix "
                                  "edge.base_url in config.yaml.", upstream="edge", type_="upstream_unreachable")

    @staticmethod
    def _status_error(status: int, raw: bytes) -> UpstreamError:
        client_status = status if 400 <= status < 500 else 502
        return UpstreamError(client_status, f"The edge upstream answered HTTP {status}: {error_message(raw)}",
                             upstream="edge")

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        payload = dumps(self._prepare(body, stream=False))
        try:
            async with self._client().post(self._url, data=payload, allow_redirects=False) as response:
                raw = await response.read()
                status = response.status
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise self._fault(exc) from None
        if status != 200:
            raise self._status_error(status, raw)
        try:
            result: dict[str, Any] = loads(raw)
        except JSONDecodeError:
            raise UpstreamError(502, f"The edge upstream at {self._url} answered with invalid JSON.",
                                upstream="edge") from None
        return result

    async def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        if body.get("tools") and not self._compat.stream_tools:
            # The server cannot stream with tools: ask once, then replay as a stream.
            for chunk in completion_to_chunks(await self.complete(body)):
                yield chunk
            return
        dedupe = ToolNameDeduper() if self._compat.dedupe_tool_call_names else None
        end = StreamEnd()
        async with self._streaming(body) as response:
            try:
                async for chunk in sse.parse(sse.lines(response.content.iter_any())):
                    if (message := sse.failure(chunk)) is not None:
                        raise UpstreamError(502, f"The edge upstream failed mid-stream: {message}",
                                            upstream="edge")
                    seen = end.see(dedupe(chunk) if dedupe else chunk)
                    if seen is not None:
                        yield seen
            except sse.Unfinished:
                if not end.finished:
                    raise self._unfinished() from None
        for chunk in end.close():
            yield chunk

    @asynccontextmanager
    async def _streaming(self, body: dict[str, Any]) -> AsyncIterator[aiohttp.ClientResponse]:
        """``body`` posted as a stream, for either reader (chunks or relay): the response once it is a 200; a
        connection fault or an event that is not JSON raised as the edge's ``UpstreamError``; the connection
        dropped when the reader stops before the body's end (client gone, policy cancelled), so the server stops."""
        try:
            async with self._client().post(self._url, data=dumps(self._prepare(body, stream=True)),
                                           allow_redirects=False) as response:
                if response.status != 200:
                    raise self._status_error(response.status, await response.read())
                try:
                    yield response
                finally:
                    if not response.content.at_eof():
                        response.close()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise self._fault(exc) from None
        except JSONDecodeError:
            raise UpstreamError(502, f"The edge upstream at {self._url} sent a stream event that is not JSON.",
                                upstream="edge") from None

    def _unfinished(self) -> UpstreamError:
        return UpstreamError(502, f"The edge upstream at {self._url} ended its stream before finishing the answer "
                                  "(no finish_reason, no [DONE]).", upstream="edge", type_="upstream_unreachable")

    def relays(self, body: dict[str, Any]) -> bool:
        """A stream this server's switches do not rewrite chunk by chunk (``router.upstreams.Relay``)."""
        return not self._compat.dedupe_tool_call_names and (self._compat.stream_tools or not body.get("tools"))

    async def relay(self, body: dict[str, Any], *, usage: bool) -> AsyncIterator[Relayed]:
        """The stream of ``body`` relayed (``gateway.egress.transports.relay``), failing as ``stream`` fails."""
        events = SSERelay(usage=usage)
        async with self._streaming(body) as response:
            async for piece in response.content.iter_any():
                relayed = events.feed(piece)
                if events.failure is None and events.done:
                    # the last events and [DONE] in one piece; the body's end has come in by the time the
                    # consumer asks for more, so the connection goes back to the pool (not closed on the way out)
                    yield relayed.then(events.close())
                    return
                if relayed.data or relayed.chunks:
                    yield relayed
                if events.failure is not None:
                    raise events.failure
            relayed = events.rest()  # the body ended before [DONE]: whole if every choice finished
            if relayed.data or relayed.chunks:
                yield relayed
            if events.failure is not None:
                raise events.failure
            if not events.finished:
                raise self._unfinished()
            yield events.close()
