"""The own OpenAI-compatible cloud transport (``cloud.transport: openai``) against a provider double on loopback:
what it sends (the allowlisted body, the model's name at its provider, the configured key), how it retries, and
every failure as the cloud's ``UpstreamError`` (the same statuses and types litellm's door gives)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.config.settings import CloudSettings, ConfigError, load_settings
from gateway.egress.transports.cloud_http import OpenAIWireCloud
from gateway.egress.transports.provider_request import ProviderRequest
from router.errors import UpstreamError
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.redirecting import redirecting
from tests.fakes.threaded import ThreadedServer

KEY_ENV = "ECGW_TEST_CLOUD_HTTP_KEY"
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def _provider() -> Iterator[tuple[ModelServer, str]]:
    fake = ModelServer("provider", model="gpt-test")
    with ThreadedServer(fake.app) as server:
        yield fake, server.url


@pytest.fixture()
def provider(_provider: tuple[ModelServer, str]) -> tuple[ModelServer, str]:
    _provider[0].reset()
    return _provider


def _transport(url: str, **settings: Any) -> OpenAIWireCloud:
    values: dict[str, Any] = {"model": "openai/gpt-test", "api_base": url + "/v1", "api_key_env": None,
                              "transport": "openai", **settings}
    return OpenAIWireCloud(CloudSettings(**values), backoff_s=(0.01,))


def _run(transport: OpenAIWireCloud, request: ProviderRequest, *, stream: bool = False) -> Any:
    async def go() -> Any:
        try:
            if stream:
                return [chunk async for chunk in transport.stream(request)]
            return await transport.complete(request)
        finally:
            await transport.aclose()

    return asyncio.run(go())


def test_it_sends_the_allowlisted_body_to_the_configured_url_with_the_configured_key(provider, monkeypatch):
    fake, url = provider
    monkeypatch.setenv(KEY_ENV, "sk-configured")
    request = ProviderRequest(messages=HELLO, params={"temperature": 0.2, "top_k": 5, "thinking": {"type": "x"}},
                              extra_body={"vendor_options": {"a": 1}})
    answer = _run(_transport(url, api_key_env=KEY_ENV), request)
    assert answer["choices"][0]["message"]["content"] == "provider reply to: hello"
    assert fake.requests == [{"messages": HELLO, "temperature": 0.2, "top_k": 5, "thinking": {"type": "x"},
                              "vendor_options": {"a": 1}, "model": "gpt-test", "stream": False}]
    assert fake.headers[0]["authorization"] == "Bearer sk-configured"


def test_openais_own_api_gets_openais_parameters_only():
    transport = OpenAIWireCloud(CloudSettings(model="openai/gpt-x", transport="openai", api_key_env=None))
    sent = json.loads(transport._payload(ProviderRequest(messages=HELLO, params={"top_k": 5, "seed": 1}),
                                         stream=False))
    assert sent == {"messages": HELLO, "seed": 1, "model": "gpt-x", "stream": False}


def test_a_stream_asks_for_usage_and_ends_with_it(provider):
    fake, url = provider
    chunks = _run(_transport(url), ProviderRequest(messages=HELLO), stream=True)
    assert fake.requests[0]["stream"] is True and fake.requests[0]["stream_options"] == {"include_usage": True}
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "provider reply to: hello"
    assert chunks[-1]["usage"]["completion_tokens"] > 0 and not chunks[-1]["choices"]


def test_a_missing_key_fails_before_any_network_attempt(provider, monkeypatch):
    fake, _ = provider
    monkeypatch.delenv(KEY_ENV, raising=False)
    transport = OpenAIWireCloud(CloudSettings(model="deepseek/deepseek-chat", api_key_env=KEY_ENV,
                                              transport="openai"))
    assert asyncio.run(transport.ready())[0] is False
    with pytest.raises(UpstreamError) as caught:
        _run(transport, ProviderRequest(messages=HELLO))
    assert caught.value.status == 503 and caught.value.type == "cloud_not_configured"
    assert KEY_ENV in str(caught.value)
    assert not fake.requests


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_retried_status_is_tried_again_up_to_max_retries(provider, stream):
    fake, url = provider
    fake.script(Reply(status=503), Reply(status=429), Reply(content="third time"))
    answer = _run(_transport(url, max_retries=2), ProviderRequest(messages=HELLO), stream=stream)
    text = (answer["choices"][0]["message"]["content"] if not stream else
            "".join(c["choices"][0]["delta"].get("content") or "" for c in answer if c["choices"]))
    assert text == "third time" and len(fake.requests) == 3


def test_without_retries_a_providers_status_reaches_the_client_with_its_message(provider):
    fake, url = provider
    fake.script(Reply(status=429, error_message="slow down"), Reply(status=400, error_message="bad tools"))
    for status, message in ((429, "slow down"), (400, "bad tools")):
        with pytest.raises(UpstreamError) as caught:
            _run(_transport(url), ProviderRequest(messages=HELLO))
        assert caught.value.status == status and message in str(caught.value)
    fake.script(Reply(status=500, error_message="overloaded"))
    with pytest.raises(UpstreamError) as caught:
        _run(_transport(url, max_retries=0), ProviderRequest(messages=HELLO))
    assert caught.value.status == 502 and "overloaded" in str(caught.value)


def test_a_client_error_is_not_tried_again(provider):
    fake, url = provider
    fake.script(Reply(status=400, error_message="bad request"))
    with pytest.raises(UpstreamError) as caught:
        _run(_transport(url, max_retries=3), ProviderRequest(messages=HELLO))
    assert caught.value.status == 400 and len(fake.requests) == 1


def test_a_slow_provider_times_out_and_an_absent_one_is_unreachable(provider):
    fake, url = provider
    fake.script(Reply(delay_s=1.0))
    with pytest.raises(UpstreamError) as caught:
        _run(_transport(url, timeout_s=0.2), ProviderRequest(messages=HELLO))
    assert caught.value.status == 504 and caught.value.type == "upstream_timeout"
    assert "cloud.timeout_s" in str(caught.value)
    with pytest.raises(UpstreamError) as caught:
        _run(_transport("http://127.0.0.1:9"), ProviderRequest(messages=HELLO), stream=True)
    assert caught.value.status == 502 and caught.value.type == "upstream_unreachable"


def test_the_transport_needs_an_address_for_a_provider_it_does_not_know():
    with pytest.raises(ConfigError, match="cloud.api_base"):
        load_settings(None, cloud={"model": "anthropic/claude-x", "transport": "openai"})
    with pytest.raises(ConfigError, match="cloud.api_base"):
        load_settings(None, cloud={"targets": {"a": {"model": "bedrock/x", "transport": "openai"}}})
    known = load_settings(None, cloud={"model": "deepseek/deepseek-chat", "transport": "openai"})
    assert OpenAIWireCloud(known.cloud)._url == "https://api.deepseek.com/chat/completions"
    targets = load_settings(None, cloud={"targets": {"fast": {"model": "openai/gpt-x", "transport": "openai"},
                                                     "other": {"model": "anthropic/claude-x"}}})
    assert targets.cloud.for_target("fast").transport == "openai"
    assert targets.cloud.for_target("other").transport == "auto"  # litellm for anthropic (test_default_door)


def test_the_operators_proxy_environment_applies_as_to_litellms_calls(monkeypatch):
    """The call goes through the proxy the environment names for its URL (a recording server acting as the
    proxy), and a host NO_PROXY names is reached directly."""
    from tests.gateway.egress.transports.test_provider_boundary import Recorder

    recorder = Recorder()
    with ThreadedServer(recorder.app) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        answer = _run(_transport("http://provider.internal"), ProviderRequest(messages=HELLO))
        assert answer["choices"][0]["message"]["content"] == "FROM-THE-RECORDER"
        assert [(method, path) for method, path, _ in recorder.hits] == [("POST", "/v1/chat/completions")]
        assert recorder.hits[0][2]["host"] == "provider.internal"  # asked of the proxy, for the provider


def test_a_host_no_proxy_names_is_reached_directly(provider, monkeypatch):
    fake, url = provider
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    answer = _run(_transport(url), ProviderRequest(messages=HELLO))
    assert answer["choices"][0]["message"]["content"] == "provider reply to: hello" and len(fake.requests) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_redirect_is_not_followed_the_body_and_key_stay_with_the_configured_url(provider, monkeypatch, stream):
    """A configured URL that answers 307 (a compromised or misconfigured endpoint) gets neither the body nor the key
    sent on: the call fails as the provider's."""
    fake, elsewhere = provider
    monkeypatch.setenv(KEY_ENV, "sk-configured")
    with ThreadedServer(redirecting(elsewhere)) as redirector:
        with pytest.raises(UpstreamError) as caught:
            _run(_transport(redirector.url, api_key_env=KEY_ENV, max_retries=2), ProviderRequest(messages=HELLO),
                 stream=stream)
    assert caught.value.status == 502 and "307" in str(caught.value)
    assert not fake.requests


def test_a_target_takes_as_many_calls_at_once_as_litellms_client_would():
    """aiohttp's default pool is 100 connections; a call past it waits inside the connect timeout."""
    from gateway.egress.transports.cloud_http import MAX_CONNECTIONS

    async def limit() -> int:
        transport = _transport("http://127.0.0.1:9")
        try:
            connector = transport._client().connector
            assert connector is not None
            return connector.limit
        finally:
            await transport.aclose()

    assert asyncio.run(limit()) == MAX_CONNECTIONS == 1000


async def _dropping_provider(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, served: list[str]) -> None:
    """A provider that keeps its first connection alive after one answer, then drops it when the next request comes
    over it (what a server that closed an idle kept-alive connection looks like to the client); every other
    connection is answered."""
    first = not served
    on_this = 0
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
        await reader.readexactly(length)
        on_this += 1
        if first and on_this == 2:
            served.append("dropped")
            writer.close()
            return
        served.append("answered")
        body = json.dumps({"id": "c", "object": "chat.completion", "model": "gpt-test", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: keep-alive\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()


def test_a_kept_alive_connection_the_provider_dropped_is_replaced_once_without_retries_configured():
    served: list[str] = []

    async def go() -> list[Any]:
        server = await asyncio.start_server(lambda r, w: _dropping_provider(r, w, served), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport = _transport(f"http://127.0.0.1:{port}")  # cloud.max_retries: 0
        try:
            return [await transport.complete(ProviderRequest(messages=HELLO)) for _ in range(2)]
        finally:
            await transport.aclose()
            server.close()

    answers = asyncio.run(go())
    assert [a["choices"][0]["message"]["content"] for a in answers] == ["hi", "hi"]
    assert served == ["answered", "dropped", "answered"]  # the second call went again, on a new connection


def test_a_new_connection_the_provider_drops_is_not_tried_again_without_retries_configured():
    served: list[str] = []

    async def drop_first(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # it may have taken, and billed, the call: no free second try
        served.append("dropped")
        writer.close()

    async def go() -> None:
        server = await asyncio.start_server(drop_first, "127.0.0.1", 0)
        transport = _transport(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        try:
            await transport.complete(ProviderRequest(messages=HELLO))
        finally:
            await transport.aclose()
            server.close()

    with pytest.raises(UpstreamError) as caught:
        asyncio.run(go())
    assert caught.value.status == 502 and served == ["dropped"]
