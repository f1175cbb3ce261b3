"""The gateway against the fake edge speaking vLLM's real dialect (``ModelServer(dialect="vllm")``), so what
tests/real/test_vllm.py found about the real server is covered on every run, in milliseconds, without it.
The contract test at the end keeps the fake honest: the same requests to the real vLLM and to the fake must
produce the same shape."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer
from tests.real.helpers import VLLM_MODEL, vllm_url

WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture(scope="module")
def _vllm_like() -> Iterator[tuple[ModelServer, ThreadedServer]]:
    fake = ModelServer("vllm", model=VLLM_MODEL, dialect="vllm")
    with ThreadedServer(fake.app) as server:
        yield fake, server


@pytest.fixture()
def vllm_like(_vllm_like: tuple[ModelServer, ThreadedServer]) -> ModelServer:
    fake, server = _vllm_like
    fake.reset()
    fake.url = server.url  # type: ignore[attr-defined]
    return fake


@pytest.fixture()
def gw(start_gateway, vllm_like):
    gateway = start_gateway(edge={"base_url": vllm_like.url + "/v1", "model": VLLM_MODEL})
    return gateway, openai.OpenAI(base_url=gateway.base_url, api_key="k", max_retries=0)


def test_text_stream_ending_on_the_last_content_chunk(gw, vllm_like):
    gateway, client = gw
    vllm_like.script(Reply(content="one two three"))
    chunks = list(client.chat.completions.create(model="ecgw/edge-only", messages=[{"role": "user", "content": "x"}],
                                                 stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "one two three"
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens == 0
    call = gateway.meter.calls[-1]
    assert call.output_text == "one two three" and call.usage["completion_tokens"] == 3


@pytest.mark.parametrize("stream", [False, True])
def test_tool_call_in_vllm_shape(gw, vllm_like, stream):
    _, client = gw
    vllm_like.script(Reply(content=None, tool_calls=[ToolCall("get_weather", '"Paris"')]))
    kwargs = dict(model="ecgw/edge-only", messages=[{"role": "user", "content": "Weather?"}], tools=WEATHER,
                  tool_choice="required")
    if not stream:
        message = client.chat.completions.create(**kwargs).choices[0].message
        (call,) = message.tool_calls
        assert message.content == "" and call.id.startswith("chatcmpl-tool-")
        assert (call.function.name, call.function.arguments) == ("get_weather", '"Paris"')
        return
    names, ids, arguments, finishes = [], set(), "", []
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        for choice in chunk.choices:
            finishes += [choice.finish_reason] if choice.finish_reason else []
            for delta in choice.delta.tool_calls or ():
                ids |= {delta.id} if delta.id else set()
                names += [delta.function.name] if delta.function.name else []
                arguments += delta.function.arguments or ""
    assert names == ["get_weather"] and len(ids) == 1 and arguments == '"Paris"' and finishes == ["tool_calls"]


def test_reasoning_field_passes_through(gw, vllm_like):
    _, client = gw
    vllm_like.script(Reply(content="4", reasoning="two plus two"), Reply(content="4", reasoning="two plus two"))
    message = client.chat.completions.create(model="ecgw/edge-only",
                                             messages=[{"role": "user", "content": "2+2?"}]).choices[0].message
    assert message.model_extra.get("reasoning") == "two plus two"
    chunks = list(client.chat.completions.create(model="ecgw/edge-only", stream=True,
                                                 messages=[{"role": "user", "content": "2+2?"}]))
    assert "".join(c.choices[0].delta.model_extra.get("reasoning") or "" for c in chunks if c.choices).strip() \
        == "two plus two"


def test_sampled_token_first_in_top_logprobs_does_not_change_the_entropy(start_gateway, vllm_like):
    gateway = start_gateway(edge={"base_url": vllm_like.url + "/v1", "model": VLLM_MODEL},
                            policy={"knobs": {"step-routing": {"mode": "probe", "tau": 5.0}}})
    client = openai.OpenAI(base_url=gateway.base_url, api_key="k", max_retries=0)
    top = {"blue": 0.2, "red": 0.5, "green": 0.3}  # the sampled token ("blue") is not the most likely
    vllm_like.script(Reply(content="blue", first_token_top=top), Reply(content="blue"))
    client.chat.completions.create(model="ecgw/step-routing", messages=[{"role": "user", "content": "Colour?"}],
                                   extra_headers={"X-Session-Id": "dialect-entropy"})
    probe = vllm_like.requests[0]
    assert probe["top_logprobs"] == 20 and probe["max_tokens"] == 1
    state = asyncio.run(gateway.services.sessions.get("dialect-entropy", "step_routing"))
    expected = -sum(p * math.log(p) for p in top.values())
    assert state["last"]["entropy"] == pytest.approx(expected)


# contract: the fake's vLLM dialect against the real vLLM ----------------------------------------------------------


def _events(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.stream("POST", url + "/chat/completions", json=body, timeout=120) as response:
        assert response.status_code == 200
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def _shape(events: list[dict[str, Any]]) -> list[str]:
    """One word per chunk, repeats collapsed: what a client's parser must cope with, not what the model said."""
    words: list[str] = []
    for event in events:
        if not event["choices"]:
            details = sorted(event["usage"].get("prompt_tokens_details") or {})
            word = "usage" + (f"({','.join(details)})" if details else "")
        else:
            choice = event["choices"][0]
            delta = choice["delta"]
            parts = []
            for key in sorted(delta):
                if key == "tool_calls":
                    call = delta[key][0]
                    parts.append("call[" + ",".join(sorted(k for k in call if k != "index"))
                                 + ":" + ",".join(sorted(call.get("function") or {})) + "]")
                else:
                    parts.append(key + ("=null" if delta[key] is None else ""))
            word = "+".join(parts) or "{}"
            if choice.get("finish_reason"):
                word += "|finish"
        if not words or words[-1] != word:
            words.append(word)
    return words


@pytest.mark.real_vllm
@pytest.mark.parametrize("case", ["text", "tool"])
def test_the_fake_vllm_dialect_streams_like_the_real_vllm(vllm_like, case):
    real = vllm_url()
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "Weather in Paris?"}], "max_tokens": 200,
                            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    if case == "tool":
        body.update(tools=WEATHER, tool_choice="required")
        vllm_like.script(Reply(content=None, tool_calls=[ToolCall("get_weather", '"Paris"')]))
    else:
        body["max_tokens"] = 6
        vllm_like.script(Reply(content="one two three four five six seven", finish_reason="length"))
    got_real = _shape(_events(real, {**body, "model": VLLM_MODEL}))
    got_fake = _shape(_events(vllm_like.url + "/v1", {**body, "model": VLLM_MODEL}))  # type: ignore[attr-defined]
    assert got_fake == got_real
