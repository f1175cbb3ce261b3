"""Compatibility switches make a server that bends the spec work for clients that follow it."""

from __future__ import annotations

import httpx
import openai

from tests.fakes.model_server import Reply, ToolCall
from tests.real_parts import LLAMA_COMPAT

TOOLS = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object", "properties": {}}}}]


def test_request_is_normalised_for_the_server(start_gateway, edge):
    gw = start_gateway(edge={"compat": LLAMA_COMPAT})
    openai.OpenAI(base_url=gw.base_url, api_key="k").chat.completions.create(
        model="ecgw/edge-only", max_completion_tokens=20, messages=[
            {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}])
    sent = edge.requests[-1]
    assert sent["max_tokens"] == 20 and "max_completion_tokens" not in sent
    assert sent["messages"][0]["content"] == "part one\npart two"
    assert sent["messages"][1]["content"] == ""


def test_without_switches_the_request_is_untouched(gateway, edge):
    content = [{"type": "text", "text": "part one"}]
    openai.OpenAI(base_url=gateway.base_url, api_key="k").chat.completions.create(
        model="ecgw/edge-only", max_completion_tokens=20, messages=[{"role": "user", "content": content}])
    sent = edge.requests[-1]
    assert sent["max_completion_tokens"] == 20 and "max_tokens" not in sent
    assert sent["messages"][0]["content"] == content


def test_server_that_cannot_stream_tools_is_asked_once_and_restreamed(start_gateway, edge):
    gw = start_gateway(edge={"compat": LLAMA_COMPAT})
    edge.script(Reply(content=None, tool_calls=[ToolCall("ls", '"."', id="call_x")]))
    chunks = list(openai.OpenAI(base_url=gw.base_url, api_key="k").chat.completions.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "list"}], tools=TOOLS, stream=True,
        stream_options={"include_usage": True}))
    assert edge.requests[-1]["stream"] is False
    deltas = [d for c in chunks for ch in c.choices for d in ch.delta.tool_calls or ()]
    assert (deltas[0].id, deltas[0].function.name, deltas[0].function.arguments) == ("call_x", "ls", '"."')
    assert chunks[-1].usage is not None  # the non-streamed answer's usage is replayed as the usage chunk


def test_no_stream_usage_means_no_stream_options_upstream(start_gateway, edge):
    gw = start_gateway(edge={"compat": {"stream_usage": False}})
    list(openai.OpenAI(base_url=gw.base_url, api_key="k").chat.completions.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "x"}], stream=True,
        stream_options={"include_usage": True}))
    assert "stream_options" not in edge.requests[-1]


def test_tool_call_arguments_that_are_a_json_string_pass_unchanged(gateway, edge):
    edge.script(Reply(content=None, tool_calls=[ToolCall("ls", '"\\"Paris\\""', id="c")]))
    message = openai.OpenAI(base_url=gateway.base_url, api_key="k").chat.completions.create(
        model="ecgw/edge-only", messages=[{"role": "user", "content": "x"}], tools=TOOLS).choices[0].message
    assert message.tool_calls[0].function.arguments == '"\\"Paris\\""'


def test_health_and_readiness(start_gateway, gateway):
    assert httpx.get(gateway.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(gateway.url + "/readyz")
    assert ready.status_code == 200 and ready.json()["upstreams"]["edge"]["ready"] is True
    down = start_gateway(edge={"base_url": "http://127.0.0.1:9/v1"})
    answer = httpx.get(down.url + "/readyz")
    assert answer.status_code == 503 and answer.json()["upstreams"]["edge"]["ready"] is False
    assert "127.0.0.1:9" in answer.json()["upstreams"]["edge"]["detail"]
