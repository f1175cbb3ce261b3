"""Per-step OpenTelemetry traces: a span per client request, children for the policy, each edge/cloud call (with
its purpose), protection, restore and metering (``router.spans`` is the seam; this is its OpenTelemetry side).

Off by default: ``observability.otlp_endpoint`` turns on OTLP/HTTP export. Attributes are labels and numbers —
the session as a hash, policy, arm, route, token counts — never prompt or answer content."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Protocol

from router.spans import NO_SPAN, Attribute, Span


class SessionHasher:
    """The session as traces and logs show it: a keyed hash (HMAC-SHA256 with a key derived from the gateway's
    secrets key, ``session-trace``), stable across workers sharing that key, so a trace can be matched to the
    dashboard's session (``ecgw.session`` there too) without the id — which may come from a user field — leaving
    the gateway, and so nobody holding spans or logs can join them to an id they guess."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def __call__(self, session_id: str) -> str:
        return hmac.new(self._key, session_id.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]


class Tracing(Protocol):
    enabled: bool

    def request(self, name: str, **attributes: Attribute | None) -> Span: ...

    def shutdown(self) -> None: ...


class NoTracing:
    enabled = False

    def request(self, name: str, **attributes: Attribute | None) -> Span:
        return NO_SPAN

    def shutdown(self) -> None:
        return None


class _OTelSpan:
    def __init__(self, tracer: Any, span: Any, parent: _OTelSpan | None) -> None:
        self._tracer = tracer
        self._span = span
        self._parent = parent
        self._totals: dict[str, int | float] = {}

    recording = True

    @property
    def trace_id(self) -> str | None:
        return format(self._span.get_span_context().trace_id, "032x")

    def set(self, key: str, value: Attribute | None) -> None:
        if value is not None:
            self._span.set_attribute(key, value)

    def add(self, key: str, amount: int | float) -> None:
        self._totals[key] = self._totals.get(key, 0) + amount
        self._span.set_attribute(key, self._totals[key])
        if self._parent is not None:
            self._parent.add(key, amount)

    def child(self, name: str, **attributes: Attribute | None) -> Span:
        from opentelemetry import trace

        span = self._tracer.start_span(name, context=trace.set_span_in_context(self._span),
                                       attributes={k: v for k, v in attributes.items() if v is not None})
        return _OTelSpan(self._tracer, span, self)

    def end(self, error: BaseException | None = None) -> None:
        if error is not None and not isinstance(error, GeneratorExit):
            from opentelemetry.trace import Status, StatusCode

            # The type only: an exception's message may quote the request.
            self._span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            self._span.set_attribute("error.type", type(error).__name__)
        self._span.end()


class OTelTracing:
    """Spans from an OpenTelemetry tracer provider (tests inject one with an in-memory exporter)."""

    enabled = True

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer("ecgw")

    def request(self, name: str, **attributes: Attribute | None) -> Span:
        from opentelemetry.context import Context

        span = self._tracer.start_span(name, context=Context(),  # a new trace per request
                                       attributes={k: v for k, v in attributes.items() if v is not None})
        return _OTelSpan(self._tracer, span, None)

    def shutdown(self) -> None:
        self._provider.shutdown()


def build_tracing(otlp_endpoint: str | None, *, service_name: str = "ecgw") -> Tracing:
    """No tracing unless an OTLP endpoint is configured; then spans are batched to it over HTTP/protobuf."""
    if not otlp_endpoint:
        return NoTracing()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    endpoint = otlp_endpoint.rstrip("/")
    if not endpoint.endswith("/v1/traces"):
        endpoint += "/v1/traces"
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return OTelTracing(provider)
