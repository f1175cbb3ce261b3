"""``observability.otlp_endpoint`` turns on OTLP/HTTP export: a real collector endpoint on loopback receives the
step's spans (protobuf, as the OTLP spec has them), with the trace id the response header named."""

from __future__ import annotations

import threading

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from accounting.calls import MemoryMeter
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.observability.gateways import running_gateway


class Collector:
    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.lock = threading.Lock()
        self.app = Starlette(routes=[Route("/v1/traces", self.traces, methods=["POST"])])

    async def traces(self, request: Request) -> Response:
        parsed = ExportTraceServiceRequest()
        parsed.ParseFromString(await request.body())
        with self.lock:
            self.requests.append(parsed)
        return Response(b"", media_type="application/x-protobuf")


def test_spans_reach_the_configured_collector(edge: ModelServer, cloud: ModelServer) -> None:
    collector = Collector()
    with ThreadedServer(collector.app) as server:
        with running_gateway(edge, cloud, meter=MemoryMeter(),
                             observability={"otlp_endpoint": server.url, "service_name": "ecgw-test"}) as (url, _):
            edge.script(Reply("fine"))
            response = httpx.post(f"{url}/v1/chat/completions", timeout=30, headers={"X-Session-Id": "otlp-1"},
                                  json={"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "hi"}]})
            assert response.status_code == 200
        # the gateway's shutdown flushed the batch
        spans = [(span, resource) for req in collector.requests for resource in req.resource_spans
                 for scope in resource.scope_spans for span in scope.spans]
    names = sorted(span.name for span, _ in spans)
    assert names == ["ecgw.edge.call", "ecgw.meter", "ecgw.policy", "ecgw.request"]
    assert {span.trace_id.hex() for span, _ in spans} == {response.headers["x-ecgw-trace-id"]}
    service = {a.key: a.value.string_value for _, r in spans for a in r.resource.attributes}["service.name"]
    assert service == "ecgw-test"


def _attributes(span: object) -> dict[str, object]:
    out: dict[str, object] = {}
    for a in span.attributes:  # type: ignore[attr-defined]
        kind = a.value.WhichOneof("value")
        out[a.key] = getattr(a.value, kind) if kind else None
    return out


def test_call_spans_carry_the_genai_semantic_conventions_and_no_content(edge: ModelServer,
                                                                        cloud: ModelServer) -> None:
    collector = Collector()
    secret_words = "the quarterly numbers for Zhang Wei " * 12  # long enough for the fake's prefix cache blocks
    with ThreadedServer(collector.app) as server:
        with running_gateway(edge, cloud, meter=MemoryMeter(),
                             observability={"otlp_endpoint": server.url}) as (url, _):
            cloud.script(Reply("first answer"), Reply("second answer"))
            for stream in (False, True):  # the second call reads the first's prompt from the cache
                response = httpx.post(f"{url}/v1/chat/completions", timeout=30, headers={"X-Session-Id": "otlp-2"},
                                      json={"model": "ecgw/cloud-only", "stream": stream,
                                            "messages": [{"role": "user", "content": secret_words}]})
                assert response.status_code == 200
                response.read()
    spans = [span for req in collector.requests for resource in req.resource_spans
             for scope in resource.scope_spans for span in scope.spans]
    calls = [_attributes(s) for s in spans if s.name == "ecgw.cloud.call"]
    assert len(calls) == 2
    for attributes in calls:
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] and attributes["gen_ai.request.model"] == "openai/gpt-test"
        assert attributes["gen_ai.response.model"] == cloud.model
        assert attributes["gen_ai.response.finish_reasons"] == "stop"
        assert int(attributes["gen_ai.usage.input_tokens"]) > 0  # type: ignore[call-overload]
        assert int(attributes["gen_ai.usage.output_tokens"]) == 2  # type: ignore[call-overload]
    assert int(calls[1]["gen_ai.usage.cache_read.input_tokens"]) > 0  # type: ignore[call-overload]
    request = [_attributes(s) for s in spans if s.name == "ecgw.request"]
    assert {r["gen_ai.conversation.id"] for r in request} == {r["ecgw.session"] for r in request}
    assert "otlp-2" not in str(request)  # the keyed hash, not the session id
    every_value = " ".join(str(v) for s in spans for v in _attributes(s).values())
    assert "Zhang" not in every_value and "answer" not in every_value  # never content
