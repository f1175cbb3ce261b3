"""Anthropic's Messages surface through a real gateway, driven by the official ``anthropic`` SDK: every request
field reaches the chat-shaped upstream as it should, every answer comes back as Anthropic's message or event
sequence, and errors come in Anthropic's envelope."""

from __future__ import annotations

import json

import anthropic
import httpx
import pytest

from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer

EDGE = "ecgw/edge-only"
READ_TOOL = {"name": "read_file", "description": "Read a file from the workspace",
             "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}


def client(gw, **headers):
    return anthropic.Anthropic(base_url=gw.url, api_key="k", default_headers=headers or None, max_retries=0)


def ask(gw, **kwargs):
    kwargs.setdefault("model", EDGE)
    kwargs.setdefault("max_tokens", 256)
    kwargs.setdefault("messages", [{"role": "user", "content": "hi"}])
    return client(gw).messages.create(**kwargs)


def events(gw, **kwargs):
    """The raw SSE events (name, data) as the client received them, and the request's response headers."""
    body = {"model": EDGE, "max_tokens": 256, "messages": [{"role": "user", "content": "hi"}], "stream": True,
            **kwargs}
    response = httpx.post(gw.url + "/v1/messages?beta=true", json=body, headers={"x-api-key": "k"}, timeout=10)
    assert response.headers["content-type"].startswith("text/event-stream"), response.text
    out = []
    for block in response.text.split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        data = json.loads(lines["data"])
        assert lines["event"] == data["type"]
        out.append((lines["event"], data))
    return out, response


# --- requests: what reaches the upstream -------------------------------------------------------------------------


def test_text_answer_with_usage_and_end_turn(gateway, edge):
    edge.script(Reply(content="the answer is 42"))
    message = ask(gateway, system="Be brief.", messages=[{"role": "user", "content": "what is it?"}])
    assert message.type == "message" and message.role == "assistant" and message.model == EDGE
    assert message.id.startswith("msg_")
    assert [b.type for b in message.content] == ["text"] and message.content[0].text == "the answer is 42"
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert edge.requests[-1]["messages"] == [{"role": "system", "content": "Be brief."},
                                             {"role": "user", "content": "what is it?"}]
    # the fake counts one token per word: <system> Be brief. <user> what is it? = 7 prompt, 4 out
    assert message.usage.input_tokens == 7 and message.usage.output_tokens == 4


def test_system_blocks_and_a_system_message_inside_messages(gateway, edge):
    ask(gateway, system=[{"type": "text", "text": "You are Claude Code."},
                         {"type": "text", "text": "Work in /repo.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "hi"},
                  {"role": "system", "content": [{"type": "text", "text": "Reply in French."}]},  # type: ignore[list-item]
                  {"role": "user", "content": [{"type": "text", "text": "go"}]}])
    sent = edge.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "You are Claude Code.\n\nWork in /repo."}
    assert sent[2] == {"role": "system", "content": "Reply in French."}
    assert sent[3] == {"role": "user", "content": [{"type": "text", "text": "go"}]}


def test_image_blocks_become_image_parts(gateway, edge):
    ask(gateway, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.org/a.png"}},
        {"type": "text", "text": "what is this?"}]}])
    parts = edge.requests[-1]["messages"][0]["content"]
    assert parts[0] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    assert parts[1] == {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}


def test_tool_use_and_tool_results_map_to_tool_calls_and_tool_messages(gateway, edge):
    ask(gateway, tools=[READ_TOOL], messages=[
        {"role": "user", "content": "read a and b"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading both."},
            {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a.txt"}},
            {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {"path": "b.txt"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "alpha"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": True,
             "content": [{"type": "text", "text": "no such file"}]},
            {"type": "text", "text": "and now?"}]}])
    sent = edge.requests[-1]["messages"]
    assert sent[1]["content"] == "Reading both."
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in sent[1]["tool_calls"]] \
        == [("toolu_a", "read_file", {"path": "a.txt"}), ("toolu_b", "read_file", {"path": "b.txt"})]
    assert sent[2] == {"role": "tool", "tool_call_id": "toolu_a", "content": "alpha"}
    assert sent[3] == {"role": "tool", "tool_call_id": "toolu_b", "content": "Error: no such file"}
    assert sent[4] == {"role": "user", "content": [{"type": "text", "text": "and now?"}]}


def test_thinking_passed_back_travels_as_reasoning_and_redacted_thinking_is_not_sent(gateway, edge):
    ask(gateway, messages=[
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The user greets me.", "signature": "c2lnbmF0dXJl"},
            {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
            {"type": "text", "text": "Hello!"}]},
        {"role": "user", "content": "again"}])
    assistant = edge.requests[-1]["messages"][1]
    assert assistant == {"role": "assistant", "content": "Hello!", "reasoning_content": "The user greets me."}


def test_tools_and_every_tool_choice(gateway, edge):
    choices = [({"type": "auto"}, "auto"), ({"type": "any"}, "required"), ({"type": "none"}, "none"),
               ({"type": "tool", "name": "read_file"}, {"type": "function", "function": {"name": "read_file"}})]
    for choice, expected in choices:
        ask(gateway, tools=[READ_TOOL], tool_choice=choice)
        assert edge.requests[-1]["tool_choice"] == expected
    assert edge.requests[-1]["tools"] == [{"type": "function", "function": {
        "name": "read_file", "parameters": READ_TOOL["input_schema"], "description": READ_TOOL["description"]}}]
    ask(gateway, tools=[READ_TOOL], tool_choice={"type": "auto", "disable_parallel_tool_use": True})
    assert edge.requests[-1]["parallel_tool_calls"] is False


def test_claude_code_extras_are_tolerated(gateway, edge):
    """What Claude Code sends beside the core fields: a deferred-loading tool, a server tool with no schema,
    context_management, output_config, adaptive thinking, metadata.user_id holding a JSON string."""
    edge.script(Reply(content="fine"))
    message = ask(gateway, tools=[{**READ_TOOL, "defer_loading": True},
                                  {"type": "web_search_20250305", "name": "web_search"}],
                  extra_body={"context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
                              "output_config": {"effort": "high"}},
                  thinking={"type": "adaptive"},  # type: ignore[arg-type,typeddict-item]
                  metadata={"user_id": json.dumps({"device_id": "d1", "session_id": "s-in-metadata"})})
    assert message.content[0].text == "fine"  # type: ignore[union-attr]
    sent = edge.requests[-1]
    assert [t["function"]["name"] for t in sent["tools"]] == ["read_file"]
    assert not {"context_management", "output_config", "thinking", "defer_loading"} & set(json.dumps(sent).split('"'))


def test_stop_sequences_and_max_tokens_reach_the_upstream_and_map_back(start_gateway, edge):
    gw = start_gateway()
    edge.script(Reply(content="one two three four five six"))
    message = ask(gw, max_tokens=3)
    assert edge.requests[-1]["max_tokens"] == 3
    assert message.stop_reason == "max_tokens" and message.content[0].text == "one two three"  # type: ignore[union-attr]
    edge.script(Reply(content="alpha beta"))
    ask(gw, stop_sequences=["END", "\n\n"])
    assert edge.requests[-1]["stop"] == ["END", "\n\n"]


def test_stop_sequence_reported_when_the_upstream_names_it(start_gateway, cloud):
    """vLLM says which stop string ended the answer (``stop_reason``); Anthropic's client gets ``stop_sequence``."""
    vllm = ModelServer("edge", model="edge-model", dialect="vllm")
    with ThreadedServer(vllm.app) as server:
        gw = start_gateway(edge={"base_url": server.url + "/v1"})
        vllm.script(Reply(content="alpha beta END gamma"))
        message = ask(gw, stop_sequences=["END"])
        assert message.stop_reason == "stop_sequence" and message.stop_sequence == "END"
        assert message.content[0].text == "alpha beta "  # type: ignore[union-attr]
        vllm.script(Reply(content="alpha beta END gamma"))
        names, _ = events(gw, stop_sequences=["END"])
        delta = next(data for name, data in names if name == "message_delta")
        assert delta["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "END"}


def test_tool_use_answer_json(gateway, edge):
    edge.script(Reply(content=None, tool_calls=[ToolCall("read_file", '{"path": "notes.md"}', id="call_1")]))
    message = ask(gateway, tools=[READ_TOOL])
    assert message.stop_reason == "tool_use"
    block = message.content[0]
    assert block.type == "tool_use" and block.id == "call_1" and block.name == "read_file"
    assert block.input == {"path": "notes.md"}


# --- sessions and metering --------------------------------------------------------------------------------------


def test_session_ids_from_claude_code_header_after_x_session_id(gateway, edge):
    c = client(gateway, **{"X-Claude-Code-Session-Id": "cc-1"})
    c.messages.create(model=EDGE, max_tokens=16, messages=[{"role": "user", "content": "hi"}],
                      metadata={"user_id": '{"session_id": "other"}'})
    assert gateway.meter.calls[-1].session_id == "cc-1"
    c.messages.create(model=EDGE, max_tokens=16, messages=[{"role": "user", "content": "hi"}],
                      extra_headers={"X-Session-Id": "explicit"})
    assert gateway.meter.calls[-1].session_id == "explicit"
    ask(gateway, metadata={"user_id": "user-7"})  # a user id is personal data: stored as a keyed hash
    stored = gateway.meter.calls[-1].session_id
    assert stored.startswith("u-") and "user-7" not in stored


def test_cloud_calls_are_metered_like_chat(gateway, cloud):
    cloud.script(Reply(content="from the cloud"))
    message = ask(gateway, model="ecgw/cloud-only", extra_headers={"X-Session-Id": "m-1"})
    assert message.content[0].text == "from the cloud"  # type: ignore[union-attr]
    call = gateway.meter.calls[-1]
    assert (call.side, call.session_id, call.policy, call.status) == ("cloud", "m-1", "cloud-only", 200)
    assert call.usage["completion_tokens"] == 3  # type: ignore[index]


# --- streaming -------------------------------------------------------------------------------------------------


def test_stream_text_follows_the_official_event_sequence(gateway, edge):
    edge.script(Reply(content="one two three"))
    seen, response = events(gateway)
    names = [name for name, _ in seen]
    assert names == ["message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta",
                     "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    start = seen[0][1]["message"]
    assert start["role"] == "assistant" and start["content"] == [] and start["stop_reason"] is None
    assert seen[2][1] == {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    assert "".join(d["delta"]["text"] for n, d in seen if n == "content_block_delta") == "one two three"
    assert seen[-2][1]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert seen[-2][1]["usage"]["output_tokens"] == 3 and seen[-2][1]["usage"]["input_tokens"] == 2
    assert response.headers["x-ecgw-policy"] == "edge-only"


def test_stream_tool_use_with_input_json_deltas_through_the_sdk(gateway, edge):
    edge.script(Reply(content="Let me look.",
                      tool_calls=[ToolCall("read_file", '{"path": "a/very/long/path/notes.md"}', id="call_9")]))
    with client(gateway).messages.stream(model=EDGE, max_tokens=64, tools=[READ_TOOL],
                                         messages=[{"role": "user", "content": "read notes"}]) as stream:
        raw = [e.type for e in stream]
        final = stream.get_final_message()
    assert "input_json" in raw  # the SDK's own event for input_json_delta
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.content[1].input == {"path": "a/very/long/path/notes.md"}  # type: ignore[union-attr]
    assert final.content[1].id == "call_9" and final.stop_reason == "tool_use"
    deltas, _ = events(gateway, tools=[READ_TOOL])  # unscripted: a plain text answer, one block
    assert [d["index"] for n, d in deltas if n == "content_block_start"] == [0]


def test_stream_two_blocks_have_consecutive_indices(gateway, edge):
    edge.script(Reply(content="Reading.", tool_calls=[ToolCall("read_file", '{"path": "x"}', id="c1"),
                                                      ToolCall("read_file", '{"path": "y"}', id="c2")]))
    seen, _ = events(gateway, tools=[READ_TOOL])
    starts = [(d["index"], d["content_block"]["type"]) for n, d in seen if n == "content_block_start"]
    stops = [d["index"] for n, d in seen if n == "content_block_stop"]
    assert starts == [(0, "text"), (1, "tool_use"), (2, "tool_use")] and stops == [0, 1, 2]
    partial = [(d["index"], d["delta"]["partial_json"]) for n, d in seen
               if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"]
    assert json.loads("".join(p for i, p in partial if i == 2)) == {"path": "y"}


def test_stream_thinking_block_when_thinking_is_on(gateway, edge):
    edge.script(Reply(content="Hi.", reasoning="greeting back"))
    seen, _ = events(gateway, thinking={"type": "enabled", "budget_tokens": 1024})
    blocks = [d["content_block"]["type"] for n, d in seen if n == "content_block_start"]
    assert blocks == ["thinking", "text"]
    thought = "".join(d["delta"]["thinking"] for n, d in seen
                      if n == "content_block_delta" and d["delta"]["type"] == "thinking_delta")
    assert thought == "greeting back "
    edge.script(Reply(content="Hi.", reasoning="greeting back"))
    seen, _ = events(gateway)  # thinking not asked for: no thinking block
    assert [d["content_block"]["type"] for n, d in seen if n == "content_block_start"] == ["text"]


def test_json_thinking_block_when_thinking_is_on(gateway, edge):
    edge.script(Reply(content="Hi.", reasoning="greeting back"))
    message = ask(gateway, thinking={"type": "enabled", "budget_tokens": 1024})
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].thinking == "greeting back"  # type: ignore[union-attr]


# --- errors ----------------------------------------------------------------------------------------------------


def test_errors_come_in_anthropic_shape_with_chat_statuses(start_gateway, edge):
    gw = start_gateway(server={"api_keys": ["good"]})
    with pytest.raises(anthropic.AuthenticationError) as caught:
        anthropic.Anthropic(base_url=gw.url, api_key="bad", max_retries=0).messages.create(
            model=EDGE, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 401
    assert caught.value.body == {"type": "error", "error": {
        "type": "authentication_error", "message": "Invalid API key: use a key listed in server.api_keys."}}
    response = httpx.post(gw.url + "/v1/messages", headers={"Authorization": "Bearer good"},
                          json={"model": EDGE, "max_tokens": 8, "messages": []})
    assert response.status_code == 400 and response.json() == {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "'messages' is required and must be a non-empty list of messages."}}
    response = httpx.post(gw.url + "/v1/messages", headers={"x-api-key": "good"}, json={
        "model": EDGE, "max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "video"}]}]})
    assert response.status_code == 400 and "messages[0].content[0] has type 'video'" in response.text


def test_upstream_failure_before_the_stream_is_an_error_response(gateway, edge):
    edge.script(Reply(status=500, error_message="edge exploded"))
    response = httpx.post(gateway.url + "/v1/messages", json={
        "model": EDGE, "max_tokens": 8, "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 502 and response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "api_error"


# --- count_tokens ----------------------------------------------------------------------------------------------


def test_count_tokens_is_a_local_estimate(gateway, edge, cloud):
    c = client(gateway)
    short = c.messages.count_tokens(model=EDGE, messages=[{"role": "user", "content": "hello"}])
    longer = c.messages.count_tokens(model=EDGE, system="You are a careful assistant.", tools=[READ_TOOL],
                                     messages=[{"role": "user", "content": "hello " * 50}])
    assert 0 < short.input_tokens < longer.input_tokens
    assert longer.input_tokens - short.input_tokens >= 49  # fifty more words, a system prompt and a tool
    assert not edge.requests and not cloud.requests  # answered locally
    raw = httpx.post(gateway.url + "/v1/messages/count_tokens",
                     json={"model": EDGE, "messages": [{"role": "user", "content": "hello"}]})
    assert raw.headers["x-ecgw-token-count"].startswith("estimate")
    bad = httpx.post(gateway.url + "/v1/messages/count_tokens", json={"model": EDGE})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"


def test_image_in_a_tool_result_follows_as_a_user_image_part(gateway, edge):
    ask(gateway, tools=[READ_TOOL], messages=[
        {"role": "user", "content": "show me the chart"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_c", "name": "read_file",
                                           "input": {"path": "chart.png"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_c", "content": [
            {"type": "text", "text": "chart.png (1 image)"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]}])
    sent = edge.requests[-1]["messages"]
    assert sent[2] == {"role": "tool", "tool_call_id": "toolu_c", "content": "chart.png (1 image)"}
    assert sent[3] == {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}


def test_models_list_in_anthropic_shape_for_the_anthropic_sdk(gateway):
    models = list(client(gateway).models.list())
    ids = [m.id for m in models]
    assert "ecgw/cloud-only" in ids and "ecgw/edge-only" in ids
    assert all(m.type == "model" and m.display_name == m.id for m in models)
    plain = httpx.get(gateway.base_url + "/models").json()  # OpenAI's clients see OpenAI's shape, as before
    assert "has_more" not in plain and "type" not in plain["data"][0]


def test_failure_mid_stream_is_an_anthropic_error_event(start_gateway, cloud):
    gw = start_gateway(cloud={"timeout_s": 1, "max_retries": 0})
    cloud.script(Reply(content="one two three", chunk_delay_s=3))
    seen, response = events(gw, model="ecgw/cloud-only")
    assert response.status_code == 200  # the stream had started
    assert [name for name, _ in seen][:2] == ["message_start", "ping"]
    name, data = seen[-1]
    assert name == "error" and data == {"type": "error", "error": {"type": "timeout_error",
                                                                   "message": data["error"]["message"]}}
    assert "timed out" in data["error"]["message"]
