"""GET /metrics counts client requests by route, policy and status, streams included."""

from __future__ import annotations

import re

import httpx

from tests.fakes.model_server import Reply


def _count(text: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith("ecgw_requests_total{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_requests_are_counted_by_route_policy_and_status(gateway, edge):
    url = gateway.base_url + "/chat/completions"
    msgs = [{"role": "user", "content": "x"}]
    httpx.post(url, json={"model": "ecgw/edge-only", "messages": msgs})
    httpx.post(url, json={"model": "ecgw/cloud-only", "messages": msgs})
    with httpx.stream("POST", url, json={"model": "ecgw/edge-only", "messages": msgs, "stream": True}) as r:
        r.read()
    edge.script(Reply(status=500, error_message="boom"))
    httpx.post(url, json={"model": "ecgw/edge-only", "messages": msgs})
    httpx.post(url, content=b"{not json")
    text = httpx.get(gateway.url + "/metrics").text
    assert _count(text, route="edge", policy="edge-only", status="200") == 2
    assert _count(text, route="cloud", policy="cloud-only", status="200") == 1
    assert _count(text, route="edge", policy="edge-only", status="502") == 1
    assert _count(text, route="none", policy="none", status="400") == 1
    assert 'ecgw_request_duration_seconds_bucket{le="0.005",policy="edge-only",route="edge",streamed="true"}' in text
