"""The litellm door does not follow a provider's redirect (issue 37 §4): a configured address that answers 307 (a
compromised or misconfigured endpoint) gets a 502, and the host it points at gets neither the protected body nor the
key — as the own transport (test_cloud_http.py) and the edge (test_edge_boundary.py) already do."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gateway.config.settings import CloudSettings
from gateway.egress.transports.cloud import LiteLLMUpstream
from gateway.egress.transports.provider_request import ProviderRequest
from router.errors import UpstreamError
from tests.fakes.model_server import ModelServer
from tests.fakes.redirecting import redirecting
from tests.fakes.threaded import ThreadedServer

KEY_ENV = "ECGW_TEST_LITELLM_REDIRECT_KEY"


def _call(upstream: LiteLLMUpstream, stream: bool) -> Any:
    request = ProviderRequest(messages=[{"role": "user", "content": "my salary is 93,000"}])

    async def go() -> Any:
        try:
            if stream:
                return [chunk async for chunk in upstream.stream(request)]
            return await upstream.complete(request)
        finally:
            await upstream.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("model", ["openai/gpt-test", "deepinfra/llama-test", "deepseek/deepseek-chat",
                                   "anthropic/claude-test"])  # through the OpenAI SDK (two), litellm's own handler
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_redirect_is_a_502_and_the_body_and_key_stay_with_the_configured_address(monkeypatch, model, stream):
    monkeypatch.setenv(KEY_ENV, "sk-configured")
    elsewhere = ModelServer("elsewhere", model="gpt-test")
    with ThreadedServer(elsewhere.app) as other, ThreadedServer(redirecting(other.url)) as redirector:
        base = redirector.url + ("" if model.startswith("anthropic/") else "/v1")
        upstream = LiteLLMUpstream(CloudSettings(model=model, api_base=base, api_key_env=KEY_ENV, max_retries=1))
        with pytest.raises(UpstreamError) as caught:
            _call(upstream, stream)
    assert caught.value.status == 502 and "307" in str(caught.value) and "does not follow" in str(caught.value)
    assert elsewhere.requests == []


@pytest.mark.parametrize("model", ["openai/gpt-test", "deepinfra/llama-test", "deepseek/deepseek-chat"])
def test_the_door_still_answers_through_its_own_client(model):
    """The client the door hands litellm is of the kind the provider's path takes (a wrong one fails every call)."""
    provider = ModelServer("provider", model="gpt-test")
    with ThreadedServer(provider.app) as server:
        answer = _call(LiteLLMUpstream(CloudSettings(model=model, api_base=server.url + "/v1", api_key_env=None)),
                       False)
    assert answer["choices"][0]["message"]["content"] and len(provider.requests) == 1
