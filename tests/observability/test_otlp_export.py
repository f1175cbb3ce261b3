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
