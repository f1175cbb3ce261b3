"""What litellm's DeepSeek mapping did is kept by the own door (issue 41): the same requests, through litellm and
through the own transport, reach a recording DeepSeek double (OpenAI's chat-completions wire at the provider's
``/chat/completions``) with the same generation parameters: ``reasoning_effort`` turned into ``thinking``,
``thinking``'s budget dropped, ``verbosity``, which DeepSeek does not take, left out as litellm's ``drop_params``
left it out, and ``top_k`` sent as litellm sends it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.config.settings import CloudSettings
from gateway.egress.doors import configured_transport
from gateway.egress.transports.provider_request import ProviderRequest, ProviderTransport
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer

HELLO = [{"role": "user", "content": "hello"}]
# The body's parts each door sets its own way (litellm adds none of these for DeepSeek; the own door neither).
CALL = {"model", "messages", "stream", "stream_options"}

CASES: dict[str, dict[str, Any]] = {
    "effort high": {"reasoning_effort": "high"},
    "effort none": {"reasoning_effort": "none"},
    "effort unknown to DeepSeek": {"reasoning_effort": "turbo"},
    "thinking with a budget": {"thinking": {"type": "enabled", "budget_tokens": 2048}},
    "thinking disabled beside an effort": {"thinking": {"type": "disabled"}, "reasoning_effort": "high"},
    "parameters DeepSeek does not take": {"top_k": 5, "verbosity": "low", "temperature": 0.3, "seed": 7},
}
EXPECTED: dict[str, dict[str, Any]] = {
    "effort high": {"thinking": {"type": "enabled"}, "reasoning_effort": "high"},
    "effort none": {"thinking": {"type": "disabled"}},
    "effort unknown to DeepSeek": {"thinking": {"type": "enabled"}},
    "thinking with a budget": {"thinking": {"type": "enabled"}},
    "thinking disabled beside an effort": {"thinking": {"type": "disabled"}},
    "parameters DeepSeek does not take": {"top_k": 5, "temperature": 0.3, "seed": 7},
}


@pytest.fixture(scope="module")
def deepseek() -> Iterator[tuple[ModelServer, str]]:
    double = ModelServer("deepseek", model="deepseek-chat")
    with ThreadedServer(double.app) as server:
        yield double, server.url


def _call(transport: ProviderTransport, request: ProviderRequest) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        try:
            return await transport.complete(request)
        finally:
            await transport.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("door", ["litellm", "openai"])
@pytest.mark.parametrize("case", list(CASES))
def test_deepseek_gets_the_parameters_litellms_mapping_gave_it_through_either_door(
        deepseek: tuple[ModelServer, str], door: str, case: str):
    double, url = deepseek
    double.reset()
    transport = configured_transport(CloudSettings(model="deepseek/deepseek-chat", api_base=url, api_key_env=None,
                                                   transport=door))
    answer = _call(transport, ProviderRequest(messages=HELLO, params=CASES[case]))
    assert answer["choices"][0]["message"]["content"] == "deepseek reply to: hello"
    [sent] = double.requests
    assert sent["model"] == "deepseek-chat" and sent["messages"] == HELLO
    assert {k: v for k, v in sent.items() if k not in CALL} == EXPECTED[case]


def test_auto_sends_deepseek_through_the_own_door_and_the_mapping_applies(deepseek: tuple[ModelServer, str]):
    double, url = deepseek
    double.reset()
    transport = configured_transport(CloudSettings(model="deepseek/deepseek-chat", api_base=url, api_key_env=None))
    assert type(transport).__name__ == "OpenAIWireCloud"
    _call(transport, ProviderRequest(messages=HELLO, params={"reasoning_effort": "low", "top_k": 3}))
    assert {k: v for k, v in double.requests[0].items() if k not in CALL} == {
        "thinking": {"type": "enabled"}, "reasoning_effort": "low", "top_k": 3}
