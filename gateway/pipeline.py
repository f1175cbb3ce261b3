"""One agent step, whatever surface it arrived on: identify the session, choose the policy, run it to its first
output. Surfaces (``gateway.surfaces``) translate their wire format to the chat shape before and back after; the
policies, the channels, privacy and metering never know which surface a step came from."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from gateway.metrics import RequestMetrics
from gateway.service import Services
from gateway.sessions import identify_session
from privacy.errors import PrivacyBlocked
from router.channels import CloudChannel, EdgeChannel
from router.policies.edge_only import EdgeOnly
from router.policy import Policy
from router.step import CallContext, RouteTracker, SessionState, Step
from router.wire import chunks_to_completion, completion_to_chunks

log = logging.getLogger("ecgw")


@dataclass
class Outcome:
    """What the request metrics need to know about one request, filled in as it is served."""

    started: float = field(default_factory=time.perf_counter)
    policy: str = "none"
    route: RouteTracker | None = None
    streamed: bool = False

    def observe(self, metrics: RequestMetrics, status: int) -> None:
        route = self.route.route if self.route is not None else "none"
        metrics.observe(route=route, policy=self.policy, status=status, streamed=self.streamed,
                        seconds=time.perf_counter() - self.started)


@dataclass
class Started:
    """A step run up to its first output: the response headers, and either a whole completion or a stream of
    chat chunks (its first chunk already pulled, so that a failure before any output still gets a status)."""

    headers: dict[str, str]
    completion: dict[str, Any] | None = None
    session_id: str = ""
    first: dict[str, Any] | None = None
    rest: AsyncIterator[dict[str, Any]] | None = None

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        """Every chunk, the first included. The caller closes ``rest`` (``aclose``) when it stops early."""
        if self.first is not None:
            yield self.first
        if self.rest is not None:
            async for chunk in self.rest:
                yield chunk


class StepPipeline:
    def __init__(self, services: Services) -> None:
        self.services = services
        self._s = services
        self._edge_only = EdgeOnly()

    async def start(self, headers: Mapping[str, str], body: dict[str, Any], *, api_key: str | None,
                    request_id: str, outcome: Outcome, session_hint: str | None = None) -> Started:
        """Run the step in ``body`` (chat-completions shape). ``session_hint`` is a surface's own session header
        (Claude Code's, Codex's), taken after ``X-Session-Id``."""
        s = self._s
        session_id, _ = identify_session(headers, body, api_key=api_key, session_keys=s.settings.server.session_keys,
                                         fingerprint_fallback=s.settings.sessions.fingerprint_fallback,
                                         hint=session_hint)
        session = SessionState(session_id, s.sessions)
        decision = await s.chooser.decide(headers, body, session)
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
        out_headers = {"x-ecgw-request-id": request_id, "x-ecgw-session": header_safe(session_id),
                       "x-ecgw-policy": policy_name}
        if decision.arm is not None:
            out_headers["x-ecgw-arm"] = f"{decision.experiment}:{decision.arm}"
        try:
            started = await _run(s.policies.get(policy_name), step, out_headers)
        except PrivacyBlocked as exc:
            # A finding whose action is `block` (or images: block, or on_privacy_error: edge): whatever the
            # policy wanted, this step stays on the edge.
            log.info("request %s: %s; answering on the edge", request_id, exc.reason)
            out_headers["x-ecgw-fallback"] = "privacy-blocked"
            started = await _run(self._edge_only, step, out_headers)
        out_headers["x-ecgw-route"] = route.route
        outcome.streamed = started.completion is None
        started.session_id = session_id
        return started


async def _run(policy: Policy, step: Step, headers: dict[str, str]) -> Started:
    result = await policy.run(step)
    if step.stream and isinstance(result, dict):
        result = _as_stream(result)
    elif not step.stream and not isinstance(result, dict):
        result = await chunks_to_completion(result)
    if isinstance(result, dict):
        return Started(headers, completion=result)
    rest = result.__aiter__()
    try:
        return Started(headers, first=await rest.__anext__(), rest=rest)
    except StopAsyncIteration:
        return Started(headers, rest=rest)
    except BaseException:
        await aclose(rest)
        raise


async def _as_stream(response: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    for chunk in completion_to_chunks(response):
        yield chunk


async def aclose(iterator: AsyncIterator[Any]) -> None:
    closer = getattr(iterator, "aclose", None)
    if closer is not None:
        await closer()


def header_safe(value: str) -> str:
    """Session ids come from request bodies (``user``, ``metadata``): anything outside printable ASCII is
    percent-encoded, so a header can never fail or be split."""
    if value.isascii() and value.isprintable():
        return value
    return quote(value, safe="")
