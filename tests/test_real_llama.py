"""Through ecgw against a real model: SmolLM2-135M-Instruct on llama-cpp-python's server.
The model's answers are poor; these tests assert protocol, not wisdom."""

from __future__ import annotations

import json

import openai
import pytest

from tests.real_parts import LLAMA_COMPAT, llama_url

pytestmark = pytest.mark.real_model

WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture()
def real(start_gateway):
    url = llama_url()
    gw = start_gateway(edge={"base_url": url,
                             "model": "smollm2", "read_timeout_s": 120, "compat": LLAMA_COMPAT})
    return openai.OpenAI(base_url=gw.base_url, api_key="k", max_retries=0), gw


def test_streaming_chat(real):
    client, gw = real
    chunks = list(client.chat.completions.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "Say hello."}], max_tokens=12, stream=True,
        stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    call = gw.meter.calls[-1]
    assert call.streamed and call.status == 200 and call.output_text == text


def test_logprobs_with_top_logprobs(real):
    client, _ = real
    response = client.chat.completions.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "Pick a colour."}], max_tokens=3,
        temperature=0, logprobs=True, top_logprobs=5)
    first = response.choices[0].logprobs.content[0]
    assert len(first.top_logprobs) >= 5
    assert all(t.logprob <= 0 for t in first.top_logprobs)


def test_forced_tool_call(real):
    client, _ = real
    choice = {"type": "function", "function": {"name": "get_weather"}}
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    response = client.chat.completions.create(model="ecgw/edge-only", messages=messages, tools=WEATHER,
                                              tool_choice=choice, max_tokens=40)
    call = response.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and call.id



@pytest.mark.parametrize("dedupe", [True, False])
def test_streamed_forced_tool_call_names_the_tool_once(start_gateway, dedupe):
    # Stream the tool call upstream for real (stream_tools on): the server repeats the name in every delta.
    gw = start_gateway(edge={"base_url": llama_url(), "model": "smollm2", "read_timeout_s": 120,
                             "compat": {**LLAMA_COMPAT, "stream_tools": True, "dedupe_tool_call_names": dedupe}})
    client = openai.OpenAI(base_url=gw.base_url, api_key="k", max_retries=0)
    choice = {"type": "function", "function": {"name": "get_weather"}}
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    names, ids, arguments = [], set(), ""
    for chunk in client.chat.completions.create(model="ecgw/edge-only", messages=messages, tools=WEATHER,
                                                tool_choice=choice, max_tokens=40, stream=True):
        for delta in (chunk.choices[0].delta.tool_calls or ()) if chunk.choices else ():
            if delta.function and delta.function.name:
                names.append(delta.function.name)
            if delta.id:
                ids.add(delta.id)
            arguments += (delta.function.arguments or "") if delta.function else ""
    if dedupe:
        assert names == ["get_weather"] and len(ids) == 1 and arguments
    else:  # what a client would see without the switch: the name once per delta
        assert len(names) > 1


def test_streaming_with_tool_choice_auto_works_through_fallback(real):
    client, _ = real
    chunks = list(client.chat.completions.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "Weather in Rome?"}], tools=WEATHER,
        tool_choice="auto", max_tokens=30, stream=True))
    assert chunks and chunks[-1].choices[0].finish_reason in ("stop", "length", "tool_calls")


def test_list_content_and_null_assistant_content(real):
    client, _ = real
    response = client.chat.completions.create(model="ecgw/edge-only", max_tokens=8, messages=[
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"temp_c": 4})},
        {"role": "user", "content": [{"type": "text", "text": "Summarise."}]}])
    assert response.choices[0].message.content is not None


def test_max_completion_tokens_is_honoured(real):
    client, gw = real
    response = client.chat.completions.create(model="ecgw/edge-only", max_completion_tokens=5, messages=[
        {"role": "user", "content": "Write a long story about a dragon."}])
    assert response.usage.completion_tokens <= 5
    assert response.choices[0].finish_reason == "length"
