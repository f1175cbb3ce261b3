"""Per-step OpenTelemetry traces, read back from the SDK's in-memory exporter: the span tree of a step-routing
request that escalates, its attributes, the trace id in the response, and no registered value in any attribute."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from accounting.calls import MemoryMeter
from accounting.usage import normalise
from gateway.service import Services
from gateway.telemetry.tracing import OTelTracing
from router import channels
from tests.fakes.model_server import ModelServer, Reply
from tests.observability.gateways import running_gateway

UNSURE = {f"t{i}": 1.0 for i in range(20)}  # a flat first token: H = ln 20 ≈ 3.0 nats > τ
NAME, PHONE = "Quentin Vasquez-Orlov", "+1 415 555 0199"
SESSION = "trace-session-7"
UNITS = {"items": [{"entity_id": "p1", "name": NAME, "sensitive_fields": [
    {"field": "name", "value": NAME, "dimension": "identity", "weight": 1.0},
    {"field": "phone", "value": PHONE, "dimension": "contact", "weight": 1.0}]}]}


@pytest.fixture()
def exporter() -> Iterator[InMemorySpanExporter]:
    found = InMemorySpanExporter()
    yield found
    found.clear()


def _escalating_step(edge: ModelServer, cloud: ModelServer, exporter: InMemorySpanExporter, *,
                     stream: bool) -> tuple[httpx.Response, MemoryMeter, list[ReadableSpan], Services]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter = MemoryMeter()
    with running_gateway(edge, cloud, meter=meter, tracing=OTelTracing(provider),
                         policy={"default": "step-routing",
                                 "knobs": {"step-routing": {"mode": "probe", "tau": 1.5}}}) as (url, services):
        put = httpx.put(f"{url}/v1/sessions/{SESSION}/units", json=UNITS, timeout=30)
        assert put.status_code == 200, put.text
        edge.script(Reply("t0", first_token_top=UNSURE))
        cloud.script(Reply("I will call them."))
        response = httpx.post(f"{url}/v1/chat/completions", headers={"X-Session-Id": SESSION}, timeout=60, json={
            "model": "agent", "stream": stream,
            "messages": [{"role": "user", "content": f"Call {NAME} at {PHONE} about the invoice."}]})
        assert response.status_code == 200, response.text
        response.read()
    return response, meter, list(exporter.get_finished_spans()), services


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return sorted((s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id),
                  key=lambda s: s.start_time or 0)


@pytest.mark.parametrize("stream", [False, True])
def test_escalating_step_routing_request_has_the_span_tree_and_attributes(
        edge: ModelServer, cloud: ModelServer, exporter: InMemorySpanExporter, stream: bool) -> None:
    response, meter, spans, services = _escalating_step(edge, cloud, exporter, stream=stream)
    (root,) = [s for s in spans if s.name == "ecgw.request"]
    assert root.parent is None and root.context is not None
    assert response.headers["x-ecgw-trace-id"] == format(root.context.trace_id, "032x")
    assert {s.context.trace_id for s in spans if s.context} == {root.context.trace_id}

    (policy,) = _children(spans, root)
    assert policy.name == "ecgw.policy"
    calls = _children(spans, policy)
    assert [(c.name, c.attributes["ecgw.purpose"]) for c in calls if c.attributes] == [
        ("ecgw.edge.call", "probe"), ("ecgw.cloud.call", "step")]
    probe, escalation = calls
    assert [s.name for s in _children(spans, probe)] == ["ecgw.meter"]
    assert [s.name for s in _children(spans, escalation)][0] == "ecgw.protect"
    assert sorted(s.name for s in _children(spans, escalation)) == ["ecgw.meter", "ecgw.protect", "ecgw.restore"]

    attrs = dict(root.attributes or {})
    # keyed: the gateway's own hasher gives it, a hash of a guessed id does not
    assert attrs["ecgw.session"] == services.session_hash(SESSION)
    assert attrs["ecgw.session"] not in {hashlib.sha256(prefix + SESSION.encode()).hexdigest()[:16]
                                         for prefix in (b"", b"ecgw-session\0")}
    assert attrs["ecgw.policy"] == "step-routing" and attrs["ecgw.route"] == "mixed"
    assert attrs["http.status_code"] == 200
    cloud_usage = [c.usage for c in meter.calls if c.side == "cloud"][0]
    assert cloud_usage is not None
    cached = (cloud_usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    assert attrs["ecgw.cloud.tokens.output"] == cloud_usage["completion_tokens"]
    assert attrs["ecgw.cloud.tokens.raw_input"] == cloud_usage["prompt_tokens"] - cached
    edge_usage = [c.usage for c in meter.calls if c.side == "edge"][0]
    assert edge_usage is not None and attrs["ecgw.edge.tokens.output"] == edge_usage["completion_tokens"]

    decided = dict(policy.attributes or {})
    assert decided["ecgw.decision"] == "cloud" and decided["ecgw.reason"] == "entropy"
    assert decided["ecgw.signal.entropy"] == pytest.approx(math.log(20), abs=1e-3)
    assert decided["ecgw.signal.tau"] == 1.5

    # the cloud saw placeholders; no span carries the registered values, their digits, or the raw session id
    sent = str(cloud.requests[0]["messages"])
    assert NAME not in sent and PHONE not in sent
    needles = [NAME, "Vasquez", "Quentin", PHONE, "4155550199", "555 0199", SESSION]
    for span in spans:
        texts: list[Any] = [span.name, span.status.description, *(span.attributes or {}).values()]
        texts += [e.name for e in span.events] + [v for e in span.events for v in (e.attributes or {}).values()]
        for text in texts:
            for needle in needles:
                assert needle not in str(text), f"{span.name} carries {needle!r}"


def test_tracing_is_off_by_default(edge: ModelServer, cloud: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    normalised: list[Any] = []  # the channels normalise usage only for span attributes: not without a span

    def counting(usage: Any) -> Any:
        normalised.append(usage)
        return normalise(usage)

    monkeypatch.setattr(channels, "normalise", counting)
    with running_gateway(edge, cloud, meter=MemoryMeter()) as (url, services):
        response = httpx.post(f"{url}/v1/chat/completions", timeout=30,
                              json={"model": "agent", "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 200
    assert "x-ecgw-trace-id" not in response.headers
    assert services.tracing.enabled is False
    assert normalised == []
