"""The OpenAI surface through a real gateway, driven by the official SDK."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.fakes.model_server import Reply, ToolCall

TOOLS = [{"type": "function", "function": {"name": "read", "description": "read a file",
                                           "parameters": {"type": "object",
                                                          "properties": {"path": {"type": "string"}}}}}]


def client(gateway, **headers):
    return openai.OpenAI(base_url=gateway.base_url, api_key="k", default_headers=headers or None)


def test_non_streaming_edge_answer_reaches_client(gateway, edge):
    edge.script(Reply(content="the answer is 42"))
    response = client(gateway).chat.completions.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "what is it?"}])
    assert response.choices[0].message.content == "the answer is 42"
    assert response.usage is not None and response.usage.completion_tokens == 4
    assert edge.requests[-1]["model"] == "edge-model"


def test_streaming_yields_chunks_in_order_and_ends(gateway, edge):
    edge.script(Reply(content="one two three four"))
    stream = client(gateway).chat.completions.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "count"}], stream=True)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four"
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_usage_chunk_is_requested_upstream_but_only_shown_when_client_asked(gateway, edge):
    messages = [{"role": "user", "content": "hi"}]
    chunks = list(client(gateway).chat.completions.create(model="ecgw/edge-only", messages=messages, stream=True))
    assert edge.requests[-1]["stream_options"] == {"include_usage": True}
    assert all(c.usage is None for c in chunks)
    assert gateway.meter.calls[-1].usage is not None  # metering saw it anyway

    chunks = list(client(gateway).chat.completions.create(
        model="ecgw/edge-only", messages=messages, stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 2
    assert chunks[-1].choices == []


async def test_async_client_streams_tool_call_deltas_with_index_id_and_name(gateway, edge):
    edge.script(Reply(content=None, tool_calls=[ToolCall("read", '{"path": "/tmp/a.txt"}', id="call_a"),
                                                ToolCall("read", '{"path": "/tmp/b.txt"}', id="call_b")]))
    async with openai.AsyncOpenAI(base_url=gateway.base_url, api_key="k") as aclient:
        stream = await aclient.chat.completions.create(
            model="ecgw/edge-only", messages=[{"role": "user", "content": "read both"}], tools=TOOLS,
            tool_choice="auto", parallel_tool_calls=True, stream=True)
        calls: dict[int, dict[str, str]] = {}
        async for chunk in stream:
            for choice in chunk.choices:
                for delta in choice.delta.tool_calls or ():
                    slot = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] += delta.id or ""
                    slot["name"] += (delta.function.name or "") if delta.function else ""
                    slot["arguments"] += (delta.function.arguments or "") if delta.function else ""
    assert calls == {0: {"id": "call_a", "name": "read", "arguments": '{"path": "/tmp/a.txt"}'},
                     1: {"id": "call_b", "name": "read", "arguments": '{"path": "/tmp/b.txt"}'}}
    sent = edge.requests[-1]
    assert sent["tools"] == TOOLS and sent["tool_choice"] == "auto" and sent["parallel_tool_calls"] is True


def test_everything_the_agent_sends_passes_through(gateway, edge):
    client(gateway).chat.completions.create(
        model="ecgw/edge-only",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        temperature=0.2, top_p=0.9, seed=7, stop=["\n\n"], max_completion_tokens=50,
        response_format={"type": "json_object"}, logprobs=True, top_logprobs=3,
        reasoning_effort="low", metadata={"session_id": "s-pass"},
        extra_body={"chat_template_kwargs": {"enable_thinking": False}, "vendor_extra": {"x": 1}})
    sent = edge.requests[-1]
    for key, value in {"temperature": 0.2, "top_p": 0.9, "seed": 7, "stop": ["\n\n"], "max_completion_tokens": 50,
                       "response_format": {"type": "json_object"}, "logprobs": True, "top_logprobs": 3,
                       "reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": False},
                       "vendor_extra": {"x": 1}}.items():
        assert sent[key] == value, key
    assert sent["messages"][0] == {"role": "system", "content": "be brief"}


def test_logprobs_and_reasoning_content_come_back(gateway, edge):
    edge.script(Reply(content="Paris", reasoning="the capital of France", first_token_top={"Paris": 0.8, "Lyon": 0.2}))
    raw = httpx.post(gateway.base_url + "/chat/completions", json={
        "model": "ecgw/edge-only", "messages": [{"role": "user", "content": "capital?"}],
        "logprobs": True, "top_logprobs": 2}).json()
    choice = raw["choices"][0]
    assert choice["message"]["reasoning_content"] == "the capital of France"
    tops = choice["logprobs"]["content"][0]["top_logprobs"]
    assert [t["token"] for t in tops] == ["Paris", "Lyon"]
    assert tops[0]["logprob"] == pytest.approx(-0.2231, abs=1e-3)


def test_streamed_reasoning_and_logprobs_deltas_pass_through(gateway, edge):
    edge.script(Reply(content="yes", reasoning="thinking hard", first_token_top={"yes": 0.6, "no": 0.4}))
    with httpx.stream("POST", gateway.base_url + "/chat/completions", json={
            "model": "ecgw/edge-only", "messages": [{"role": "user", "content": "?"}], "stream": True,
            "logprobs": True, "top_logprobs": 2}) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines()
                  if line.startswith("data: ") and line != "data: [DONE]"]
    reasoning = "".join(e["choices"][0]["delta"].get("reasoning_content", "") for e in events if e["choices"])
    assert reasoning == "thinking hard "
    with_logprobs = [e for e in events if e["choices"] and e["choices"][0].get("logprobs")]
    assert with_logprobs[0]["choices"][0]["logprobs"]["content"][0]["top_logprobs"][1]["token"] == "no"


def test_cloud_only_goes_to_the_cloud_and_says_so(gateway, edge, cloud):
    cloud.script(Reply(content="from the cloud"))
    response = client(gateway).chat.completions.with_raw_response.create(
        model="ecgw/cloud-only", messages=[{"role": "user", "content": "hard question"}])
    assert response.parse().choices[0].message.content == "from the cloud"
    assert response.headers["x-ecgw-route"] == "cloud"
    assert response.headers["x-ecgw-policy"] == "cloud-only"
    assert len(cloud.requests) == 1 and edge.requests == []


def test_cloud_stream_with_tool_calls(gateway, cloud):
    cloud.script(Reply(content=None, tool_calls=[ToolCall("read", '{"path": "notes.md"}', id="call_1")]))
    stream = client(gateway).chat.completions.create(
        model="ecgw/cloud-only", messages=[{"role": "user", "content": "read notes"}], tools=TOOLS, stream=True)
    chunks = list(stream)
    deltas = [d for c in chunks for ch in c.choices for d in ch.delta.tool_calls or ()]
    assert deltas[0].id == "call_1" and deltas[0].function.name == "read" and deltas[0].index == 0
    assert "".join(d.function.arguments or "" for d in deltas) == '{"path": "notes.md"}'
    assert [ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason] == ["tool_calls"]


def test_response_headers_name_session_policy_route_and_request(gateway):
    response = client(gateway, **{"X-Session-Id": "run-17"}).chat.completions.with_raw_response.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "hi"}])
    assert response.headers["x-ecgw-session"] == "run-17"
    assert response.headers["x-ecgw-policy"] == "edge-only"
    assert response.headers["x-ecgw-route"] == "edge"
    assert response.headers["x-ecgw-request-id"].startswith("req-")
    assert gateway.meter.calls[-1].request_id == response.headers["x-ecgw-request-id"]


def test_policy_header_beats_model_alias(gateway, edge, cloud):
    response = client(gateway, **{"X-ECGW-Policy": "cloud-only"}).chat.completions.with_raw_response.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "hi"}])
    assert response.headers["x-ecgw-policy"] == "cloud-only"
    assert len(cloud.requests) == 1 and edge.requests == []


def test_default_policy_comes_from_config(start_gateway, edge, cloud):
    gw = start_gateway(policy={"default": "cloud-only"})
    client(gw).chat.completions.create(model="anything", messages=[{"role": "user", "content": "hi"}])
    assert len(cloud.requests) == 1 and edge.requests == []


def test_models_lists_policy_aliases_and_configured_models(gateway):
    ids = {m.id for m in client(gateway).models.list()}
    assert {"ecgw/edge-only", "ecgw/cloud-only", "edge-model", "openai/gpt-test"} <= ids


def test_naming_the_edge_model_routes_to_the_edge(gateway, edge, cloud):
    client(gateway).chat.completions.create(model="edge-model", messages=[{"role": "user", "content": "hi"}])
    assert len(edge.requests) == 1 and cloud.requests == []
