"""The two channels a policy may use. ``CloudChannel`` is the single door to the cloud.

edge:  upstream → meter
cloud: what may leave (the provider boundary) → protect (privacy) → upstream → restore → meter
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Protocol

from accounting.calls import Meter, UpstreamCall
from accounting.usage import MalformedUsage, normalise
from privacy import Protection, Protector
from router.budgets.ledger import Hold
from router.budgets.limits import NO_SPEND, Spend
from router.context import CallContext, RouteTracker
from router.errors import UpstreamError
from router.spans import Span, current, ending


class Upstream(Protocol):
    """A model server. Implementations live in ``gateway.upstreams``; they set ``model`` in the body."""

    side: str
    provider: str
    model: str

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]: ...

    def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]: ...

    async def aclose(self) -> None:
        """Close its connections; the last call on an upstream."""
        ...


class CloudUpstream(Upstream, Protocol):
    """The cloud as ``CloudChannel`` sees it (``gateway.upstreams.boundary``): it also says which part of a body
    may leave at all, so the privacy walk, the last check and the meter see exactly what the provider gets."""

    def outgoing(self, body: dict[str, Any]) -> dict[str, Any]: ...


class Channel(Protocol):
    side: str
    model: str

    async def complete(self, body: dict[str, Any], *, purpose: str = "step") -> dict[str, Any]: ...

    def stream(self, body: dict[str, Any], *, purpose: str = "step") -> AsyncIterator[dict[str, Any]]: ...


def _completion_text(response: dict[str, Any]) -> str:
    parts: list[str] = []
    for choice in response.get("choices") or ():
        message = choice.get("message") or {}
        for key in ("content", "reasoning_content", "reasoning"):
            value = message.get(key)
            if isinstance(value, str):
                parts.append(value)
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            parts.append(str(function.get("name") or ""))
            parts.append(str(function.get("arguments") or ""))
    return "".join(parts)


def _chunk_text(chunk: dict[str, Any], parts: list[str]) -> None:
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        for key in ("content", "reasoning_content", "reasoning"):
            value = delta.get(key)
            if isinstance(value, str):
                parts.append(value)
        for call in delta.get("tool_calls") or ():
            function = call.get("function") or {}
            name = function.get("name")
            if name:
                parts.append(str(name))
            arguments = function.get("arguments")
            if arguments:
                parts.append(str(arguments))


class _MeteredChannel:
    """Times and meters calls to one upstream; subclasses add what runs around the upstream."""

    def __init__(self, upstream: Upstream, meter: Meter, context: CallContext, route: RouteTracker,
                 spend: Spend = NO_SPEND) -> None:
        self._upstream = upstream
        self._meter = meter
        self._context = context
        self._route = route
        self._spend = spend  # the step's budgets: reserved before each upstream call, settled after it
        self.side = upstream.side
        self.model = upstream.model

    def _open(self, purpose: str) -> Span:
        """The span of one upstream call, a child of the step's current span (a no-op with tracing off)."""
        return current().child(f"ecgw.{self.side}.call", **{"ecgw.side": self.side, "ecgw.purpose": purpose,
                                                            "ecgw.model": self.model})

    def _record(
        self,
        *,
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
        span.set("ecgw.status", status)
        try:  # for the span's attributes only (the meter normalises on its writer): skipped with tracing off
            tokens = normalise(usage) if usage and span.recording else None
        except MalformedUsage:
            tokens = None
        if tokens is not None:  # also rolls up into the step's span
            span.add(f"ecgw.{self.side}.tokens.raw_input", tokens.raw_input)
            span.add(f"ecgw.{self.side}.tokens.cache_read", tokens.cache_read)
            span.add(f"ecgw.{self.side}.tokens.output", tokens.output)
        with ending(span.child("ecgw.meter")):
            return self._record_call(ctx, purpose=purpose, streamed=streamed, status=status, started_at=started_at,
                                     t0=t0, ttft=ttft, usage=usage, sent=sent, output_text=output_text)

    def _record_call(self, ctx: CallContext, *, purpose: str, streamed: bool, status: int, started_at: float,
                     t0: float, ttft: float | None, usage: dict[str, Any] | None, sent: dict[str, Any],
                     output_text: str) -> UpstreamCall:
        call = UpstreamCall(
            request_id=ctx.request_id,
            session_id=ctx.session_id,
            policy=ctx.policy,
            experiment=ctx.experiment,
            arm=ctx.arm,
            purpose=purpose,
            side=self._upstream.side,
            provider=self._upstream.provider,
            model=self._upstream.model,
            streamed=streamed,
            status=status,
            started_at=started_at,
            latency_s=time.perf_counter() - t0,
            ttft_s=ttft,
            usage=usage,
            request_body=sent,
            output_text=output_text,
        )
        self._meter.record(call)
        return call

    async def _complete(self, sent: dict[str, Any], purpose: str, span: Span, hold: Hold | None) -> dict[str, Any]:
        self._route.used(self.side)
        started_at, t0 = time.time(), time.perf_counter()
        try:
            response = await self._upstream.complete(sent)
        except BaseException as exc:  # a failure, or a cancellation (499): metered either way
            status = exc.status if isinstance(exc, UpstreamError) else 499
            call = self._record(span=span, purpose=purpose, streamed=False, status=status, started_at=started_at,
                                t0=t0, ttft=None, usage=None, sent=sent, output_text="")
            await self._spend.settle(hold, call)
            raise
        latency = time.perf_counter() - t0
        call = self._record(span=span, purpose=purpose, streamed=False, status=200, started_at=started_at, t0=t0,
                            ttft=latency, usage=response.get("usage"), sent=sent,
                            output_text=_completion_text(response))
        await self._spend.settle(hold, call)
        return response

    async def _stream(self, sent: dict[str, Any], purpose: str, span: Span,
                      hold: Hold | None) -> AsyncGenerator[dict[str, Any], None]:
        self._route.used(self.side)
        started_at, t0 = time.time(), time.perf_counter()
        ttft: float | None = None
        usage: dict[str, Any] | None = None
        parts: list[str] = []
        status = 499  # the consumer stopped early (client went away, or a policy cancelled the stream)
        try:
            async for chunk in self._upstream.stream(sent):
                if ttft is None:
                    ttft = time.perf_counter() - t0
                if chunk.get("usage"):
                    usage = chunk["usage"]
                _chunk_text(chunk, parts)
                yield chunk
            status = 200
        except UpstreamError as exc:
            status = exc.status
            raise
        finally:
            call = self._record(span=span, purpose=purpose, streamed=True, status=status, started_at=started_at,
                                t0=t0, ttft=ttft, usage=usage, sent=sent, output_text="".join(parts))
            await self._spend.settle(hold, call)


class EdgeChannel(_MeteredChannel):
    """The local model: upstream → meter."""

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


class CloudChannel(_MeteredChannel):
    """The only way to the cloud: protect → upstream → restore → meter. Protection failure = no call."""

    def __init__(
        self, upstream: CloudUpstream, meter: Meter, context: CallContext, route: RouteTracker, protector: Protector,
        spend: Spend = NO_SPEND,
    ) -> None:
        super().__init__(upstream, meter, context, route, spend)
        self._cloud = upstream
        self._protector = protector

    def _unsent(self, purpose: str, body: dict[str, Any]) -> UpstreamCall:
        """A call protection stopped before it left: it costs nothing, so its reservation is given back."""
        ctx = self._context
        return UpstreamCall(request_id=ctx.request_id, session_id=ctx.session_id, policy=ctx.policy,
                            purpose=purpose, side="cloud", provider=self._upstream.provider, model=self.model,
                            streamed=False, status=403, started_at=time.time(), latency_s=0.0)

    async def _protect(self, body: dict[str, Any]) -> Protection:
        """Protection of what may leave: the fields the boundary drops are not sent, so they are not scanned."""
        ctx = self._context
        return await self._protector.protect(self._cloud.outgoing(body), session_id=ctx.session_id,
                                             request_id=ctx.request_id, experiment=ctx.experiment)

    async def complete(self, body: dict[str, Any], *, purpose: str = "step") -> dict[str, Any]:
        # The budgets first: a call they refuse is neither protected nor audited, since it never leaves.
        hold = await self._spend.reserve("cloud", body, self.model)
        with ending(self._open(purpose)) as span:
            try:
                with ending(span.child("ecgw.protect")):
                    protection = await self._protect(body)
            except BaseException:
                await self._spend.settle(hold, self._unsent(purpose, body))
                raise
            response = await self._complete(protection.body, purpose, span, hold)
            with ending(span.child("ecgw.restore")):
                return protection.restore(response)

    async def stream(self, body: dict[str, Any], *, purpose: str = "step") -> AsyncIterator[dict[str, Any]]:
        hold = await self._spend.reserve("cloud", body, self.model)
        with ending(self._open(purpose)) as span:
            try:
                with ending(span.child("ecgw.protect")):
                    protection = await self._protect(body)
            except BaseException:
                await self._spend.settle(hold, self._unsent(purpose, body))
                raise
            restorer = protection.stream_restorer()
            upstream = self._stream(protection.body, purpose, span, hold)
            with ending(span.child("ecgw.restore")):  # restore runs chunk by chunk while the stream flows
                try:
                    async for chunk in upstream:
                        for out in restorer.feed(chunk):
                            yield out
                finally:
                    await upstream.aclose()
                for out in restorer.flush():
                    yield out
