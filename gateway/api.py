"""The HTTP surface: OpenAI's chat completions and models, health, readiness."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse

from gateway import sse
from gateway.errors import ClientError, error_body, error_response
from gateway.jsonio import dumps
from gateway.metrics import RequestMetrics
from gateway.service import Services
from gateway.sessions import identify_session
from gateway.wire import client_wants_usage, parse_chat_request
from privacy.errors import PrivacyBlocked, PrivacyUnavailable, SessionStoreUnavailable
from router.channels import CloudChannel, EdgeChannel
from router.errors import UpstreamError
from router.policies.edge_only import EdgeOnly
from router.policy import Policy
from router.step import CallContext, RouteTracker, SessionState, Step
from router.wire import chunks_to_completion, completion_to_chunks

log = logging.getLogger("ecgw")


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return None


def authenticate(services: Services, request: Request) -> str | None:
    """The caller's key; raises 401 when keys are configured and this one is not among them."""
    server = services.settings.server
    key = _bearer(request)
    if not server.api_keys and not server.session_keys:
        return key
    if key is None:
        raise ClientError(401, "Missing API key: send 'Authorization: Bearer <key>' with a key from "
                               "server.api_keys.", type_="authentication_error", code="invalid_api_key")
    if key not in server.api_keys and key not in server.session_keys:
        raise ClientError(401, "Invalid API key: use a key listed in server.api_keys.",
                          type_="authentication_error", code="invalid_api_key")
    return key


def guarded(services: Services, handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` behind the gateway's API keys, with OpenAI-shaped errors for bad keys."""

    async def endpoint(request: Request) -> Response:
        try:
            authenticate(services, request)
        except ClientError as exc:
            return error_response(exc.status, exc.message, exc.type, code=exc.code)
        return await handler(request)

    return endpoint


async def _read_body(request: Request, limit: int) -> bytes:
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


def _failure(exc: BaseException, request_id: str) -> Response:
    headers = {"x-ecgw-request-id": request_id}
    if isinstance(exc, ClientError):
        return error_response(exc.status, exc.message, exc.type, param=exc.param, code=exc.code, headers=headers)
    if isinstance(exc, UpstreamError):
        return error_response(exc.status, exc.message, exc.type, code=exc.upstream, headers=headers)
    if isinstance(exc, SessionStoreUnavailable):
        return error_response(503, _store_message(exc), "session_store_unavailable",
                              code="session_store_unavailable", headers={**headers, "retry-after": "1"})
    if isinstance(exc, PrivacyUnavailable):
        return error_response(503, f"Privacy protection is unavailable, so nothing was sent to the cloud: "
                                   f"{exc.reason}", "privacy_unavailable", code="privacy_unavailable",
                              headers=headers)
    log.exception("request %s failed", request_id, exc_info=exc)
    return error_response(500, f"The gateway failed on this request (request id {request_id}); see its log.",
                          "internal_error", headers=headers)


def _store_message(exc: SessionStoreUnavailable) -> str:
    return (f"The session store ({exc.store}) is unavailable, so this step was not served and nothing was sent to "
            f"the cloud: {exc.reason}. Retry shortly; the gateway reconnects by itself when the store is back.")


def _error_event(exc: BaseException, request_id: str) -> bytes:
    if isinstance(exc, SessionStoreUnavailable):
        body = error_body(_store_message(exc), "session_store_unavailable", code="session_store_unavailable")
    elif isinstance(exc, UpstreamError):
        body = error_body(exc.message, exc.type, code=exc.upstream)
    elif isinstance(exc, PrivacyUnavailable):
        body = error_body(f"Privacy protection is unavailable: {exc.reason}", "privacy_unavailable")
    elif isinstance(exc, PrivacyBlocked):
        body = error_body(f"This step may not go to the cloud: {exc.reason}", "privacy_blocked")
    else:
        log.exception("stream of request %s failed", request_id, exc_info=exc)
        body = error_body(f"The gateway failed mid-stream (request id {request_id}).", "internal_error")
    return b"data: " + dumps(body) + b"\n\n"


@dataclass
class _Outcome:
    """What the metrics need to know about one request, filled in as it is served."""

    started: float
    policy: str = "none"
    route: RouteTracker | None = None
    streamed: bool = False

    def observe(self, metrics: RequestMetrics, status: int) -> None:
        route = self.route.route if self.route is not None else "none"
        metrics.observe(route=route, policy=self.policy, status=status, streamed=self.streamed,
                        seconds=time.perf_counter() - self.started)


class ChatCompletions:
    """``POST /v1/chat/completions``."""

    def __init__(self, services: Services, metrics: RequestMetrics) -> None:
        self._s = services
        self._metrics = metrics
        self._edge_only = EdgeOnly()

    async def handle(self, request: Request) -> Response:
        request_id = "req-" + uuid.uuid4().hex[:20]
        outcome = _Outcome(started=time.perf_counter())
        try:
            response = await self._handle(request, request_id, outcome)
        except ClientDisconnect:
            response = Response(status_code=499)
        except Exception as exc:
            response = _failure(exc, request_id)
        if not isinstance(response, StreamingResponse):  # a stream is observed when it ends
            outcome.observe(self._metrics, response.status_code)
        return response

    async def _handle(self, request: Request, request_id: str, outcome: _Outcome) -> Response:
        s = self._s
        key = authenticate(s, request)
        body = parse_chat_request(await _read_body(request, s.settings.server.max_body_bytes))
        session_id, _ = identify_session(request.headers, body, api_key=key,
                                         session_keys=s.settings.server.session_keys,
                                         fingerprint_fallback=s.settings.sessions.fingerprint_fallback)
        session = SessionState(session_id, s.sessions)
        decision = await s.chooser.decide(request.headers, body, session)
        policy_name = outcome.policy = decision.policy
        context = CallContext(request_id=request_id, session_id=session_id, policy=policy_name,
                              experiment=decision.experiment, arm=decision.arm)
        route = outcome.route = RouteTracker()
        step = Step(
            request=body,
            context=context,
            session=session,
            edge=EdgeChannel(s.edge, s.meter, context, route),
            cloud=CloudChannel(s.cloud, s.meter, context, route, s.protector),
            route=route,
            knobs=decision.knobs,
        )
        headers = {"x-ecgw-request-id": request_id, "x-ecgw-session": _header_safe(session_id),
                   "x-ecgw-policy": policy_name}
        if decision.arm is not None:
            headers["x-ecgw-arm"] = f"{decision.experiment}:{decision.arm}"
        try:
            result, first = await self._start(s.policies.get(policy_name), step)
        except PrivacyBlocked as exc:
            # A finding whose action is `block` (or images: block, or on_privacy_error: edge): whatever the
            # policy wanted, this step stays on the edge.
            log.info("request %s: %s; answering on the edge", request_id, exc.reason)
            headers["x-ecgw-fallback"] = "privacy-blocked"
            result, first = await self._start(self._edge_only, step)
        headers["x-ecgw-route"] = route.route
        if isinstance(result, dict):
            return Response(dumps(result), media_type="application/json", headers=headers)
        outcome.streamed = True
        return StreamingResponse(
            self._relay(first, result, client_wants_usage(body), request_id, outcome),
            media_type="text/event-stream",
            headers={**headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    @staticmethod
    async def _start(policy: Policy, step: Step) -> tuple[dict[str, Any] | AsyncIterator[dict[str, Any]],
                                                         dict[str, Any] | None]:
        """Run the policy up to its first output: a completion, or a stream and its first chunk (so that a
        failure before any output still gets a proper status, and the route header is known)."""
        result = await policy.run(step)
        if step.stream and isinstance(result, dict):
            result = _as_stream(result)
        elif not step.stream and not isinstance(result, dict):
            result = await chunks_to_completion(result)
        if isinstance(result, dict):
            return result, None
        chunks = result.__aiter__()
        try:
            return chunks, await chunks.__anext__()
        except StopAsyncIteration:
            return chunks, None
        except BaseException:
            await _aclose(chunks)
            raise

    async def _relay(self, first: dict[str, Any] | None, chunks: AsyncIterator[dict[str, Any]],
                     wants_usage: bool, request_id: str, outcome: _Outcome) -> AsyncIterator[bytes]:
        status = 499  # the client went away before the end
        try:
            if first is not None:
                if wants_usage or not _usage_only(first):
                    yield sse.encode(_strip_usage(first, wants_usage))
                async for chunk in chunks:
                    if not wants_usage and _usage_only(chunk):
                        continue
                    yield sse.encode(_strip_usage(chunk, wants_usage))
            status = 200
            yield sse.DONE
        except Exception as exc:
            status = (exc.status if isinstance(exc, UpstreamError)
                      else 503 if isinstance(exc, (PrivacyUnavailable, SessionStoreUnavailable))
                      else 403 if isinstance(exc, PrivacyBlocked) else 500)
            yield _error_event(exc, request_id)
        finally:
            outcome.observe(self._metrics, status)
            await _aclose(chunks)


async def _as_stream(response: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    for chunk in completion_to_chunks(response):
        yield chunk


def _header_safe(value: str) -> str:
    """Session ids come from request bodies (``user``, ``metadata``): anything outside printable ASCII is
    percent-encoded, so a header can never fail or be split."""
    if value.isascii() and value.isprintable():
        return value
    return quote(value, safe="")


def _usage_only(chunk: dict[str, Any]) -> bool:
    return not chunk.get("choices") and chunk.get("usage") is not None


def _strip_usage(chunk: dict[str, Any], wants_usage: bool) -> dict[str, Any]:
    if not wants_usage and "usage" in chunk:
        chunk = {k: v for k, v in chunk.items() if k != "usage"}
    return chunk


async def _aclose(iterator: AsyncIterator[Any]) -> None:
    closer = getattr(iterator, "aclose", None)
    if closer is not None:
        await closer()


async def list_models(request: Request) -> Response:
    services: Services = request.app.state.services
    data = [{"id": model_id, "object": "model", "created": 0, "owned_by": "ecgw"}
            for model_id in services.chooser.model_ids()]
    return Response(dumps({"object": "list", "data": data}), media_type="application/json")


async def healthz(request: Request) -> Response:
    return Response(dumps({"status": "ok"}), media_type="application/json")


async def readyz(request: Request) -> Response:
    services: Services = request.app.state.services
    checks: dict[str, Any] = {}
    ok = True
    for name, upstream in (("edge", services.edge), ("cloud", services.cloud)):
        ready, detail = await upstream.ready()
        checks[name] = {"ready": ready, "detail": detail}
        ok = ok and ready
    return Response(dumps({"status": "ready" if ok else "not ready", "upstreams": checks}),
                    status_code=200 if ok else 503, media_type="application/json")
