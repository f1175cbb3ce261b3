"""The edge side of the boundary: a request's fields reach the edge as JSON body fields only (the edge is tolerant
of vendor extras), never as its URL, headers or credentials, and never as the few vLLM fields that choose the edge
server's infrastructure (``EDGE_WITHHELD``): on every surface, JSON and stream, with ``server.api_keys`` set."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from gateway.egress.transports.openai_http import EDGE_WITHHELD
from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer
from tests.gateway.egress.transports.test_provider_boundary import Recorder

TENANT = "sk-tenant-b"
EDGE_KEY = "sk-edge-configured"
KEY_ENV = "ECGW_TEST_BOUNDARY_EDGE_KEY"


@pytest.fixture()
def recorder() -> Iterator[tuple[Recorder, str]]:
    rec = Recorder()
    with ThreadedServer(rec.app) as server:
        yield rec, server.url


def hostile(url: str) -> dict[str, Any]:
    """Every way a body might try to name the edge call's target, headers or credentials."""
    headers = {"X-Injected": "yes", "Authorization": "Bearer sk-tenant-injected", "Host": urlsplit(url).netloc}
    parsed = urlsplit(url)
    return {
        "base_url": url + "/v1", "api_base": url + "/v1", "url": url + "/v1/chat/completions", "endpoint": url,
        "extra_headers": headers, "headers": headers, "authorization": "Bearer sk-tenant-injected",
        "api_key": "sk-tenant-injected", "extra_query": {"redirect": url}, "proxy": url, "host": parsed.netloc,
        "kv_transfer_params": {"do_remote_prefill": True, "remote_host": parsed.hostname, "remote_port": parsed.port,
                               "remote_engine_id": "x", "remote_block_ids": [0]},
        "priority": -100, "request_id": "another-tenants-request", "chat_template": "{{ 'FAKED' }}",
        "logits_processors": ["os.system"], "vendor_sampling_extra": {"keep": 1},
    }


@pytest.fixture()
def tenant_gateway(start_gateway: Callable[..., RunningGateway], monkeypatch: pytest.MonkeyPatch) -> RunningGateway:
    monkeypatch.setenv(KEY_ENV, EDGE_KEY)
    return start_gateway(edge={"api_key_env": KEY_ENV}, server={"api_keys": ["sk-tenant-a", TENANT]})


def _post(gw: RunningGateway, path: str, body: dict[str, Any]) -> tuple[int, str]:
    headers = {"authorization": f"Bearer {TENANT}"}
    with httpx.stream("POST", gw.base_url + path, json=body, headers=headers, timeout=30) as response:
        return response.status_code, response.read().decode()


def _content(text: str, stream: bool) -> str:
    if not stream:
        return str(json.loads(text)["choices"][0]["message"]["content"])
    return "".join((choice.get("delta") or {}).get("content") or ""
                   for line in text.splitlines() if line.startswith("data: {")
                   for choice in json.loads(line[6:]).get("choices") or ())


def _assert_only_the_configured_edge_call(edge: ModelServer, rec: Recorder) -> None:
    assert not rec.hits, rec.hits[:3]
    assert len(edge.requests) == 1
    seen, sent = edge.headers[0], edge.requests[0]
    assert seen.get("authorization") == f"Bearer {EDGE_KEY}"
    assert "x-injected" not in seen
    assert seen.get("host") == urlsplit(edge.url).netloc  # type: ignore[attr-defined]
    assert not set(sent) & set(EDGE_WITHHELD), sorted(set(sent) & set(EDGE_WITHHELD))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_chat_body_fields_never_choose_the_edge_calls_target_headers_or_infrastructure(
        tenant_gateway: RunningGateway, edge: ModelServer, recorder: tuple[Recorder, str], stream: bool):
    rec, url = recorder
    status, text = _post(tenant_gateway, "/chat/completions", {
        "model": "ecgw/edge-only", "messages": [{"role": "user", "content": "hello"}], "stream": stream,
        **hostile(url)})
    assert status == 200, text
    assert _content(text, stream) == "edge reply to: hello"
    _assert_only_the_configured_edge_call(edge, rec)
    assert edge.requests[0]["vendor_sampling_extra"] == {"keep": 1}  # tolerant: other fields still reach it
    assert edge.requests[0]["model"] == "edge-model"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_responses_and_messages_body_fields_never_reach_the_edge_call(
        tenant_gateway: RunningGateway, edge: ModelServer, recorder: tuple[Recorder, str], stream: bool):
    rec, url = recorder
    for path, body in (("/responses", {"input": "hello"}),
                       ("/messages", {"max_tokens": 20, "messages": [{"role": "user", "content": "hello"}]})):
        edge.reset()
        status, text = _post(tenant_gateway, path, {"model": "ecgw/edge-only", "stream": stream, **body,
                                                    **hostile(url)})
        assert status == 200, (path, text)
        _assert_only_the_configured_edge_call(edge, rec)
        assert not set(edge.requests[0]) & set(hostile(url)), path  # these surfaces drop unknown fields


def test_a_withheld_edge_field_is_counted(tenant_gateway: RunningGateway):
    _post(tenant_gateway, "/chat/completions", {"model": "ecgw/edge-only", "messages": [
        {"role": "user", "content": "hello"}], "kv_transfer_params": {"remote_host": "10.0.0.1"}})
    metrics = httpx.get(tenant_gateway.url + "/metrics", headers={"authorization": f"Bearer {TENANT}"}).text
    assert 'ecgw_edge_dropped_fields_total{field="kv_transfer_params"} 1.0' in metrics


def test_the_edge_call_never_follows_a_redirect(start_gateway, edge):
    """The edge gets the raw, unprotected body: an edge URL that answers 307 must not pass it (or the edge's key)
    on to wherever the answer points."""
    from tests.fakes.redirecting import redirecting

    with ThreadedServer(redirecting(edge.url)) as redirector:
        gw = start_gateway(edge={"base_url": redirector.url + "/v1"}, policy={"default": "edge-only"})
        for stream in (False, True):
            response = httpx.post(gw.base_url + "/chat/completions", timeout=30, json={
                "model": "m", "stream": stream, "messages": [{"role": "user", "content": "my SSN is 287-65-4321"}]})
            assert (response.status_code == 502) if not stream else ("307" in response.text), response.text
    assert not edge.requests
