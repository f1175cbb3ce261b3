"""The provider boundary: nothing in a tenant's body can steer, re-key or fake the cloud call (issue 22).

Tried as an attacker holding an ordinary tenant key against a gateway with ``server.api_keys`` set: every argument
the installed litellm accepts (its chat functions' signatures and ``all_litellm_params``, so an upgrade that adds
some is covered, plus the provider arguments litellm takes through ``**kwargs``), each set to what would hurt most:
a recording server's URL for strings, header dicts for headers, a mock for mocks. The recorder must never be
reached, the configured cloud must see only the configured key and no injected header, and the answer must be the
cloud's, not a fake; through litellm and through the own OpenAI-compatible transport. Then the direct check: with
``litellm.acompletion`` replaced by a recorder, every keyword that reaches it, from any surface, is within the
allowlist.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx
import litellm
import pytest
from litellm.types.router import GenericLiteLLMParams
from litellm.types.utils import all_litellm_params
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.egress.transports.boundary import DroppedFields
from gateway.egress.transports.provider_request import CHAT_PARAMETERS, WITHHELD
from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer

TENANT_A, TENANT_B = "sk-tenant-a", "sk-tenant-b"
PROVIDER_KEY = "sk-provider-configured"
KEY_ENV = "ECGW_TEST_BOUNDARY_PROVIDER_KEY"

# Provider arguments litellm takes through ``**kwargs`` (not in its signatures nor in all_litellm_params).
KWARGS_ONLY = (
    "aws_bedrock_runtime_endpoint", "aws_access_key_id", "aws_secret_access_key", "aws_session_token",
    "aws_region_name", "aws_role_name", "aws_session_name", "aws_profile_name", "aws_web_identity_token",
    "aws_sts_endpoint", "vertex_credentials", "vertex_project", "vertex_location", "vertex_ai_project",
    "vertex_ai_location", "azure_ad_token", "api_type", "organization", "project", "extra_body", "extra_query",
    "http_client", "proxy", "watsonx_api_base", "token", "project_id", "region", "endpoint",
)


class Recorder:
    """Answers anything, at any path, and remembers that it was reached."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, str, dict[str, str]]] = []
        self.app = Starlette(routes=[Route("/{path:path}", self._any, methods=["GET", "POST", "PUT", "DELETE"])])

    async def _any(self, request: Request) -> Response:
        self.hits.append((request.method, request.url.path, dict(request.headers)))
        # What a hostile endpoint would answer: a well-formed completion (so a redirect succeeds silently).
        return JSONResponse({"id": "chatcmpl-rec", "object": "chat.completion", "created": 0, "model": "x",
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": "FROM-THE-RECORDER"}}],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


@pytest.fixture()
def recorder() -> Iterator[tuple[Recorder, str]]:
    rec = Recorder()
    with ThreadedServer(rec.app) as server:
        yield rec, server.url


def litellm_names() -> list[str]:
    names = set(all_litellm_params) | set(KWARGS_ONLY)
    for function in (litellm.acompletion, litellm.completion):
        names |= {p.name for p in inspect.signature(function).parameters.values()
                  if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    return sorted(names - {"model", "messages", "stream", "self"} - CHAT_PARAMETERS)


FAKE = "FAKED-BY-THE-TENANT"


def hostile_value(name: str, url: str) -> Any:
    """What a tenant would set ``name`` to: an endpoint it owns, its own headers and key, a mock."""
    headers = {"X-Injected": "yes", "Authorization": "Bearer sk-tenant-injected"}
    special: dict[str, Any] = {
        "extra_headers": headers, "headers": headers, "provider_specific_header": {"custom_llm_provider": "openai",
                                                                                   "extra_headers": headers},
        "api_key": "sk-tenant-injected", "mock_response": FAKE, "mock_tool_calls": [{"id": "c", "type": "function",
                                                                                    "function": {"name": "x",
                                                                                                 "arguments": "{}"}}],
        "mock_timeout": True, "mock_testing_fallbacks": True, "mock_testing_context_fallbacks": True,
        "model_list": [{"model_name": "x", "litellm_params": {"model": "openai/x", "api_base": url + "/v1",
                                                               "api_key": "sk-tenant-injected"}}],
        "fallbacks": [{"model": "openai/x", "api_base": url + "/v1"}],
        "context_window_fallback_dict": {"openai/gpt-test": "openai/x"},
        "custom_llm_provider": "openai", "azure": True, "use_litellm_proxy": True, "num_retries": 3,
        "max_retries": 3, "timeout": 0.001, "request_timeout": 0.001, "stream_timeout": 0.001, "drop_params": False,
        "ssl_verify": False, "caching": True, "cache": {"no-cache": False}, "metadata": {"hidden_params": {}},
        "extra_body": {"api_base": url + "/v1", "model": "x"}, "extra_query": {"api-version": url},
        "stream_options": {"include_usage": True}, "n": 1, "user": "someone", "store": True, "service_tier": "priority",
    }
    if name in special:
        return special[name]
    return _typed(_LITELLM_FIELDS.get(name), url + "/v1")


def _typed(annotation: Any, url: str) -> Any:
    """A value of the type litellm declares for the argument, so that it is used rather than rejected: a URL
    wherever a string is taken, else a number, a flag, a mapping or a list naming the URL."""
    if annotation is None:
        return url
    args = set(typing.get_args(annotation)) or {annotation}
    origins = {typing.get_origin(a) or a for a in args}
    if str in origins:
        return url
    if bool in origins:
        return True
    if int in origins or float in origins:
        return 1
    if origins & {dict, Mapping}:
        return {"api_base": url}
    if origins & {list, Sequence}:
        return [url]
    return url


_LITELLM_FIELDS: dict[str, Any] = {name: field.annotation for name, field in GenericLiteLLMParams.model_fields.items()}


def _batches(names: list[str], size: int) -> list[list[str]]:
    return [names[i:i + size] for i in range(0, len(names), size)]


@pytest.fixture(params=["litellm", "openai"])
def tenant_gateway(start_gateway: Callable[..., RunningGateway], monkeypatch: pytest.MonkeyPatch,
                   request: pytest.FixtureRequest) -> RunningGateway:
    """A gateway with tenant keys, its cloud through litellm or through the own transport (``cloud.transport``)."""
    monkeypatch.setenv(KEY_ENV, PROVIDER_KEY)
    return start_gateway(cloud={"api_key_env": KEY_ENV, "max_retries": 0, "transport": request.param},
                         server={"api_keys": [TENANT_A, TENANT_B]})


def _ask(gw: RunningGateway, body: dict[str, Any], *, stream: bool) -> tuple[int, str]:
    """The answer's status and text, as the tenant received it."""
    request = {"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "hello"}], **body,
               "stream": stream}
    headers = {"authorization": f"Bearer {TENANT_B}"}
    if not stream:
        response = httpx.post(gw.base_url + "/chat/completions", json=request, headers=headers, timeout=30)
        if response.status_code != 200:
            return response.status_code, response.text
        return 200, response.json()["choices"][0]["message"]["content"] or ""
    parts: list[str] = []
    with httpx.stream("POST", gw.base_url + "/chat/completions", json=request, headers=headers,
                      timeout=30) as response:
        if response.status_code != 200:
            return response.status_code, response.read().decode()
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = json.loads(line[6:])
                for choice in chunk.get("choices") or ():
                    parts.append((choice.get("delta") or {}).get("content") or "")
    return 200, "".join(parts)


def test_the_enumeration_covers_what_litellm_takes():
    """The list is read from the installed litellm: a few hundred names, the notorious ones among them."""
    names = litellm_names()
    assert len(names) > 300
    for name in ("base_url", "api_base", "api_key", "extra_headers", "headers", "mock_response", "fallbacks",
                 "model_list", "custom_llm_provider", "num_retries", "aws_bedrock_runtime_endpoint"):
        assert name in names


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_no_litellm_argument_in_a_tenants_body_steers_rekeys_or_fakes_the_cloud_call(
        tenant_gateway: RunningGateway, cloud: ModelServer, recorder: tuple[Recorder, str], stream: bool):
    rec, url = recorder
    names = litellm_names()
    # Batched: each batch either changes nothing or is caught, since a name that reached litellm would redirect
    # (recorder hit), re-key or add headers (the cloud's headers), fake (the answer), or break the call (status).
    for batch in _batches(names, 100):
        cloud.reset()
        status, text = _ask(tenant_gateway, {name: hostile_value(name, url) for name in batch}, stream=stream)
        assert status == 200, (batch, text[:500])
        assert text == "cloud reply to: hello", (batch, text[:500])
        assert not rec.hits, (batch, rec.hits[:3])
        assert len(cloud.headers) == 1, batch  # no retries, no fallbacks, no second call
        seen = cloud.headers[0]
        assert seen.get("authorization") == f"Bearer {PROVIDER_KEY}", batch
        assert "x-injected" not in seen, batch
        assert set(cloud.requests[0]) <= CHAT_PARAMETERS | {"model", "messages", "stream", "stream_options"}, batch


def test_a_dropped_field_is_counted_under_a_name_the_gateway_chose(tenant_gateway: RunningGateway,
                                                                    caplog: pytest.LogCaptureFixture):
    """A request names its fields: only a parameter the gateway withholds is a label of its own; any other name
    (``patient_jane_roe_hiv_positive``) counts under ``_other`` and reaches neither ``/metrics`` nor the log."""
    with caplog.at_level("WARNING", logger="ecgw"):
        for _ in range(2):
            _ask(tenant_gateway, {"base_url": "http://127.0.0.1:9/v1", "patient_jane_roe_hiv_positive": 1,
                                  "user": "u"}, stream=False)
    metrics = httpx.get(tenant_gateway.url + "/metrics", headers={"authorization": f"Bearer {TENANT_A}"}).text
    assert 'ecgw_cloud_dropped_fields_total{field="_other"} 4.0' in metrics
    assert 'ecgw_cloud_dropped_fields_total{field="user"} 2.0' in metrics
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for client_named in ("patient_jane_roe_hiv_positive", "base_url"):
        assert client_named not in metrics and client_named not in logged
    assert "'user'" in logged and logged.count("keyed hash #") == 2  # each other name once, as its hash


def test_the_log_names_a_dropped_field_by_a_hash_keyed_with_the_operators_key(caplog: pytest.LogCaptureFixture):
    import hashlib
    import hmac

    key = b"k" * 32
    dropped = DroppedFields(hash_key=key, max_logged=5)
    with caplog.at_level("WARNING", logger="ecgw"):
        for name in ["a", "b", "user", "c", "d", "e", "f", "a", "x" * 500]:
            dropped(name)
    counts = {s.labels["field"]: s.value for m in dropped.registry.collect() for s in m.samples
              if s.name.endswith("_total")}
    assert counts == {"user": 1.0, "_other": 8.0}
    logged = [r.getMessage() for r in caplog.records]
    expected = "#" + hmac.new(key, b"a", hashlib.sha256).hexdigest()[:16]
    assert len(logged) == 5 and sum(expected in line for line in logged) == 1  # bounded, each name once
    assert not any(f"'{name}'" in line for line in logged for name in "abcdef")


def test_named_extra_body_fields_reach_the_provider_as_json_body_fields_through_the_privacy_walk(
        start_gateway: Callable[..., RunningGateway], cloud: ModelServer):
    gw = start_gateway(cloud={"extra_body_fields": ["vendor_options", "chat_template_kwargs"]})
    status, _ = _ask(gw, {"vendor_options": {"note": "call Zhang Wei at 13812345678"},
                          "chat_template_kwargs": {"enable_thinking": False}, "vendor_other": 1}, stream=False)
    assert status == 200
    sent = cloud.requests[-1]
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert "vendor_other" not in sent
    assert "13812345678" not in json.dumps(sent)  # the extra field went through protection like the messages
    assert "vendor_options" in sent


def test_a_name_litellm_reads_itself_cannot_be_an_extra_body_field(start_gateway: Callable[..., RunningGateway]):
    from gateway.config.settings import ConfigError

    with pytest.raises(ConfigError, match="api_base") as refused:
        start_gateway(cloud={"extra_body_fields": ["api_base"], "transport": "litellm"})
    assert refused.value.param == "cloud.extra_body_fields"  # a reload answers 400 naming it (tests/gateway/test_reload_guard.py)


# --- the direct check: every keyword that reaches litellm is within the allowlist -------------------------------

ALLOWED_KWARGS = CHAT_PARAMETERS | {"model", "messages", "stream", "stream_options", "drop_params", "timeout",
                                    "num_retries", "api_base", "api_key", "extra_body", "input_cost_per_token",
                                    "output_cost_per_token", "client"}  # client: the door's own, which refuses redirects


@pytest.fixture()
def litellm_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    real = litellm.acompletion

    async def recording(**kwargs: Any) -> Any:
        calls.append(kwargs)
        # litellm's own answer object (its mock), so the gateway's shaping runs as on a real call
        return await real(**{**kwargs, "mock_response": "recorded"})

    monkeypatch.setattr(litellm, "acompletion", recording)
    return calls


def _every_name(url: str) -> dict[str, Any]:
    return {name: hostile_value(name, url) for name in litellm_names() + sorted(WITHHELD)}


def test_every_keyword_that_reaches_litellm_is_within_the_allowlist(
        start_gateway: Callable[..., RunningGateway], litellm_calls: list[dict[str, Any]]):
    gw = start_gateway(cloud={"extra_body_fields": ["vendor_options"], "transport": "litellm"})
    url = "http://127.0.0.1:9"
    hostile = _every_name(url)
    base = {"model": "ecgw/cloud-only", **hostile, "vendor_options": {"x": 1}, "temperature": 0.3,
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
                      {"type": "mcp", "server_url": "litellm_proxy", "server_label": "x"}]}
    chat = {**base, "messages": [{"role": "user", "content": "hello"}]}
    for stream in (False, True):
        assert httpx.post(gw.base_url + "/chat/completions", json={**chat, "stream": stream},
                          timeout=30).status_code == 200
    for stream in (False, True):
        response = httpx.post(gw.base_url + "/responses", json={
            **base, "input": "hello", "stream": stream,
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}]}, timeout=30)
        assert response.status_code == 200, response.text
        response = httpx.post(gw.base_url + "/messages", json={
            **base, "max_tokens": 20, "messages": [{"role": "user", "content": "hello"}], "stream": stream,
            "tools": [{"name": "f", "input_schema": {"type": "object"}}]}, timeout=30)
        assert response.status_code == 200, response.text
    assert len(litellm_calls) == 6
    for kwargs in litellm_calls:
        assert set(kwargs) <= ALLOWED_KWARGS, sorted(set(kwargs) - ALLOWED_KWARGS)
        assert kwargs["model"] == "openai/gpt-test"
        assert kwargs["api_base"] == gw.settings.cloud.api_base and kwargs["api_key"] == "none"
        assert kwargs["num_retries"] == 0 and kwargs["timeout"] == gw.settings.cloud.timeout_s
        # litellm's own pricing is off (the gateway meters from accounting.prices), whatever the request says
        assert kwargs["input_cost_per_token"] == kwargs["output_cost_per_token"] == 0.0
        assert set(kwargs.get("extra_body") or {}) <= {"vendor_options"}
        assert all(tool.get("type") == "function" for tool in kwargs.get("tools") or ())
    assert litellm_calls[0]["extra_body"] == {"vendor_options": {"x": 1}}
    assert litellm_calls[0]["temperature"] == 0.3


# --- the type itself: no code path can hand a transport a name outside the allowlist ---------------------------

def test_a_provider_request_refuses_names_outside_the_allowlist():
    from gateway.egress.transports.provider_request import ProviderRequest

    with pytest.raises(ValueError, match="api_base"):
        ProviderRequest(messages=[], params={"temperature": 0.1, "api_base": "http://x"})
    with pytest.raises(ValueError, match="chat parameters"):
        ProviderRequest(messages=[], extra_body={"temperature": 0.1})
    with pytest.raises(ValueError, match="tools"):
        ProviderRequest(messages=[], params={"tools": [{"type": "mcp", "server_url": "litellm_proxy"}]})


def test_the_shape_keeps_chat_parameters_and_named_fields_and_drops_the_rest():
    from gateway.egress.transports.provider_request import RequestShape

    dropped: list[str] = []
    shape = RequestShape(["vendor_options"], on_drop=dropped.append)
    request = shape.request({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}],
                             "temperature": 0.2, "vendor_options": {"a": 1}, "base_url": "http://x", "user": "u",
                             "tools": [{"type": "function", "function": {"name": "f"}},
                                       {"type": "mcp", "server_url": "http://x"}]})
    assert dict(request.params) == {"temperature": 0.2, "tools": [{"type": "function", "function": {"name": "f"}}]}
    assert dict(request.extra_body) == {"vendor_options": {"a": 1}}
    assert sorted(dropped) == ["base_url", "tools[].type", "user"]
    with pytest.raises(ValueError, match="chat parameter"):
        RequestShape(["temperature"])


def test_metrics_can_require_a_key_of_their_own(start_gateway: Callable[..., RunningGateway],
                                                 monkeypatch: pytest.MonkeyPatch):
    """``observability.metrics_key_env``: /metrics answers only the scraper holding that key (tenant keys too are
    refused: the counters are every tenant's)."""
    monkeypatch.setenv("ECGW_TEST_METRICS_KEY", "sk-scraper")
    gw = start_gateway(server={"api_keys": [TENANT_A]}, observability={"metrics_key_env": "ECGW_TEST_METRICS_KEY"})
    for headers in ({}, {"authorization": f"Bearer {TENANT_A}"}, {"authorization": "Bearer sk-scraper-not"}):
        refused = httpx.get(gw.url + "/metrics", headers=headers)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
        assert refused.headers["x-ecgw-request-id"].startswith("req-")
    opened = httpx.get(gw.url + "/metrics", headers={"authorization": "Bearer sk-scraper"})
    assert opened.status_code == 200 and "# HELP" in opened.text
