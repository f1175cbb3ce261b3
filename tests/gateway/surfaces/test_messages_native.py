"""Messages behind a cloud model that speaks Anthropic itself (litellm ``anthropic/…``): what the chat shape would
lose — ``cache_control`` breakpoints, thinking blocks with their signatures, the ``thinking`` setting — reaches the
provider, and Anthropic's cache reads and writes come back to the client. The provider is a double speaking
Anthropic's wire format (tests/fakes/anthropic_server.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from tests.fakes.anthropic_server import AnthropicReply, AnthropicServer
from tests.fakes.threaded import ThreadedServer

NATIVE_MODEL = "anthropic/claude-sonnet-4-5"  # a model litellm knows thinks, so it keeps `thinking`
SECRET = "ghp_" + "Zx9Q" * 9
EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture(scope="module")
def _anthropic_server() -> Iterator[tuple[AnthropicServer, ThreadedServer]]:
    fake = AnthropicServer()
    with ThreadedServer(fake.app) as server:
        yield fake, server


@pytest.fixture()
def provider(_anthropic_server: tuple[AnthropicServer, ThreadedServer]) -> AnthropicServer:
    fake, server = _anthropic_server
    fake.reset()
    fake.url = server.url  # type: ignore[attr-defined]
    return fake


def request(**extra: Any) -> dict[str, Any]:
    return dict(
        model="ecgw/cloud-only", max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1024},
        system=[{"type": "text", "text": f"Deploy with {SECRET}.", "cache_control": EPHEMERAL}],
        tools=[{"name": "Read", "description": "read a file", "input_schema": {"type": "object"},
                "cache_control": EPHEMERAL}],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "read it", "cache_control": EPHEMERAL}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should read it.", "signature": "U0lHTkFUVVJF"},
                {"type": "redacted_thinking", "data": "RU5DUllQVEVE"},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "alpha",
                                          "cache_control": EPHEMERAL}]}],
        **extra)


@pytest.mark.parametrize("stream", [False, True])
def test_cache_breakpoints_and_thinking_reach_anthropic_and_cache_usage_comes_back(start_gateway, provider, stream):
    gw = start_gateway(cloud={"model": NATIVE_MODEL, "api_base": provider.url})  # type: ignore[attr-defined]
    provider.script(AnthropicReply(text="done", thinking="It said alpha.", signature="TkVXU0lH", input_tokens=7,
                                   cache_read=100, cache_write=20, output_tokens=9))
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
    if stream:
        with client.messages.stream(**request()) as events:
            kinds = {e.type for e in events}
            message = events.get_final_message()
        assert "signature" in kinds  # the SDK's event for signature_delta
    else:
        message = client.messages.create(**request())
    sent = provider.requests[-1]
    assert sent["system"] == [{"type": "text", "text": "Deploy with [GITHUB_TOKEN_001].", "cache_control": EPHEMERAL}]
    assert sent["tools"][0]["cache_control"] == EPHEMERAL
    assert sent["messages"][0]["content"] == [{"type": "text", "text": "read it", "cache_control": EPHEMERAL}]
    assert sent["messages"][1]["content"][:2] == [
        {"type": "thinking", "thinking": "I should read it.", "signature": "U0lHTkFUVVJF"},
        {"type": "redacted_thinking", "data": "RU5DUllQVEVE"}]
    assert sent["messages"][2]["content"][0]["cache_control"] == EPHEMERAL  # on the tool_result
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].signature == "TkVXU0lH" and message.content[0].thinking == "It said alpha."  # type: ignore[union-attr]
    assert message.usage.input_tokens == 7 and message.usage.output_tokens == 9
    assert message.usage.cache_read_input_tokens == 100 and message.usage.cache_creation_input_tokens == 20
    assert gw.meter.calls[-1].side == "cloud" and gw.meter.calls[-1].status == 200


def test_thinking_round_trip_restored_for_the_client_and_byte_identical_for_anthropic(start_gateway, provider):
    """Anthropic signs the thinking it wrote (with placeholders in it); the client sees the values restored, and
    when it passes the block back, the gateway sends Anthropic the very text it signed — never the raw value."""
    gw = start_gateway(cloud={"model": NATIVE_MODEL, "api_base": provider.url})  # type: ignore[attr-defined]
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0,
                                 default_headers={"X-Session-Id": "native-thinking"})
    signed = "I will deploy with [GITHUB_TOKEN_001]."
    provider.script(AnthropicReply(text="ok", thinking=signed, signature="U0lHTkVE"))
    first = client.messages.create(**request())
    thinking = first.content[0]
    assert thinking.thinking == f"I will deploy with {SECRET}." and thinking.signature == "U0lHTkVE"  # type: ignore[union-attr]
    again = request()
    again["messages"] = [*again["messages"],
                         {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                         {"role": "user", "content": "go on"}]
    client.messages.create(**again)
    sent = provider.requests[-1]
    passed_back = sent["messages"][-2]["content"][0]
    assert passed_back == {"type": "thinking", "thinking": signed, "signature": "U0lHTkVE"}
    assert SECRET not in str(provider.requests)
