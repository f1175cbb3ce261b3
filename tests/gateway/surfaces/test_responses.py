"""POST /v1/responses through a real gateway, driven by the official ``openai`` SDK (and raw HTTP where the wire
itself is the point): request fields reach the step in chat shape, answers come back as Responses output, JSON
and streamed, with privacy, policies and metering applied as on the chat surface."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.fakes.model_server import Reply, ToolCall

EMAIL = "maria.gonzalez@example.org"
READ = {"type": "function", "name": "read", "description": "read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}


def client(gateway, **headers):
    return openai.OpenAI(base_url=gateway.base_url, api_key="k", default_headers=headers or None, max_retries=0)


def post(gateway, body, **headers):
    return httpx.post(gateway.base_url + "/responses", json=body, headers={"authorization": "Bearer k", **headers},
                      timeout=30)


def sse_events(text: str) -> list[dict]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        data = json.loads(lines["data"])
        assert lines["event"] == data["type"]  # `event:` lines, as Codex and the SDK read them
        events.append(data)
    return events


# requests --------------------------------------------------------------------------------------------------
def test_string_input_and_instructions_become_the_step(gateway, edge):
    edge.script(Reply(content="hello there"))
    response = client(gateway).responses.create(model="ecgw/edge-only", input="hi", instructions="be brief")
    assert response.output_text == "hello there"
    assert response.status == "completed" and response.id.startswith("resp_")
    assert edge.requests[-1]["messages"] == [{"role": "system", "content": "be brief"},
                                             {"role": "user", "content": "hi"}]


def test_every_item_kind_reaches_the_model_in_chat_shape(gateway, edge):
    image = "data:image/png;base64,iVBORw0KGgo="
    client(gateway).responses.create(model="ecgw/edge-only", input=[
        {"role": "developer", "content": "use tools"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"},
                                                         {"type": "input_image", "image_url": image, "detail": "low"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "need the file"}],
         "encrypted_content": "opaque=="},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"path": "a"}'},
        {"type": "function_call", "call_id": "c2", "name": "read", "arguments": '{"path": "b"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "A"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "B"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "read both"}]},
        {"role": "user", "content": "thanks"},
    ], tools=[READ])
    assert edge.requests[-1]["messages"] == [
        {"role": "system", "content": "use tools"},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": image, "detail": "low"}}]},
        {"role": "assistant", "content": None, "reasoning_content": "need the file", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}},
            {"id": "c2", "type": "function", "function": {"name": "read", "arguments": '{"path": "b"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "A"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "B"}]},
        {"role": "assistant", "content": "read both"},
        {"role": "user", "content": "thanks"},
    ]


def test_sampling_tools_and_format_fields_are_translated(gateway, edge):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    client(gateway).responses.create(
        model="ecgw/edge-only", input="count", tools=[READ], tool_choice={"type": "function", "name": "read"},
        parallel_tool_calls=False, max_output_tokens=50, temperature=0.2, top_p=0.9, user="u-1",
        text={"format": {"type": "json_schema", "name": "count", "schema": schema, "strict": True}},
        metadata={"run": "7"}, store=False, include=["reasoning.encrypted_content"])
    sent = edge.requests[-1]
    assert sent["tools"] == [{"type": "function", "function": {
        "name": "read", "description": "read a file", "parameters": READ["parameters"]}}]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "read"}}
    assert sent["parallel_tool_calls"] is False and sent["max_completion_tokens"] == 50
    assert sent["temperature"] == 0.2 and sent["top_p"] == 0.9 and sent["user"] == "u-1"
    assert sent["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "count", "schema": schema, "strict": True}}
    assert "store" not in sent and "include" not in sent  # Responses-only fields stay at the surface


def test_response_echoes_the_request_fields(gateway, edge):
    response = client(gateway).responses.create(model="ecgw/edge-only", input="hi", max_output_tokens=40,
                                                temperature=0.3, metadata={"run": "7"}, store=False,
                                                instructions="be brief", user="u-1")
    assert (response.max_output_tokens, response.temperature, response.metadata) == (40, 0.3, {"run": "7"})
    assert (response.store, response.instructions, response.user) == (False, "be brief", "u-1")


def test_codex_tool_shapes_custom_namespace_and_hosted(gateway, edge):
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    edge.script(Reply(content=None, tool_calls=[ToolCall("apply_patch", json.dumps({"input": patch}), id="call_p"),
                                                ToolCall("agents__spawn", '{"task": "x"}', id="call_s")]))
    response = client(gateway).responses.create(model="ecgw/edge-only", input=[
        {"role": "user", "content": "patch it"},
        {"type": "custom_tool_call", "call_id": "old", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "old", "output": "Done"},
        # Codex's lighter shape: tools in an input item, in the implicit "functions" namespace
        {"type": "additional_tools", "role": "developer", "tools": [{"type": "namespace", "name": "functions",
                                                                     "tools": [{
            "type": "custom", "name": "apply_patch", "description": "edit",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}]}]},
    ], tools=[{"type": "namespace", "name": "agents", "description": "sub-agents", "tools": [
        {"type": "function", "name": "spawn", "parameters": {"type": "object", "properties": {}}}]},
        {"type": "web_search", "external_web_access": True}])
    sent = edge.requests[-1]
    names = [t["function"]["name"] for t in sent["tools"]]
    assert names == ["agents__spawn", "apply_patch"]  # web_search: no upstream here can run it
    assert "start: /.+/" in sent["tools"][1]["function"]["description"]
    assert sent["messages"][1]["tool_calls"][0]["function"] == {"name": "apply_patch",
                                                                "arguments": '{"input": "*** Begin Patch"}'}
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": "old", "content": "Done"}
    custom, spawned = response.output
    assert custom.type == "custom_tool_call" and custom.input == patch and custom.call_id == "call_p"
    assert custom.name == "apply_patch" and "namespace" not in custom.to_dict()
    assert spawned.type == "function_call" and spawned.name == "spawn" and spawned.call_id == "call_s"
    assert spawned.to_dict()["namespace"] == "agents"


# answers -----------------------------------------------------------------------------------------------------
def test_function_call_reasoning_and_usage_come_back_as_items(gateway, edge):
    edge.script(Reply(content="let me read", reasoning="the file matters",
                      tool_calls=[ToolCall("read", '{"path": "/tmp/a.txt"}', id="call_a")]))
    response = client(gateway).responses.create(model="ecgw/edge-only", input="read it", tools=[READ])
    reasoning, message, call = response.output
    assert reasoning.type == "reasoning" and reasoning.content[0].text == "the file matters"
    assert message.type == "message" and message.content[0].text == "let me read"
    assert (call.type, call.name, call.call_id, call.arguments) == ("function_call", "read", "call_a",
                                                                   '{"path": "/tmp/a.txt"}')
    # the fake counts words: 3 of text, 3 of reasoning, and 1 + 2 for the call and its arguments
    assert (response.usage.output_tokens, response.usage.total_tokens) == (9, 9 + response.usage.input_tokens)


def test_cached_tokens_are_reported(gateway, edge):
    long_prompt = " ".join(f"w{i}" for i in range(40))
    client(gateway).responses.create(model="ecgw/edge-only", input=long_prompt)
    response = client(gateway).responses.create(model="ecgw/edge-only", input=long_prompt + " more")
    assert response.usage.input_tokens_details.cached_tokens == 32  # two 16-token blocks of the fake's cache
    events = list(client(gateway).responses.create(model="ecgw/edge-only", input=long_prompt + " again",
                                                   stream=True))
    assert events[-1].type == "response.completed"
    assert events[-1].response.usage.input_tokens_details.cached_tokens == 32


def test_output_cut_by_max_output_tokens_is_incomplete(gateway, edge):
    edge.script(Reply(content="one two three four five"), Reply(content="one two three four five"))
    response = client(gateway).responses.create(model="ecgw/edge-only", input="count", max_output_tokens=2)
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    events = list(client(gateway).responses.create(model="ecgw/edge-only", input="count", max_output_tokens=2,
                                                   stream=True))
    assert events[-1].type == "response.incomplete"


# streaming ---------------------------------------------------------------------------------------------------
def test_text_stream_follows_the_official_sequence(gateway, edge):
    edge.script(Reply(content="one two three", reasoning="hmm ok"))
    reply = post(gateway, {"model": "ecgw/edge-only", "input": "count", "stream": True})
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
    events = sse_events(reply.text)
    kinds = [e["type"] for e in events]
    assert kinds == ["response.created", "response.in_progress",
                     "response.output_item.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
                     "response.reasoning_text.done", "response.output_item.done",
                     "response.output_item.added", "response.content_part.added",
                     "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
                     "response.output_text.done", "response.content_part.done", "response.output_item.done",
                     "response.completed"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[12]["text"] == "one two three"
    final = events[-1]["response"]
    assert final["status"] == "completed" and final["output"][1]["content"][0]["text"] == "one two three"
    assert final["usage"]["output_tokens"] == 5 and "cached_tokens" in final["usage"]["input_tokens_details"]


def test_sdk_stream_of_tool_calls_closes_every_item(gateway, edge):
    edge.script(Reply(content=None, tool_calls=[ToolCall("read", '{"path": "/tmp/a.txt"}', id="call_a"),
                                                ToolCall("read", '{"path": "/tmp/b.txt"}', id="call_b")]))
    with client(gateway).responses.stream(model="ecgw/edge-only", input="read both", tools=[READ]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    added = [e.item.call_id for e in events if e.type == "response.output_item.added"]
    done = [e.item for e in events if e.type == "response.output_item.done"]
    assert added == ["call_a", "call_b"] and [d.call_id for d in done] == ["call_a", "call_b"]
    assert [d.arguments for d in done] == ['{"path": "/tmp/a.txt"}', '{"path": "/tmp/b.txt"}']
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert deltas == '{"path": "/tmp/a.txt"}{"path": "/tmp/b.txt"}'
    assert [e.arguments for e in events if e.type == "response.function_call_arguments.done"] == [
        '{"path": "/tmp/a.txt"}', '{"path": "/tmp/b.txt"}']
    assert [o.call_id for o in final.output] == ["call_a", "call_b"]


def test_streamed_custom_tool_call_has_its_input_events(gateway, edge):
    edge.script(Reply(content=None, tool_calls=[ToolCall("apply_patch", json.dumps({"input": "*** Begin"}))]))
    events = sse_events(post(gateway, {"model": "ecgw/edge-only", "input": "patch", "stream": True, "tools": [
        {"type": "custom", "name": "apply_patch", "description": "edit"}]}).text)
    kinds = [e["type"] for e in events]
    assert kinds[2:] == ["response.output_item.added", "response.custom_tool_call_input.delta",
                         "response.custom_tool_call_input.done", "response.output_item.done", "response.completed"]
    assert events[-2]["item"]["type"] == "custom_tool_call" and events[-2]["item"]["input"] == "*** Begin"


# stored responses --------------------------------------------------------------------------------------------
def test_previous_response_id_continues_a_stored_response(gateway, edge):
    edge.script(Reply(content="Paris"))
    first = client(gateway).responses.create(model="ecgw/edge-only", input="capital of France?",
                                             instructions="terse")
    second = client(gateway).responses.create(model="ecgw/edge-only", input="and Spain?",
                                              previous_response_id=first.id)
    assert edge.requests[-1]["messages"] == [{"role": "user", "content": "capital of France?"},
                                             {"role": "assistant", "content": "Paris"},
                                             {"role": "user", "content": "and Spain?"}]  # instructions not carried
    client(gateway).responses.create(model="ecgw/edge-only", input="and Italy?", previous_response_id=second.id,
                                     stream=True).close()
    assert [m["content"] for m in edge.requests[-1]["messages"]][:3] == ["capital of France?", "Paris",
                                                                         "and Spain?"]


def test_previous_response_id_in_the_same_session(gateway, edge):
    first = client(gateway, **{"x-session-id": "s-prev"}).responses.create(model="ecgw/edge-only", input="hi")
    reply = post(gateway, {"model": "ecgw/edge-only", "input": "again", "previous_response_id": first.id})
    assert reply.headers["x-ecgw-session"] == "s-prev"  # the follow-up joins the session it continues


def test_unknown_unstored_or_foreign_previous_response_is_a_clear_404(gateway, edge, start_gateway):
    reply = post(gateway, {"model": "ecgw/edge-only", "input": "x", "previous_response_id": "resp_nope"})
    assert reply.status_code == 404
    error = reply.json()["error"]
    assert error["code"] == "previous_response_not_found" and error["param"] == "previous_response_id"
    assert "resp_nope" in error["message"] and "input" in error["message"]
    unstored = client(gateway).responses.create(model="ecgw/edge-only", input="x", store=False)
    with pytest.raises(openai.NotFoundError):
        client(gateway).responses.create(model="ecgw/edge-only", input="y", previous_response_id=unstored.id)
    keyed = start_gateway(server={"api_keys": ["alice", "bob"]})
    alice = openai.OpenAI(base_url=keyed.base_url, api_key="alice", max_retries=0)
    bob = openai.OpenAI(base_url=keyed.base_url, api_key="bob", max_retries=0)
    mine = alice.responses.create(model="ecgw/edge-only", input="secret plan")
    with pytest.raises(openai.NotFoundError):
        bob.responses.create(model="ecgw/edge-only", input="what was it?", previous_response_id=mine.id)


# sessions, policies, privacy, metering ----------------------------------------------------------------------
def test_codex_session_header_names_the_session(gateway, edge):
    reply = post(gateway, {"model": "ecgw/edge-only", "input": "hi"}, **{"session-id": "codex-thread-1"})
    assert reply.headers["x-ecgw-session"] == "codex-thread-1"
    reply = post(gateway, {"model": "ecgw/edge-only", "input": "hi"},
                 **{"session-id": "codex-thread-1", "x-session-id": "explicit"})
    assert reply.headers["x-ecgw-session"] == "explicit"
    assert gateway.meter.calls[-1].session_id == "explicit"


def test_cloud_never_sees_the_raw_value_and_the_client_gets_it_back(gateway, cloud):
    cloud.script(Reply(content=None, tool_calls=[ToolCall("read", json.dumps({"path": "[EMAIL_ADDRESS_001].txt"}))]),
                 Reply(content="Write to [EMAIL_ADDRESS_001] today"))
    items = [{"role": "user", "content": f"Find the file of {EMAIL}"}]
    first = client(gateway).responses.create(model="ecgw/cloud-only", input=items, tools=[READ])
    assert json.loads(first.output[0].arguments) == {"path": f"{EMAIL}.txt"}  # arguments restored
    items += [first.output[0].model_dump(exclude_none=True),
              {"type": "function_call_output", "call_id": first.output[0].call_id, "output": f"owner: {EMAIL}"}]
    events = list(client(gateway).responses.create(model="ecgw/cloud-only", input=items, tools=[READ],
                                                   stream=True))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == f"Write to {EMAIL} today"
    assert EMAIL not in json.dumps(cloud.requests)
    assert "[EMAIL_ADDRESS_001]" in cloud.requests[-1]["messages"][-1]["content"]


def test_step_routing_escalates_on_the_edge_logprobs(gateway, edge, cloud):
    spread = {f"t{i}": 1.0 for i in range(20)}  # ln 20 nats: above tau, the step goes to the cloud
    edge.script(Reply(content="unsure", first_token_top=spread))
    cloud.script(Reply(content="cloud answer"))
    reply = post(gateway, {"model": "ecgw/step-routing", "input": "hard question", "stream": True})
    text = "".join(e.get("delta", "") for e in sse_events(reply.text) if e["type"] == "response.output_text.delta")
    assert text == "cloud answer" and reply.headers["x-ecgw-route"] == "mixed"
    assert edge.requests[-1]["logprobs"] is True and edge.requests[-1]["top_logprobs"] == 20
    assert [c.side for c in gateway.meter.calls] == ["edge", "cloud"]
    assert {c.policy for c in gateway.meter.calls} == {"step-routing"}


# errors ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("body", "param"), [
    ({"model": "m"}, "input"),
    ({"model": "m", "input": 5}, "input"),
    ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
    ({"model": "m", "input": [{"type": "function_call", "name": "f"}]}, "input[0].call_id"),
    ({"model": "m", "input": "x", "text": {"format": {"type": "yaml"}}}, "text.format.type"),
    ({"model": "m", "input": "x", "tool_choice": 3}, "tool_choice"),
])
def test_bad_requests_name_the_field(gateway, body, param):
    reply = post(gateway, body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error" and error["message"]


def test_not_json_and_bad_key_have_chat_statuses_and_messages(gateway, start_gateway):
    reply = httpx.post(gateway.base_url + "/responses", content=b"{nope", timeout=10)
    chat = httpx.post(gateway.base_url + "/chat/completions", content=b"{nope", timeout=10)
    assert reply.status_code == chat.status_code == 400
    # The same sentence for the same fault; each then says what its own surface expects.
    said, chat_said = reply.json()["error"]["message"], chat.json()["error"]["message"]
    assert said.split("; send ")[0] == chat_said.split("; send ")[0]
    assert "'input'" in said.split("; send ")[1] and "'messages'" in chat_said.split("; send ")[1]
    keyed = start_gateway(server={"api_keys": ["right"]})
    for path in ("/responses", "/chat/completions"):
        denied = httpx.post(keyed.base_url + path, json={"model": "m", "input": "x"},
                            headers={"authorization": "Bearer wrong"}, timeout=10)
        assert denied.status_code == 401 and denied.json()["error"]["code"] == "invalid_api_key"


def test_upstream_failure_has_the_chat_status_in_the_responses_shape(gateway, cloud):
    cloud.script(Reply(status=429, error_message="slow down"), Reply(status=429, error_message="slow down"))
    reply = post(gateway, {"model": "ecgw/cloud-only", "input": "hi"})
    chat = httpx.post(gateway.base_url + "/chat/completions", timeout=30,
                      json={"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "hi"}]})
    assert reply.status_code == chat.status_code == 429
    assert reply.json()["error"]["message"] == chat.json()["error"]["message"]
    assert "slow down" in reply.json()["error"]["message"]


async def test_a_failure_mid_stream_ends_with_error_and_response_failed():
    from gateway.http.body import BodyReader
    from gateway.http.failures import Failure
    from gateway.state.sessions import MemorySessionStore
    from gateway.surfaces.pipeline import Started
    from gateway.surfaces.responses import ResponsesSurface
    from gateway.surfaces.responses_store import ResponseStore

    surface = ResponsesSurface(ResponseStore(MemorySessionStore()), BodyReader())
    parsed = await surface.prepare(surface.parse(b'{"model": "m", "input": "hi", "stream": true}', {}), None)

    async def chunks():
        yield {"choices": [{"index": 0, "delta": {"content": "partial"}}]}
        raise RuntimeError("upstream went away")

    sent = []
    with pytest.raises(RuntimeError):
        async for data in surface.stream(Started({}, rest=chunks()), parsed):
            sent.append(data)
    sent.append(surface.stream_error(Failure(502, "The cloud upstream failed", "upstream_error"), parsed))
    events = sse_events(b"".join(sent).decode())
    assert [e["type"] for e in events][-2:] == ["error", "response.failed"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    failed = events[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["message"] == "The cloud upstream failed"


def test_a_tool_parameter_named_type_passes_the_cloud_door(gateway, cloud):
    """Codex's tools have such a property; the privacy walk once took its schema for a content part and failed."""
    tool = {"type": "function", "name": "find", "parameters": {
        "type": "object", "properties": {"type": {"type": "string", "description": f"kind, ask {EMAIL}"}}}}
    response = client(gateway).responses.create(model="ecgw/cloud-only", input="find it", tools=[tool])
    assert response.status == "completed"
    assert EMAIL not in json.dumps(cloud.requests[-1])


def test_include_logprobs_asks_the_model_and_returns_them(gateway, edge):
    edge.script(Reply(content="yes indeed"), Reply(content="yes indeed"))
    response = client(gateway).responses.create(model="ecgw/edge-only", input="ok?", top_logprobs=2,
                                                include=["message.output_text.logprobs"])
    assert edge.requests[-1]["logprobs"] is True and edge.requests[-1]["top_logprobs"] == 2
    logprobs = response.output[0].content[0].logprobs
    assert [entry.token for entry in logprobs] == ["yes", "indeed"] and len(logprobs[0].top_logprobs) == 2
    events = list(client(gateway).responses.create(model="ecgw/edge-only", input="ok?", stream=True,
                                                   include=["message.output_text.logprobs"]))
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert [e.logprobs[0].token for e in deltas] == ["yes", "indeed"]
