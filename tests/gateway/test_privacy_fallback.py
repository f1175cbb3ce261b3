"""`block` means the step stays on the edge, whatever the policy wanted; odd session ids never break headers."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.fakes.model_server import Reply, ToolCall

KEY = "AKIAIOSFODNN7EXAMPLE"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("policy", ["cloud-only", "step-routing", "random-matched", "delegate"])
def test_a_blocked_step_is_answered_by_the_edge(start_gateway, edge, cloud, policy, stream):
    gw = start_gateway(privacy={"default_action": "block"},
                       policy={"knobs": {"step-routing": {"mode": "probe", "tau": 0.0},
                                         "random-matched": {"p": 1.0}}})
    # step-routing escalates (tau 0 and a flat first-token distribution); delegate's edge hands the step over
    if policy == "delegate":
        edge.script(Reply(content=None, tool_calls=[ToolCall("delegate_to_cloud", '{"reason": "hard"}')]))
    edge.script(*[Reply(content="edge answer", first_token_top={"a": 0.5, "b": 0.5})] * 3)
    response = httpx.post(gw.base_url + "/chat/completions", timeout=30, json={
        "model": f"ecgw/{policy}", "stream": stream,
        "messages": [{"role": "user", "content": f"deploy with key {KEY}"}]})
    assert response.status_code == 200, response.text
    if policy != "delegate":  # delegate keeps its own step on the edge, inside the policy
        assert response.headers["x-ecgw-fallback"] == "privacy-blocked"
    assert response.headers["x-ecgw-route"] == "edge"
    assert _text(response, stream) == "edge answer"
    assert cloud.requests == []


def _text(response: httpx.Response, stream: bool) -> str:
    if not stream:
        return str(response.json()["choices"][0]["message"]["content"])
    events = [json.loads(line[6:]) for line in response.text.splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    return "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))


@pytest.mark.parametrize("stream", [False, True])
def test_a_blocked_or_failing_advisor_is_an_answer_the_edge_works_with(start_gateway, edge, cloud, stream):
    gw = start_gateway(privacy={"default_action": "block"})
    edge.script(Reply(content=None, tool_calls=[ToolCall("ask_cloud_advisor", '{"question": "which key?"}')]),
                Reply(content="edge answer"))
    response = httpx.post(gw.base_url + "/chat/completions", timeout=30, json={
        "model": "ecgw/advisor", "stream": stream,
        "messages": [{"role": "user", "content": f"deploy with key {KEY}"}]})
    assert response.status_code == 200, response.text
    assert _text(response, stream) == "edge answer"
    assert cloud.requests == []
    tool_result = edge.requests[-1]["messages"][-1]
    assert tool_result["role"] == "tool" and "advisor is unavailable" in tool_result["content"]


@pytest.mark.parametrize("user", ["张三", "a\r\nX-Evil: 1"])
def test_session_ids_from_the_body_are_header_safe(gateway, user):
    response = httpx.post(gateway.base_url + "/chat/completions", json={
        "model": "ecgw/edge-only", "user": user, "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 200
    assert "\n" not in response.headers["x-ecgw-session"] and "X-Evil" not in response.headers.get("x-evil", "")
    # a session id from `user` is personal data more often than not: echoed (and stored) as a keyed hash
    echoed = response.headers["x-ecgw-session"]
    assert echoed.startswith("u-") and user not in echoed
    again = httpx.post(gateway.base_url + "/chat/completions", json={
        "model": "ecgw/edge-only", "user": user, "messages": [{"role": "user", "content": "hi"}]})
    assert again.headers["x-ecgw-session"] == echoed
