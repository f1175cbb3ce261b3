"""The cloud over the gateway's own OpenAI-compatible transport (``cloud.transport: openai``), for targets whose API is
OpenAI's chat-completions wire (OpenAI, DeepSeek, a hosted vLLM, an OpenAI-compatible router).

Like litellm's door (``gateway.egress.transports.cloud``) it takes a ``ProviderRequest`` only: the URL, key, timeouts and
retries come from ``cloud.*`` settings at construction, the body is the request's allowlisted fields plus the model
and the stream switch. It costs ~0.1 ms of CPU a call where litellm costs ~4 ms (JSON) and ~10 ms (streamed) on the
same stub (``python -m benchmarks.transport``), because it does nothing but the call: no provider mapping, no cost
map, no callbacks. Which is also its limit: a provider that does not speak OpenAI's wire needs litellm; of
litellm's per-provider mapping it keeps what OpenAI's API and DeepSeek's need (``gateway.egress.transports.wire_dialect``),
and sends the body as it is anywhere else (vLLM takes ``top_k``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import aiohttp

from gateway.config.settings import OPENAI_WIRE_BASES, CloudSettings, cloud_provider
from gateway.egress.transports.cloud_key import CloudKey
from gateway.egress.transports.http_errors import error_message
from gateway.egress.transports.provider_request import ProviderRequest
from gateway.egress.transports.stream_end import StreamEnd
from gateway.egress.transports.wire_dialect import dialect
from gateway.http import sse
from gateway.http.jsonio import JSONDecodeError, dumps, loads
from router.errors import UpstreamError

# Answers worth another try before giving up (``cloud.max_retries``): rate limited, overloaded, a gateway between.
_RETRIED_STATUS: Final = frozenset({408, 409, 429, 500, 502, 503, 504})
_BACKOFF_S: Final = (0.5, 1.0, 2.0, 4.0)
# Calls in flight to one target from one worker, as the OpenAI SDK under litellm allows. aiohttp's default of 100
# would make the 101st concurrent stream wait for a free connection, and that wait counts against the connect
# timeout (cloud.timeout_s): a long queue, then a 504.
MAX_CONNECTIONS: Final = 1000
# Idle connections are dropped here before a server's own idle limit closes them under a call (uvicorn's is 5 s).
KEEPALIVE_S: Final = 4.0


def _dropped(exc: BaseException, attempt: dict[str, bool]) -> bool:
    """What a kept-alive connection the server had already closed gives: a reused connection (``attempt``, set by
    ``_REUSE``) that broke before an answer. The call is made again once, at once, on another connection, whatever
    cloud.max_retries says. A new connection that breaks is a failure like any other: the provider may have
    received, and billed, the call."""
    return attempt["reused"] and isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError)


async def _reused(_session: aiohttp.ClientSession, context: Any, _params: Any) -> None:
    context.trace_request_ctx["reused"] = True


def _reuse_trace() -> aiohttp.TraceConfig:
    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(_reused)
    return trace


class OpenAIWireCloud:
    side = "cloud"

    def __init__(self, settings: CloudSettings, *, backoff_s: tuple[float, ...] = _BACKOFF_S) -> None:
        self.model = settings.model
        self.provider, self._name = cloud_provider(settings.model)
        base = settings.api_base or OPENAI_WIRE_BASES.get(self.provider)
        if base is None:  # the settings' validator says so first, with the setting to change
            raise ValueError(f"no OpenAI-compatible URL for {settings.model}: set cloud.api_base")
        self._where = base
        self._url = base.rstrip("/") + "/chat/completions"
        self._settings = settings
        self._key = CloudKey(settings)
        self._headers = {"content-type": "application/json", "authorization": f"Bearer {self._key.value or 'none'}"}
        # As litellm's httpx client: a limit on connecting and on each read, none on a whole (long) stream.
        self._timeout = aiohttp.ClientTimeout(total=None, connect=settings.timeout_s, sock_read=settings.timeout_s)
        self._backoff_s = backoff_s
        self._proxy = environment_proxy(self._url)
        self._dialect = dialect(self.provider, urlsplit(self._url).hostname)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        # Created on first use (a session belongs to the running event loop); no cookie jar: one client serves
        # every tenant. Calls never follow a redirect (``_open``): the body and the key go to the configured URL
        # only, whatever the answer says; a 3xx is the provider's failure.
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers=self._headers, timeout=self._timeout, cookie_jar=aiohttp.DummyCookieJar(),
                connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ttl_dns_cache=300,
                                               keepalive_timeout=KEEPALIVE_S),
                trace_configs=[_reuse_trace()])
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def ready(self) -> tuple[bool, str]:
        return self._key.ready()

    def _payload(self, request: ProviderRequest, *, stream: bool) -> bytes:
        body = self._dialect(request.body())
        body.update(model=self._name, stream=stream)
        if stream:
            body["stream_options"] = {"include_usage": True}
        return dumps(body)

    def _fault(self, exc: BaseException) -> UpstreamError:
        if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
            return UpstreamError(504, f"The cloud upstream {self.model} at {self._where} timed out; raise "
                                      "cloud.timeout_s or try again.", upstream="cloud", type_="upstream_timeout")
        return UpstreamError(502, f"The cloud upstream {self.model} at {self._where} is unreachable or failed: "
                                  f"{type(exc).__name__}: {exc}", upstream="cloud", type_="upstream_unreachable")

    def _status_error(self, status: int, raw: bytes) -> UpstreamError:
        if 400 <= status < 500:
            return UpstreamError(status, f"The cloud upstream {self.model} answered HTTP {status}: "
                                         f"{error_message(raw)}", upstream="cloud")
        return UpstreamError(502, f"The cloud upstream {self.model} failed: HTTP {status}: {error_message(raw)}",
                             upstream="cloud")

    async def _open(self, payload: bytes) -> aiohttp.ClientResponse:
        """The 200 response to ``payload``, its body unread, after up to ``cloud.max_retries`` more tries of a
        connection fault or a retried status; a fault or another status raised as an ``UpstreamError``. Nothing is
        tried again once an answer's body is being read. A connection the server dropped before answering (a
        kept-alive one it had closed) is replaced once, at once, beside those tries."""
        self._key.check()
        attempt = 0
        dropped = False
        while True:
            retry = attempt < self._settings.max_retries
            this = {"reused": False}
            try:
                response = await self._client().post(self._url, data=payload, proxy=self._proxy,
                                                     allow_redirects=False, trace_request_ctx=this)
            except (TimeoutError, aiohttp.ClientError) as exc:
                if _dropped(exc, this) and not dropped:
                    dropped = True
                    continue
                if not retry:
                    raise self._fault(exc) from None
            else:
                if response.status == 200:
                    return response
                try:
                    raw = await response.read()
                except (TimeoutError, aiohttp.ClientError) as exc:
                    raise self._fault(exc) from None
                finally:
                    response.release()
                if not (retry and response.status in _RETRIED_STATUS):
                    raise self._status_error(response.status, raw)
            await asyncio.sleep(self._backoff_s[min(attempt, len(self._backoff_s) - 1)])
            attempt += 1

    @asynccontextmanager
    async def _answer(self, payload: bytes) -> AsyncIterator[aiohttp.ClientResponse]:
        response = await self._open(payload)
        try:
            yield response
        finally:
            if response.content.at_eof():
                response.release()
            else:
                response.close()  # the reader stopped early: the provider stops generating

    async def complete(self, request: ProviderRequest) -> dict[str, Any]:
        async with self._answer(self._payload(request, stream=False)) as response:
            try:
                raw = await response.read()
            except (TimeoutError, aiohttp.ClientError) as exc:
                raise self._fault(exc) from None
        try:
            answer = loads(raw)
        except JSONDecodeError:
            answer = None
        if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list):
            raise UpstreamError(502, f"The cloud upstream {self.model} at {self._where} answered with something "
                                     "other than a chat completion.", upstream="cloud")
        return _openai_shape(answer)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[dict[str, Any]]:
        end = StreamEnd()
        async with self._answer(self._payload(request, stream=True)) as response:
            try:
                async for chunk in sse.parse(sse.lines(response.content.iter_any())):
                    if (message := sse.failure(chunk)) is not None:
                        raise UpstreamError(502, f"The cloud upstream {self.model} failed mid-stream: {message}",
                                            upstream="cloud")
                    if isinstance(chunk.get("usage"), dict):
                        chunk["usage"].pop("cost", None)  # a router's own price (see _openai_shape)
                    seen = end.see(chunk)
                    if seen is not None:
                        yield seen
            except sse.Unfinished:
                if not end.finished:
                    raise UpstreamError(502, f"The cloud upstream {self.model} at {self._where} ended its stream "
                                             "before finishing the answer (no finish_reason, no [DONE]).",
                                        upstream="cloud", type_="upstream_unreachable") from None
            except (TimeoutError, aiohttp.ClientError) as exc:
                raise self._fault(exc) from None
            except JSONDecodeError:
                raise UpstreamError(502, f"The cloud upstream {self.model} at {self._where} sent a stream event "
                                         "that is not JSON.", upstream="cloud") from None
        for chunk in end.close():
            yield chunk


def environment_proxy(url: str) -> str | None:
    """The proxy the operator's environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY`` …), as litellm's
    httpx client would use it: read once, at construction (aiohttp's ``trust_env`` reads it on every call, ~0.2 ms
    of CPU each)."""
    parts = urlsplit(url)
    proxy = getproxies().get(parts.scheme)
    return proxy if proxy and not proxy_bypass(parts.hostname or "") else None


def _openai_shape(answer: dict[str, Any]) -> dict[str, Any]:
    """A chat completion with the fields OpenAI always sends (a sloppy server's answer that names no
    ``finish_reason`` ended, so ``stop``, as a stream without one is finished by ``StreamEnd``)."""
    for position, choice in enumerate(answer["choices"]):
        if isinstance(choice, dict):
            choice.setdefault("index", position)
            choice.setdefault("finish_reason", "stop")
            choice.setdefault("logprobs", None)
            message = choice.get("message")
            if isinstance(message, dict):
                message.setdefault("role", "assistant")
                message.setdefault("content", None)
    usage = answer.get("usage")
    if isinstance(usage, dict):
        usage.pop("cost", None)  # a router's own price; the gateway prices calls itself (accounting.prices)
    return answer
