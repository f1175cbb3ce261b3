"""One agent step, whatever surface it arrived on: identify the session, choose the policy, run it to its first
output. Surfaces (``gateway.surfaces``) translate their wire format to the chat shape before and back after; the
policies, the channels, privacy and metering never know which surface a step came from."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from accounting.calls import StepRecord
from gateway.http.errors import ClientError
from gateway.http.wire import client_wants_usage
from gateway.learning.shadow import Ticket
from gateway.live.limits import checked_output_limits, key_name
from gateway.live.policy_choice import PolicyDecision
from gateway.service import Services
from gateway.state.tenancy import Identity
from gateway.telemetry.logs import log_request
from gateway.telemetry.metrics import RequestMetrics
from privacy.audit import RECEIPT_HEADER
from privacy.classes.names import Who
from privacy.classes.policy import ClassBlocked
from privacy.errors import PrivacyBlocked
from router.budgets.errors import KEPT_ON_EDGE, OverBudget, fallback_of
from router.budgets.limits import NO_SPEND, Spend
from router.channels import EdgeChannel
from router.chat_shapes import aclose, chunks_to_completion, completion_to_chunks
from router.context import CallContext, RouteTracker
from router.learning.features import request_features
from router.policies.edge_only import EdgeOnly
from router.policy import Policy
from router.spans import NO_SPAN, Span, make_current
from router.step import DecisionNote, SessionState, Step
from router.target_costs import TargetCosts
from router.targets import TargetTracker
from router.upstreams import TARGET_KNOB, without_target

log = logging.getLogger("ecgw")


@dataclass
class Outcome:
    """What the request metrics need to know about one request, filled in as it is served."""

    started: float = field(default_factory=time.perf_counter)
    policy: str = "none"
    route: RouteTracker | None = None
    streamed: bool = False
    request_id: str = ""
    session: str | None = None  # once identified: the request is then marked settled when it ends
    session_hash: str | None = None  # what logs and spans carry instead of the id
    arm: str | None = None
    span: Span = NO_SPAN  # the request's span (tracing off: a no-op)
    finish: list[Callable[[int, float], None]] = field(default_factory=list)  # (status, seconds) at the end

    def observe(self, metrics: RequestMetrics, status: int) -> None:
        """The request is over (a stream: its last byte): metrics, the step record, the access log, the span."""
        route = self.route.route if self.route is not None else "none"
        seconds = time.perf_counter() - self.started
        metrics.observe(route=route, policy=self.policy, status=status, streamed=self.streamed, seconds=seconds)
        for done in self.finish:
            try:
                done(status, seconds)
            except Exception:  # bookkeeping must never fail a request that was served
                log.exception("request %s: recording the step failed", self.request_id)
        span = self.span
        log_request(request_id=self.request_id, session=self.session_hash, policy=self.policy, route=route,
                    status=status, latency_s=seconds, arm=self.arm, trace_id=span.trace_id)
        if span.recording:
            span.set("ecgw.route", route)
            span.set("http.status_code", status)
            span.end()


@dataclass
class Started:
    """A step run up to its first output: the response headers, and either a whole completion or a stream of
    chat chunks (its first chunk already pulled, so that a failure before any output still gets a status)."""

    headers: dict[str, str]
    completion: dict[str, Any] | None = None
    session_id: str = ""  # the session as the client names it (x-ecgw-session)
    first: dict[str, Any] | None = None
    rest: AsyncIterator[dict[str, Any]] | None = None
    # Or, relayed (``relay`` asked, an edge-only stream every edge member relays): the client's SSE bytes, the
    # first piece already pulled, ``[DONE]`` included (``EdgeChannel.relay``).
    relayed_first: bytes = b""
    relayed: AsyncIterator[bytes] | None = None

    async def aclose(self) -> None:
        """The stream is not going to be read (the step failed after its first output)."""
        for rest in (self.rest, self.relayed):
            if rest is not None:
                await aclose(rest)

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        """Every chunk, the first included, all with one ``id`` (the first chunk's, or one minted here: an
        upstream that sends none, or litellm minting one per chunk, must not give one answer many ids). The caller
        closes ``rest`` (``aclose``) when it stops early."""
        first = self.first
        one_id = first.get("id") if first is not None else None
        if not isinstance(one_id, str) or not one_id:
            one_id = "chatcmpl-" + uuid.uuid4().hex[:24]
        if first is not None:
            yield first if first.get("id") == one_id else {**first, "id": one_id}
        if self.rest is not None:
            async for chunk in self.rest:
                yield chunk if chunk.get("id") == one_id else {**chunk, "id": one_id}


class StepPipeline:
    """One step, start to end, for every surface; the request's record (``Outcome``) is this pipeline's alone: it
    makes it (``begin``), fills it in as the step runs (``start``) and closes it (``end``)."""

    def __init__(self, services: Services, metrics: RequestMetrics) -> None:
        self.services = services
        self._metrics = metrics
        self._edge_only = EdgeOnly()

    def _target(self, body: dict[str, Any], decision: PolicyDecision) -> str | None:
        """The cloud target this step escalates to: the one a client's model alias names (``cloud.model_aliases``,
        configured names only), else its arm's ``cloud_target``, else its policy's, else the default (None)."""
        model = body.get("model")
        aliases = self.services.settings.cloud.model_aliases
        if isinstance(model, str) and model in aliases:
            return aliases[model]
        arm = decision.knobs.get(TARGET_KNOB)
        return arm if isinstance(arm, str) else self.services.policies.target(decision.policy)

    def begin(self, request_id: str, span: Span = NO_SPAN) -> Outcome:
        """The request's record, which this pipeline alone fills in (``start``) and closes (``end``)."""
        return Outcome(request_id=request_id, span=span)

    def end(self, outcome: Outcome, status: int, identity: Identity) -> None:
        """The request is over (a stream: its last byte): its metrics, step record, log line and span, and its
        settlement once every upstream call it caused is recorded (``accounting.settlement``). A request refused
        before its session was known is settled too (no calls), in its owner's namespace (its owner may ask about
        it, nobody else), or a client waiting on its id would wait for ever."""
        outcome.observe(self._metrics, status)
        self.services.meter.settle(outcome.request_id, outcome.session or identity.prefix)

    async def start(self, headers: Mapping[str, str], body: dict[str, Any], *, identity: Identity,
                    outcome: Outcome, session_hint: str | None = None, relay: bool = False) -> Started:
        """Run the step in ``body`` (chat-completions shape) for the authenticated caller, in named stages:
        identify the session, decide the policy, admit it against the budgets, build the step, run it (on the edge
        when privacy or a budget keeps it there), and say in the headers what happened. ``session_hint`` is a
        surface's own session header (Claude Code's, Codex's), taken after ``X-Session-Id``. ``relay``: the surface
        sends OpenAI's chat stream as it is, so an edge-only stream may come relayed (``Started.relayed``)."""
        session, shown = self._identify(headers, body, identity, session_hint, outcome)
        decision = await self._decide(headers, body, session, identity, outcome)
        spend, limited = await self._admit(body, identity, session.session_id, decision)
        step, edge = self._build(body, identity, session, decision, spend, outcome)
        out_headers = {"x-ecgw-request-id": outcome.request_id, "x-ecgw-session": header_safe(shown),
                       "x-ecgw-policy": decision.policy, **limited}
        if decision.arm is not None:
            out_headers["x-ecgw-arm"] = f"{decision.experiment}:{decision.arm}"
        policy_span = self._policy_span(outcome.span, decision.policy, out_headers)
        ticket = self.services.shadows.draw(step, allowed=identity.shadow, target=self._target(body, decision))
        outcome.finish.append(_StepEnd(self.services, step, policy_span, out_headers, outcome, time.time(), ticket))
        started = await self._run(step, edge, decision.policy, out_headers, relay=relay and ticket is None)
        try:
            await step.route.receipts_durable()  # no receipt leaves before its audit record is journaled
        except BaseException:
            await started.aclose()
            raise
        self._said(started, step, out_headers, outcome, ticket)
        started.session_id = shown  # the client's id: naming it again (same key) reaches this session
        return started

    def _identify(self, headers: Mapping[str, str], body: dict[str, Any], identity: Identity, hint: str | None,
                  outcome: Outcome) -> tuple[SessionState, str]:
        """The session (owner-namespaced internally) and the id the client is shown (its own, or its keyed hash)."""
        s = self.services
        checked_output_limits(body)  # 400 before anything runs: budgets reserve from them
        session_id, shown = s.tenancy.session(identity, headers, body, hint=hint)
        outcome.session = session_id
        outcome.session_hash = s.session_hash(session_id)
        return SessionState(session_id, s.sessions), shown

    async def _decide(self, headers: Mapping[str, str], body: dict[str, Any], session: SessionState,
                      identity: Identity, outcome: Outcome) -> PolicyDecision:
        """The policy and experiment arm for this step; a virtual key's allowed policies hold (403)."""
        decision = await self.services.chooser.decide(headers, body, session)
        outcome.policy = decision.policy
        if identity.policies is not None and decision.policy not in identity.policies:
            raise ClientError(403, f"This key may use the policies {', '.join(identity.policies)}, not "
                                   f"{decision.policy} (chosen for this step); name one of them in 'model'.",
                              type_="permission_error", param="model", code="policy_not_allowed")
        outcome.arm = decision.arm
        span = outcome.span
        if span.recording:  # tracing off: no attributes to set
            for key, value in (("ecgw.session", outcome.session_hash),
                               ("gen_ai.conversation.id", outcome.session_hash),  # the keyed hash, never the id
                               ("ecgw.policy", decision.policy), ("ecgw.experiment", decision.experiment),
                               ("ecgw.arm", decision.arm)):
                span.set(key, value)
        return decision

    async def _admit(self, body: dict[str, Any], identity: Identity, session_id: str,
                     decision: PolicyDecision) -> tuple[Spend, dict[str, str]]:
        """The step's budgets (what every upstream call reserves and settles) and its rate-limit headers; over a
        rate limit, ``RateLimited`` (429) before anything runs."""
        budget = self.services.budgets.for_step(
            key_name=key_name(identity), key_label=identity.label, session_id=session_id,
            experiment=decision.experiment, arm=decision.arm, key_limits=identity.limits)
        if budget is None:
            return NO_SPEND, {}
        return budget, await budget.admit(body)

    def _build(self, body: dict[str, Any], identity: Identity, session: SessionState, decision: PolicyDecision,
               spend: Spend, outcome: Outcome) -> tuple[Step, EdgeChannel]:
        """The step a policy runs: the request, the session's state, the two channels for this step's doors and
        cloud target, the call context, and where the policy notes what it decided."""
        s = self.services
        context = CallContext(request_id=outcome.request_id, session_id=session.session_id, policy=decision.policy,
                              experiment=decision.experiment, arm=decision.arm, owner=identity.owner,
                              key_label=identity.label,
                              who=Who(key_name(identity), identity.tenant if identity.owner is not None else None))
        route = outcome.route = RouteTracker()
        note = DecisionNote()
        arm = f"{decision.experiment}:{decision.arm}" if decision.arm is not None else None
        spend = TargetCosts(spend, note, TargetTracker(s.sessions), s.call_cost, policy=decision.policy, arm=arm)
        doors = s.doors
        edge = doors.edge(context, route, spend)
        return Step(request=body, context=context, session=session, edge=edge,
                    cloud=doors.cloud(context, route, spend, target=self._target(body, decision)), route=route,
                    knobs=without_target(decision.knobs), note=note), edge

    def _policy_span(self, span: Span, policy: str, out_headers: dict[str, str]) -> Span:
        if not span.recording:
            return NO_SPAN
        if span.trace_id is not None:
            out_headers[self.services.settings.observability.trace_header] = span.trace_id
        policy_span = span.child("ecgw.policy", **{"ecgw.policy": policy})
        make_current(policy_span)  # the policy's channel calls, streamed ones included, are its children
        return policy_span

    async def _run(self, step: Step, edge: EdgeChannel, policy_name: str, out_headers: dict[str, str], *,
                   relay: bool) -> Started:
        """The policy's run to its first output; an edge-only stream nobody else reads (no shadow call) comes as the
        upstream's bytes, not its chunks round-tripped. A finding whose action is ``block`` (or images: block, or
        on_privacy_error: edge), a spent cloud budget, or one that cannot be read: whatever the policy wanted, the
        step runs on the edge, and its record keeps what the policy decided."""
        policy = self.services.policies.get(policy_name)
        relayed = (edge.relay(step.request, usage=client_wants_usage(step.request))
                   if relay and step.stream and isinstance(policy, EdgeOnly) else None)
        try:
            if relayed is not None:
                step.decided("edge", "fixed")  # what EdgeOnly decides
                return await _relay_first(relayed, out_headers)
            return await _run(policy, step, out_headers)
        except (PrivacyBlocked, *KEPT_ON_EDGE) as exc:
            fallback = ("data-class" if isinstance(exc, ClassBlocked) else
                        "privacy-blocked" if isinstance(exc, PrivacyBlocked) else fallback_of(exc))
            log.info("request %s: %s; answering on the edge", step.context.request_id, exc)
            out_headers["x-ecgw-fallback"] = fallback
            if isinstance(exc, OverBudget):
                step.note.signal["budget"] = f"{exc.name}/{exc.kind}/{exc.window}"
            wanted = step.note.decision, step.note.reason
            started = await _run(self._edge_only, step, out_headers)
            step.note.decision, step.note.reason = wanted
            return started

    @staticmethod
    def _said(started: Started, step: Step, out_headers: dict[str, str], outcome: Outcome,
              ticket: Ticket | None) -> None:
        """What the step did, in its headers (the sides it used, the receipts of what left, who answered), and the
        edge's answer handed to the shadow call's comparison."""
        route = step.route
        out_headers["x-ecgw-route"] = route.route
        if route.receipts:  # each body that left before the headers (later ones: GET /v1/receipts/{request_id})
            out_headers[RECEIPT_HEADER] = ",".join(route.receipts)
        for side, header in (("edge", "x-ecgw-edge-deployment"), ("cloud", "x-ecgw-cloud-target")):
            if side in route.answered:
                out_headers[header] = route.answered[side]
        outcome.streamed = started.completion is None
        if ticket is not None:  # the edge's answer, as the client gets it, for the shadow call's comparison
            ticket.completion = started.completion
            if started.first is not None:
                ticket.chunks.append(started.first)
            if started.rest is not None:
                started.rest = ticket.collect(started.rest)


class _StepEnd:
    """At the end of a request: the step's decision record (into the metering store) and the policy span."""

    def __init__(self, services: Services, step: Step, span: Span, headers: dict[str, str], outcome: Outcome,
                 started_at: float, ticket: Ticket | None = None) -> None:
        self._services, self._step, self._span = services, step, span
        self._headers, self._outcome, self._started_at = headers, outcome, started_at
        self._ticket = ticket

    def __call__(self, status: int, seconds: float) -> None:
        step, note, span = self._step, self._step.note, self._span
        route = step.route.route
        decision = note.decision or (route if route != "none" else None)
        reason = note.reason or ("fixed" if decision is not None else None)
        if span.recording:
            span.set("ecgw.decision", decision)
            span.set("ecgw.reason", reason)
            for key, value in note.signal.items():
                span.set(f"ecgw.signal.{key}", value)
            span.end()
        ctx = step.context
        record = StepRecord(
            request_id=ctx.request_id, session_id=ctx.session_id, policy=ctx.policy, started_at=self._started_at,
            latency_s=seconds, status=status, route=route, decision=decision, reason=reason,
            signal={**note.signal, **_chains(step.route)}, experiment=ctx.experiment, arm=ctx.arm,
            fallback=self._headers.get("x-ecgw-fallback"), trace_id=self._outcome.span.trace_id,
            features={**request_features(step.request), **note.features, "latency_s": round(seconds, 4)})
        if self._ticket is None or not self._services.shadows.offer(self._ticket, record):
            self._services.meter.record_step(record)  # else the shadow call writes it, with its label


def _chains(route: RouteTracker) -> dict[str, str]:
    """The members each side tried before one answered (``edge_chain``, ``cloud_chain``), when it was not the
    first: the step record keeps the failover; and why the cloud door made no call, when it did not
    (``cloud_stopped``, ``router.stops``)."""
    out = {f"{side}_chain": chain for side in ("edge", "cloud") if (chain := route.chain(side)) is not None}
    if route.stopped:
        out["cloud_stopped"] = ",".join(route.stopped)
    if route.kept_off_classes:  # the data class that kept a call off every tier (x-ecgw-fallback: data-class)
        out["data_class"] = ",".join(dict.fromkeys(route.kept_off_classes))
    return out


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


async def _relay_first(relayed: AsyncIterator[bytes], headers: dict[str, str]) -> Started:
    rest = relayed.__aiter__()
    try:
        return Started(headers, relayed_first=await rest.__anext__(), relayed=rest)
    except BaseException:  # a relayed stream always ends with its [DONE] piece, so it never ends here
        await aclose(rest)
        raise


async def _as_stream(response: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    for chunk in completion_to_chunks(response):
        yield chunk


def header_safe(value: str) -> str:
    """Session ids come from request bodies (``user``, ``metadata``): anything outside printable ASCII is
    percent-encoded, so a header can never fail or be split."""
    if value.isascii() and value.isprintable():
        return value
    return quote(value, safe="")
