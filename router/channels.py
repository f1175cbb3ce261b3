"""The two channels a policy may use. ``CloudChannel`` is the single door to the cloud.

edge:  upstream → meter
cloud: reserve (budgets) → what may leave (the provider boundary) → protect (privacy) → upstream → meter → restore
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from accounting.calls import Meter, UpstreamCall
from accounting.usage import MalformedUsage, normalise
from privacy import Protection, Protector
from privacy.classes.policy import ClassBlocked
from router import genai
from router.budgets.ledger import Hold
from router.budgets.limits import NO_SPEND, Spend
from router.budgets.measures import one_cap
from router.context import CallContext, RouteTracker
from router.errors import UpstreamError
from router.provider_state import foreign_state
from router.spans import Span, current, ending
from router.stops import stop_reason
from router.upstreams import Call, Member, Pool, cache_salt, first_token_within, relayed_token, retryable

log = logging.getLogger("ecgw")

class Channel(Protocol):
    side: str
    model: str

    async def complete(self, body: dict[str, Any], *, purpose: str = "step") -> dict[str, Any]: ...

    def stream(self, body: dict[str, Any], *, purpose: str = "step") -> AsyncIterator[dict[str, Any]]: ...


def _said(message: Mapping[str, Any], parts: list[str]) -> None:
    """What a message (or a stream's delta) says — content, reasoning, tool calls' names and arguments — onto
    ``parts``: the text a call's output is measured by."""
    for key in ("content", "reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str):
            parts.append(value)
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(str(function.get("name") or ""))
        parts.append(str(function.get("arguments") or ""))


def _completion_text(response: dict[str, Any]) -> str:
    parts: list[str] = []
    for choice in response.get("choices") or ():
        _said(choice.get("message") or {}, parts)
    return "".join(parts)


def _chunk_text(chunk: dict[str, Any], parts: list[str]) -> None:
    for choice in chunk.get("choices") or ():
        _said(choice.get("delta") or {}, parts)


@runtime_checkable
class ClassReading(Protocol):
    """A channel that can say which data classes a body holds before anything leaves (the cloud door)."""

    async def classes(self, body: dict[str, Any]) -> frozenset[str]: ...


Sending = Callable[[Member, dict[str, Any]], None]  # told of each body as one member is about to get it


class CloudPool(Pool, Protocol):
    """The cloud targets as ``CloudChannel`` sees them: a pool that also says which part of a body may leave for
    any of its targets (the provider boundary), so the privacy walk, the last check and the meter see everything a
    target can get; each target's own allowlist then takes its part of the protected body."""

    def outgoing(self, body: dict[str, Any]) -> dict[str, Any]: ...


class _MeteredChannel:
    """Times and meters calls to one pool of upstreams; subclasses add what runs around the upstream. A call tries
    the pool's plan in order while nothing has reached the consumer and the failure is ``retryable``; every
    attempt is metered under the member that made it, and the step's budget hold is settled by the last one."""

    def __init__(self, pool: Pool, meter: Meter, context: CallContext, route: RouteTracker, call: Call,
                 spend: Spend = NO_SPEND) -> None:
        self._pool = pool
        self._meter = meter
        self._context = context
        self._route = route
        self._call = call
        self._spend = spend  # the step's budgets: reserved before each upstream call, settled after it
        self.side = pool.side
        self.model = pool.model

    def _open(self, purpose: str) -> Span:
        """The span of one upstream call, a child of the step's current span (a no-op with tracing off)."""
        return current().child(f"ecgw.{self.side}.call", **{"ecgw.side": self.side, "ecgw.purpose": purpose,
                                                            "ecgw.model": self.model, **genai.requested(self.model)})

    def _prepare(self, member: Member, body: dict[str, Any], plan: Sequence[Member]) -> dict[str, Any]:
        """The body as ``member`` gets it (subclasses: the edge's cache salt, a fallback's provider state)."""
        return body

    def _record(
        self,
        *,
        member: Member,
        span: Span,
        purpose: str,
        streamed: bool,
        status: int,
        started_at: float,
        t0: float,
        ttft: float | None,
        usage: dict[str, Any] | None,
        sent: dict[str, Any],
        output_text: str,
    ) -> UpstreamCall:
        ctx = self._context
        upstream = member.upstream
        call = UpstreamCall(
            request_id=ctx.request_id, session_id=ctx.session_id, policy=ctx.policy, experiment=ctx.experiment,
            arm=ctx.arm, purpose=purpose, side=upstream.side, provider=upstream.provider, model=upstream.model,
            deployment=member.name, key_label=ctx.key_label, streamed=streamed, status=status, started_at=started_at,
            latency_s=time.perf_counter() - t0, ttft_s=ttft, usage=usage, request_body=sent,
            output_text=output_text)
        if not span.recording:  # tracing off: no attributes, no meter span
            self._meter.record(call)
            return call
        span.set("ecgw.status", status)
        span.set("ecgw.deployment", member.name)
        try:  # for the span's attributes only (the meter normalises on its writer)
            tokens = normalise(usage) if usage else None
        except MalformedUsage:
            tokens = None
        if tokens is not None:  # also rolls up into the step's span
            genai.used(span, tokens)
            span.add(f"ecgw.{self.side}.tokens.raw_input", tokens.raw_input)
            span.add(f"ecgw.{self.side}.tokens.cache_read", tokens.cache_read)
            span.add(f"ecgw.{self.side}.tokens.output", tokens.output)
        with ending(span.child("ecgw.meter")):
            self._meter.record(call)
        return call

    def _next(self, member: Member, exc: UpstreamError, delivered: bool, last: bool) -> bool:
        """After a failed attempt: whether to try the plan's next member (the failure was noted either way)."""
        self._route.failed(self.side, member.name, exc.status)
        if delivered or last or not retryable(exc):
            return False
        log.warning("request %s: the %s %s failed before answering (HTTP %s: %s); trying the next one",
                    self._context.request_id, self.side, member.name, exc.status, exc.message)
        return True

    async def _complete(self, body: dict[str, Any], purpose: str, span: Span, hold: Hold | None,
                        sending: Sending | None = None, *, plan: Sequence[Member] | None = None) -> dict[str, Any]:
        self._route.used(self.side)
        plan = plan if plan is not None else self._pool.plan(self._call)
        for index, member in enumerate(plan):
            sent = self._prepare(member, body, plan)
            if sending is not None:
                sending(member, sent)
            started_at, t0 = time.time(), time.perf_counter()
            self._pool.begin(member)
            try:
                response = await member.upstream.complete(sent)
            except UpstreamError as exc:
                self._pool.end(member, exc)
                call = self._record(member=member, span=span, purpose=purpose, streamed=False, status=exc.status,
                                    started_at=started_at, t0=t0, ttft=None, usage=None, sent=sent, output_text="")
                if self._next(member, exc, False, index == len(plan) - 1):
                    continue  # a failed attempt cost nothing; the hold waits for the one that answers
                await self._spend.settle(hold, call)
                raise
            except BaseException:  # a cancellation (499): metered too
                self._pool.end(member, None)
                call = self._record(member=member, span=span, purpose=purpose, streamed=False, status=499,
                                    started_at=started_at, t0=t0, ttft=None, usage=None, sent=sent, output_text="")
                await self._spend.settle(hold, call)
                raise
            self._pool.end(member, None)
            latency = time.perf_counter() - t0
            if span.recording:
                genai.answered(span, provider=member.upstream.provider, model=response.get("model"),
                               reasons=genai.finish_reasons(response.get("choices") or ()))
            call = self._record(member=member, span=span, purpose=purpose, streamed=False, status=200,
                                started_at=started_at, t0=t0, ttft=latency, usage=response.get("usage"), sent=sent,
                                output_text=_completion_text(response))
            self._route.answered_by(self.side, member.name)
            await self._spend.settle(hold, call)
            return response
        raise AssertionError("a pool planned no member")  # every pool plans at least one

    async def _stream(self, body: dict[str, Any], purpose: str, span: Span, hold: Hold | None,
                      sending: Sending | None = None, *, plan: Sequence[Member] | None = None,
                      relay_usage: bool | None = None) -> AsyncGenerator[Any, None]:
        """The chat chunks of the call; with ``relay_usage`` set (every member of ``plan`` relays), the bytes of
        each relayed piece instead (``Relayed.data``), metered from the chunks it carries."""
        self._route.used(self.side)
        plan = plan if plan is not None else self._pool.plan(self._call)
        for index, member in enumerate(plan):
            sent = self._prepare(member, body, plan)
            if sending is not None:
                sending(member, sent)
            started_at, t0 = time.time(), time.perf_counter()
            ttft: float | None = None
            usage: dict[str, Any] | None = None
            parts: list[str] = []
            reasons: list[str] = []
            answered_model: str | None = None
            status = 499  # the consumer stopped early (client went away, or a policy cancelled the stream)
            failure: UpstreamError | None = None
            retry = False
            delivered = False
            self._pool.begin(member)
            upstream: AsyncGenerator[Any, None]
            if relay_usage is not None:
                assert member.relay is not None  # ``relay`` planned only members that relay
                upstream = first_token_within(member.relay.relay(sent, usage=relay_usage),
                                              member.first_token_timeout_s, side=self.side, name=member.name,
                                              token=relayed_token)
            else:
                upstream = first_token_within(member.upstream.stream(sent), member.first_token_timeout_s,
                                              side=self.side, name=member.name)
            recording = span.recording  # the answered model and finish reasons are the span's only
            try:
                async for item in upstream:
                    if ttft is None:
                        ttft = time.perf_counter() - t0
                    for chunk in item.chunks if relay_usage is not None else (item,):
                        if chunk.get("usage"):
                            usage = chunk["usage"]
                        if recording:
                            answered_model = answered_model or chunk.get("model")
                            reasons += genai.finish_reasons(chunk.get("choices") or ())
                        _chunk_text(chunk, parts)
                    if not delivered:  # this member answers: named before the client's headers leave
                        delivered = True
                        self._route.answered_by(self.side, member.name)
                    yield item.data if relay_usage is not None else item
                status = 200
            except UpstreamError as exc:
                status, failure = exc.status, exc
                retry = self._next(member, exc, delivered, index == len(plan) - 1)
                if not retry:
                    raise
            finally:
                await upstream.aclose()
                self._pool.end(member, failure)
                if recording:
                    genai.answered(span, provider=member.upstream.provider, model=answered_model, reasons=reasons)
                call = self._record(member=member, span=span, purpose=purpose, streamed=True, status=status,
                                    started_at=started_at, t0=t0, ttft=ttft, usage=usage, sent=sent,
                                    output_text="".join(parts))
                if not retry:
                    await self._spend.settle(hold, call)
            if failure is None:
                self._route.answered_by(self.side, member.name)  # a stream with no chunk at all, too
                return


class EdgeChannel(_MeteredChannel):
    """The local model: upstream → meter."""

    def _prepare(self, member: Member, body: dict[str, Any], plan: Sequence[Member]) -> dict[str, Any]:
        # The prefix cache is shared within a tenant only; a request never names its own salt (it could name
        # another tenant's and time its hits).
        if not member.salted and "cache_salt" not in body:
            return body
        out = {k: v for k, v in body.items() if k != "cache_salt"}
        if member.salted:
            out["cache_salt"] = cache_salt(self._call.owner)
        return out

    async def complete(self, body: dict[str, Any], *, purpose: str = "step") -> dict[str, Any]:
        hold = await self._spend.reserve("edge", body, self.model)  # an edge_pflops budget spent: 429
        with ending(self._open(purpose)) as span:
            return await self._complete(body, purpose, span, hold)

    async def stream(self, body: dict[str, Any], *, purpose: str = "step") -> AsyncIterator[dict[str, Any]]:
        hold = await self._spend.reserve("edge", body, self.model)
        with ending(self._open(purpose)) as span:
            upstream = self._stream(body, purpose, span, hold)
            try:
                async for chunk in upstream:
                    yield chunk
            finally:  # a consumer that stops early meters the call now, not when the generator is collected
                await upstream.aclose()

    def relay(self, body: dict[str, Any], *, usage: bool, purpose: str = "step") -> AsyncIterator[bytes] | None:
        """The stream of ``body`` as the client's SSE bytes, relayed from the upstream (``router.upstreams.Relay``),
        when every member the call may go to can relay it; else None (``stream`` it). Reserved, metered, settled
        and failed over as ``stream`` is; ``usage``: the client asked for the usage chunk."""
        plan = self._pool.plan(self._call)
        if not all(member.relay is not None and member.relay.relays(body) for member in plan):
            return None
        return self._relayed(body, usage, purpose, plan)

    async def _relayed(self, body: dict[str, Any], usage: bool, purpose: str,
                       plan: Sequence[Member]) -> AsyncIterator[bytes]:
        hold = await self._spend.reserve("edge", body, self.model)
        with ending(self._open(purpose)) as span:
            upstream = self._stream(body, purpose, span, hold, plan=plan, relay_usage=usage)
            try:
                async for data in upstream:
                    yield data
            finally:
                await upstream.aclose()


class CloudChannel(_MeteredChannel):
    """The only way to the cloud: reserve → protect → upstream → meter → restore. Protection failure = no call."""

    def __init__(self, pool: CloudPool, meter: Meter, context: CallContext, route: RouteTracker, call: Call,
                 protector: Protector, spend: Spend = NO_SPEND) -> None:
        super().__init__(pool, meter, context, route, call, spend)
        self._cloud = pool
        self._protector = protector

    def _unsent(self, purpose: str, body: dict[str, Any]) -> UpstreamCall:
        """A call protection stopped before it left: it costs nothing, so its reservation is given back."""
        ctx = self._context
        first = self._pool.plan(self._call)[0]
        return UpstreamCall(request_id=ctx.request_id, session_id=ctx.session_id, policy=ctx.policy,
                            purpose=purpose, side="cloud", provider=first.upstream.provider, model=first.upstream.model,
                            deployment=first.name, key_label=ctx.key_label, streamed=False, status=403,
                            started_at=time.time(), latency_s=0.0)

    def _prepare(self, member: Member, body: dict[str, Any], plan: Sequence[Member]) -> dict[str, Any]:
        # The same protected body (the session's placeholders unchanged) for every target, less what only another
        # provider understands (a fallback across providers).
        out, dropped = foreign_state(body, member.upstream.provider)
        if dropped:
            log.info("request %s: the cloud target %s (%s) does not take %s; dropped for it",
                     self._context.request_id, member.name, member.upstream.provider, ", ".join(dropped))
        return out

    def _receipts(self, protection: Protection) -> Sending:
        """Each body handed to a target gets its signed egress receipt, for the response's headers (or, once they
        left, ``GET /v1/receipts/{request_id}``); its audit record is journaled while the body travels, and the
        pipeline awaits that before the headers leave (``RouteTracker.receipts_durable``)."""

        def sending(member: Member, sent: dict[str, Any]) -> None:
            receipt = protection.receipt(member.name, sent, tier=member.tier)
            if receipt is not None:
                self._route.issued(receipt, protection.durable())

        return sending

    async def _protect(self, body: dict[str, Any], plan: Sequence[Member]) -> Protection:
        """Protection of what may leave: the fields the boundary drops are not sent, so they are not scanned; for
        the first tier of ``plan`` the caller's class policy lets the body reach (``privacy.classes``)."""
        ctx = self._context
        return await self._protector.protect(self._cloud.outgoing(body), session_id=ctx.session_id,
                                             request_id=ctx.request_id, experiment=ctx.experiment,
                                             tiers=[member.tier for member in plan], who=ctx.who)

    def _stopped(self, exc: BaseException) -> None:
        reason = stop_reason(exc)
        if reason is not None:
            self._route.stopped_by(reason)
        if isinstance(exc, ClassBlocked):
            self._route.kept_off(exc.data_class)

    async def _reserve(self, body: dict[str, Any], model: str) -> tuple[dict[str, Any], Hold | None]:
        """The body as it will be sent — one output cap, the one its reservation counted — and the reservation."""
        body = one_cap(body)
        try:
            hold = await self._spend.reserve("cloud", body, model)
        except BaseException as exc:
            self._stopped(exc)
            raise
        return (one_cap(body, hold.cap) if hold is not None else body), hold

    async def _protected(self, body: dict[str, Any], purpose: str, span: Span,
                         hold: Hold | None) -> tuple[Protection, Sequence[Member], Hold | None]:
        """``body`` protected, in the call's span, with the members of the plan whose tier may receive it (the
        first target of the fallback chain that may, then the rest that may) and the hold reserved on the first
        of them. Protection that fails (or blocks) settles the hold as unsent."""
        plan = self._pool.plan(self._call)
        try:
            with ending(span.child("ecgw.protect")):
                protection = await self._protect(body, plan)
        except BaseException as exc:
            self._stopped(exc)
            await self._spend.settle(hold, self._unsent(purpose, body))
            raise
        allowed = [member for member in plan if protection.permits(member.tier)]
        if allowed[0] is not plan[0]:  # protection chose a tier one of them has: never empty
            log.info("request %s: the body holds data the cloud target %s (%s) may not receive; it goes to %s (%s)",
                     self._context.request_id, plan[0].name, plan[0].tier, allowed[0].name, allowed[0].tier)
            if allowed[0].upstream.model != self.model:  # the budget is reserved on the target that will answer
                await self._spend.settle(hold, self._unsent(purpose, body))
                _, hold = await self._reserve(body, allowed[0].upstream.model)  # the body states its cap already
        return protection, allowed, hold

    async def classes(self, body: dict[str, Any]) -> frozenset[str]:
        """The data classes the body this door would protect holds (``privacy.classes``); nothing leaves."""
        ctx = self._context
        return await self._protector.classes(self._cloud.outgoing(body), session_id=ctx.session_id, who=ctx.who)

    async def complete(self, body: dict[str, Any], *, purpose: str = "step") -> dict[str, Any]:
        # The budgets first: a call they refuse is neither protected nor audited, since it never leaves.
        body, hold = await self._reserve(body, self.model)
        with ending(self._open(purpose)) as span:
            protection, plan, hold = await self._protected(body, purpose, span, hold)
            response = await self._complete(protection.body, purpose, span, hold, self._receipts(protection),
                                             plan=plan)
            with ending(span.child("ecgw.restore")):
                return protection.restore(response)

    async def stream(self, body: dict[str, Any], *, purpose: str = "step") -> AsyncIterator[dict[str, Any]]:
        body, hold = await self._reserve(body, self.model)
        with ending(self._open(purpose)) as span:
            protection, plan, hold = await self._protected(body, purpose, span, hold)
            restorer = protection.stream_restorer()
            upstream = self._stream(protection.body, purpose, span, hold, self._receipts(protection), plan=plan)
            with ending(span.child("ecgw.restore")):  # restore runs chunk by chunk while the stream flows
                try:
                    try:
                        async for chunk in upstream:
                            for out in restorer.feed(chunk):
                                yield out
                    finally:
                        await upstream.aclose()
                    for out in restorer.flush():
                        yield out
                finally:
                    restorer.close()  # a stream cut short still owes the audit its record
