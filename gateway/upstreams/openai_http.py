"""An OpenAI-compatible server (vLLM in production) over one pooled ``httpx.AsyncClient``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import httpx

from gateway import sse
from gateway.jsonio import JSONDecodeError, dumps, loads
from gateway.settings import EdgeSettings
from gateway.upstreams.compat import ToolNameDeduper, normalise_request
from router.errors import UpstreamError
from router.wire import completion_to_chunks


class OpenAIHTTPUpstream:
    side = "edge"
    provider = "openai-compatible"

    def __init__(self, settings: EdgeSettings, *, client: httpx.AsyncClient | None = None) -> None:
        self.model = settings.model
        self._settings = settings
        self._compat = settings.compat
        self._base = settings.base_url.rstrip("/")
        self._url = self._base + "/chat/completions"
        headers = {"content-type": "application/json"}
        key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        if key:
            headers["authorization"] = f"Bearer {key}"
        self._client = client or httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s),
            limits=httpx.Limits(max_connections=settings.max_connections,
                                max_keepalive_connections=settings.max_connections),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def ready(self) -> tuple[bool, str]:
        try:
            response = await self._client.get(self._base + "/models", timeout=3.0)
        except httpx.HTTPError as exc:
            return False, f"{self._base}/models: {type(exc).__name__}"
        return response.status_code < 500, f"{self._base}/models: HTTP {response.status_code}"

    def _prepare(self, body: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        out = normalise_request(body, self._compat)
        out["model"] = self.model
        out["stream"] = stream
        if stream:
            if self._compat.stream_usage:
                options = dict(out.get("stream_options") or {})
                options["include_usage"] = True
                out["stream_options"] = options
            else:
                out.pop("stream_options", None)
        else:
            out.pop("stream_options", None)
        return out

    def _fault(self, exc: httpx.HTTPError) -> UpstreamError:
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            return UpstreamError(504, f"The edge upstream at {self._url} did not answer in time "
                                      f"({type(exc).__name__}); raise edge.read_timeout_s or check the server.",
                                 upstream="edge", type_="upstream_timeout")
        return UpstreamError(502, f"The edge upstream at {self._url} is unreachable ({type(exc).__name__}); "
                                  "start the edge model server (e.g. vLLM) or fix edge.base_url in config.yaml.",
                             upstream="edge", type_="upstream_unreachable")

    def _status_error(self, status: int, raw: bytes) -> UpstreamError:
        message = raw.decode("utf-8", "replace")[:2000]
        try:
            parsed = loads(raw)
            if isinstance(parsed, dict):
                err = parsed.get("error", parsed)
                if isinstance(err, dict) and err.get("message"):
                    message = str(err["message"])
                elif isinstance(parsed.get("detail"), str):
                    message = parsed["detail"]
                elif isinstance(err, str):
                    message = err
        except JSONDecodeError:
            pass
        client_status = status if 400 <= status < 500 else 502
        return UpstreamError(client_status, f"The edge upstream answered HTTP {status}: {message}",
                             upstream="edge")

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        payload = self._prepare(body, stream=False)
        try:
            response = await self._client.post(self._url, content=dumps(payload))
        except httpx.HTTPError as exc:
            raise self._fault(exc) from None
        if response.status_code != 200:
            raise self._status_error(response.status_code, response.content)
        try:
            result: dict[str, Any] = loads(response.content)
        except JSONDecodeError:
            raise UpstreamError(502, f"The edge upstream at {self._url} answered with invalid JSON.",
                                upstream="edge") from None
        return result

    async def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        if body.get("tools") and not self._compat.stream_tools:
            # The server cannot stream with tools: ask once, then replay as a stream.
            response = await self.complete(body)
            for chunk in completion_to_chunks(response):
                yield chunk
            return
        payload = self._prepare(body, stream=True)
        dedupe = ToolNameDeduper() if self._compat.dedupe_tool_call_names else None
        try:
            async with self._client.stream("POST", self._url, content=dumps(payload)) as response:
                if response.status_code != 200:
                    raise self._status_error(response.status_code, await response.aread())
                async for chunk in sse.parse(response.aiter_lines()):
                    if "error" in chunk and "choices" not in chunk:
                        err = chunk["error"]
                        message = err.get("message") if isinstance(err, dict) else str(err)
                        raise UpstreamError(502, f"The edge upstream failed mid-stream: {message}",
                                            upstream="edge")
                    yield dedupe(chunk) if dedupe else chunk
        except httpx.HTTPError as exc:
            raise self._fault(exc) from None
