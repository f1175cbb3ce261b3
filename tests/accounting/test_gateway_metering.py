"""Through the real gateway over HTTP: every call metered, streams meter like JSON, /v1/usage and /metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.accounting.conftest import MeteredGateway
from tests.fakes.model_server import ModelServer, Reply, prompt_tokens

PRICES = {"gpt-test": {"input": 2.0, "cache_read": 0.5, "output": 10.0}}
EDGE_MODELS = {"edge-model": {"params": 1.0e9}}
SYSTEM = "You are a careful agent. " + " ".join(f"rule{i}" for i in range(60))


def _body(question: str, *, stream: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "any", "messages": [{"role": "system", "content": SYSTEM},
                                                         {"role": "user", "content": question}]}
    if stream:
        body["stream"] = True
    return body


def _ask(gw: MeteredGateway, body: dict[str, Any], **headers: str) -> str:
    with httpx.Client(timeout=10) as client:
        response = client.post(gw.base_url + "/chat/completions", json=body, headers=headers)
        response.read()
    assert response.status_code == 200, response.text
    return response.headers["x-ecgw-request-id"]


def _records(gw: MeteredGateway, request_id: str) -> list[dict[str, Any]]:
    httpx.get(gw.base_url + "/usage", timeout=10).raise_for_status()  # flushes the writer
    return gw.meter.store.rows(request_id=request_id)


TOKEN_FIELDS = ("prompt_tokens", "cache_read_tokens", "cache_write_tokens", "raw_input_tokens", "output_tokens",
                "usage_source", "cost_usd", "price_version", "edge_flops")


@pytest.mark.parametrize("usage_style", ["openai", "deepseek"])
def test_cloud_stream_and_json_meter_the_same(start_metered_gateway: Callable[..., MeteredGateway],
                                              cloud: ModelServer, usage_style: str) -> None:
    cloud.usage_style = usage_style
    try:
        gw = start_metered_gateway(policy={"default": "cloud-only"}, accounting={"prices": PRICES})
        figures = []
        for stream in (False, True):
            cloud.reset()
            _ask(gw, _body("warm the prefix cache"), **{"x-session-id": f"s-{stream}"})
            request_id = _ask(gw, _body("now the real question", stream=stream), **{"x-session-id": f"s-{stream}"})
            [record] = _records(gw, request_id)
            sent = cloud.requests[-1]
            assert record["streamed"] is stream
            assert record["prompt_tokens"] == len(prompt_tokens(sent))  # the fake's own count, via litellm
            figures.append({k: record[k] for k in TOKEN_FIELDS})
    finally:
        cloud.usage_style = "openai"
    json_figures, stream_figures = figures
    assert json_figures == stream_figures
    assert json_figures["usage_source"] == "upstream"
    assert json_figures["cache_read_tokens"] >= 16  # the warm-up's shared prefix hit the cache
    raw = json_figures["prompt_tokens"] - json_figures["cache_read_tokens"]
    assert json_figures["raw_input_tokens"] == raw
    assert json_figures["cost_usd"] == pytest.approx(
        (raw * 2.0 + json_figures["cache_read_tokens"] * 0.5 + json_figures["output_tokens"] * 10.0) / 1e6)


def test_edge_calls_carry_attribution_and_flops(start_metered_gateway: Callable[..., MeteredGateway],
                                                edge: ModelServer) -> None:
    gw = start_metered_gateway(accounting={"edge_models": EDGE_MODELS})
    request_id = _ask(gw, _body("hello edge"), **{"x-session-id": "sess-42"})
    [record] = _records(gw, request_id)
    assert (record["side"], record["session_id"], record["policy"], record["purpose"], record["status"]) == \
        ("edge", "sess-42", "edge-only", "step", 200)
    assert record["usage_source"] == "upstream"
    assert record["prompt_tokens"] == len(prompt_tokens(edge.requests[-1]))
    assert record["edge_flops"] == 2 * 1e9 * (record["raw_input_tokens"] + record["output_tokens"])
    assert record["flops_formula"] == "2*N*(raw_input+output)"
    assert record["latency_s"] > 0 and record["ttft_s"] is not None


def test_edge_without_usage_is_estimated(start_metered_gateway: Callable[..., MeteredGateway],
                                         edge: ModelServer) -> None:
    gw = start_metered_gateway(accounting={"edge_models": EDGE_MODELS},
                               edge={"compat": {"stream_usage": False}})
    edge.script(Reply(content="four score and seven years", usage=False))
    json_id = _ask(gw, _body("no usage please"))
    stream_id = _ask(gw, _body("no usage please", stream=True))  # llama-cpp-python style: no usage chunk
    for request_id in (json_id, stream_id):
        [record] = _records(gw, request_id)
        assert record["usage_source"] == "estimated"
        assert record["prompt_tokens"] > 60 and record["output_tokens"] > 0
        assert record["edge_flops"] > 0


def test_failed_upstream_calls_are_recorded(start_metered_gateway: Callable[..., MeteredGateway],
                                            edge: ModelServer) -> None:
    gw = start_metered_gateway()
    edge.script(Reply(status=500))
    with httpx.Client(timeout=10) as client:
        response = client.post(gw.base_url + "/chat/completions", json=_body("fail"))
    [record] = _records(gw, response.headers["x-ecgw-request-id"])
    assert record["status"] >= 500 and record["usage_source"] == "none" and record["output_tokens"] == 0


def test_usage_endpoint_needs_a_key_and_groups(start_metered_gateway: Callable[..., MeteredGateway],
                                               database_url: str) -> None:
    gw = start_metered_gateway(server={"api_keys": ["sk-test"]}, accounting={"edge_models": EDGE_MODELS},
                               database_url=database_url)
    _ask(gw, _body("one"), authorization="Bearer sk-test", **{"x-session-id": "a"})
    _ask(gw, _body("two"), authorization="Bearer sk-test", **{"x-session-id": "b"})
    assert httpx.get(gw.base_url + "/usage").status_code == 401
    auth = {"authorization": "Bearer sk-test"}
    response = httpx.get(gw.base_url + "/usage", params={"by": "session"}, headers=auth)
    assert response.status_code == 200
    rows = response.json()["data"]
    assert [r["group"] for r in rows] == ["a", "b"]
    assert all(r["requests"] == 1 and r["edge_calls"] == 1 and r["edge_pflops"] > 0 for r in rows)
    bad = httpx.get(gw.base_url + "/usage", params={"by": "colour"}, headers=auth)
    assert bad.status_code == 400 and "session" in bad.json()["error"]["message"]
    md = httpx.get(gw.base_url + "/usage", params={"by": "policy", "format": "md"}, headers=auth)
    assert md.status_code == 200 and "| edge-only |" in md.text and "PFLOPs" in md.text


def test_metrics_endpoint(start_metered_gateway: Callable[..., MeteredGateway]) -> None:
    gw = start_metered_gateway(policy={"default": "cloud-only"}, accounting={"prices": PRICES})
    _ask(gw, _body("count me"))
    _records(gw, "flush")
    text = httpx.get(gw.url + "/metrics").text
    assert 'ecgw_upstream_calls_total{policy="cloud-only",purpose="step",route="cloud",status="200"} 1.0' in text
    assert 'ecgw_tokens_total{kind="output",model="openai/gpt-test",route="cloud",source="upstream"}' in text
    assert "ecgw_cost_usd_total" in text and "ecgw_upstream_latency_seconds_bucket" in text
    assert "ecgw_metering_buffered_records 0.0" in text and "ecgw_metering_dropped_records_total 0.0" in text


def test_edge_stream_and_json_meter_the_same(start_metered_gateway: Callable[..., MeteredGateway],
                                             edge: ModelServer) -> None:
    gw = start_metered_gateway(accounting={"edge_models": EDGE_MODELS})
    figures = []
    for stream in (False, True):
        edge.reset()
        _ask(gw, _body("warm the prefix cache"))
        [record] = _records(gw, _ask(gw, _body("now the real question", stream=stream)))
        assert record["streamed"] is stream and record["usage_source"] == "upstream"
        figures.append({k: record[k] for k in TOKEN_FIELDS})
    assert figures[0] == figures[1] and figures[0]["cache_read_tokens"] >= 16


def test_usage_endpoint_when_metering_is_off(gateway: Any) -> None:
    response = httpx.get(gateway.base_url + "/usage")
    assert response.status_code == 503 and "accounting.enabled" in response.json()["error"]["message"]
