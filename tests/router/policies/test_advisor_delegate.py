"""advisor and delegate: the injected tools are answered by the gateway and never reach the client."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.router.policies.helpers import TOOLS, ask, purposes, start_policy, user


def _advisor(start: Callable[..., RunningGateway], **knobs: Any) -> RunningGateway:
    return start_policy(start, "advisor", knobs)


def _names(tools: list[dict[str, Any]] | None) -> list[str]:
    return [t["function"]["name"] for t in tools or ()]


@pytest.mark.parametrize("stream", [False, True])
def test_advisor_not_called(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                            cloud: ModelServer, stream: bool) -> None:
    gw = _advisor(start_gateway)
    edge.script(Reply(None, tool_calls=[ToolCall("read_file", '{"path": "a"}')]))
    answer = ask(gw, user("read a"), stream=stream, tools=TOOLS)
    assert answer.tool_calls == [("read_file", '{"path": "a"}')]
    assert answer.finish_reason == "tool_calls"
    assert answer.headers["x-ecgw-route"] == "edge"
    assert _names(edge.requests[0]["tools"]) == ["read_file", "write_file", "ask_cloud_advisor"]
    assert purposes(gw.meter) == [("edge", "step")]


@pytest.mark.parametrize("stream", [False, True])
def test_advisor_called_once(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                             cloud: ModelServer, stream: bool) -> None:
    gw = _advisor(start_gateway)
    edge.script(Reply(None, tool_calls=[ToolCall("ask_cloud_advisor", '{"question": "which file first?"}')]),
                Reply("I will read b first"))
    cloud.script(Reply("Read b.txt before a.txt"))
    answer = ask(gw, user("fix the bug"), stream=stream, tools=TOOLS)
    assert answer.content == "I will read b first"
    assert answer.tool_calls == []
    assert answer.finish_reason == "stop"
    # Streamed: headers leave with the first chunk, before the edge asked for advice.
    assert answer.headers["x-ecgw-route"] == ("edge" if stream else "mixed")
    assert purposes(gw.meter) == [("edge", "step"), ("cloud", "advice"), ("edge", "step")]
    advice_prompt = cloud.requests[0]["messages"][-1]["content"]
    assert "fix the bug" in advice_prompt and "which file first?" in advice_prompt
    assert "tools" not in cloud.requests[0]
    second = edge.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "ask_cloud_advisor"
    assert second[-1] == {"role": "tool", "tool_call_id": second[-2]["tool_calls"][0]["id"],
                          "content": "Read b.txt before a.txt"}
    if stream:
        names = [c.function.name for ch in answer.chunks for choice in ch.choices
                 for c in choice.delta.tool_calls or ()]
        assert "ask_cloud_advisor" not in names
        assert len({ch.id for ch in answer.chunks}) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_advisor_called_several_times_up_to_max(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                                cloud: ModelServer, stream: bool) -> None:
    gw = _advisor(start_gateway, max_consults=2)
    def ask_call(question: str) -> Reply:
        return Reply(None, tool_calls=[ToolCall("ask_cloud_advisor", json.dumps({"question": question}))])

    edge.script(ask_call("one"), ask_call("two"), Reply(None, tool_calls=[ToolCall("write_file", '{"path": "x"}')]))
    cloud.script(Reply("advice one"), Reply("advice two"))
    answer = ask(gw, user("task"), stream=stream, tools=TOOLS)
    assert answer.tool_calls == [("write_file", '{"path": "x"}')]
    assert purposes(gw.meter) == [("edge", "step"), ("cloud", "advice"), ("edge", "step"), ("cloud", "advice"),
                                  ("edge", "step")]
    assert "ask_cloud_advisor" in _names(edge.requests[1]["tools"])
    assert "ask_cloud_advisor" not in _names(edge.requests[2]["tools"])  # the limit withdraws the tool
    assert "advice one" in cloud.requests[1]["messages"][-1]["content"]  # the transcript carries earlier advice


def test_advisor_stray_call_after_limit_is_dropped(start_gateway: Callable[..., RunningGateway],
                                                   edge: ModelServer, cloud: ModelServer) -> None:
    gw = _advisor(start_gateway, max_consults=0)
    edge.script(Reply("thinking", tool_calls=[ToolCall("ask_cloud_advisor", "{}")]))
    answer = ask(gw, user("task"), stream=False, tools=TOOLS)
    assert answer.tool_calls == [] and answer.content == "thinking" and answer.finish_reason == "stop"
    assert cloud.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_advisor_mixed_with_client_tools_resolves_advisor_first(
        start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer, stream: bool) -> None:
    gw = _advisor(start_gateway)
    edge.script(Reply(None, tool_calls=[ToolCall("read_file", '{"path": "a"}'),
                                        ToolCall("ask_cloud_advisor", '{"question": "ok?"}')]),
                Reply(None, tool_calls=[ToolCall("read_file", '{"path": "b"}')]))
    cloud.script(Reply("read b instead"))
    answer = ask(gw, user("task"), stream=stream, tools=TOOLS)
    assert answer.tool_calls == [("read_file", '{"path": "b"}')]  # only the re-asked turn's client calls
    second = edge.requests[1]["messages"]
    assert [c["function"]["name"] for c in second[-2]["tool_calls"]] == ["ask_cloud_advisor"]
    assert purposes(gw.meter) == [("edge", "step"), ("cloud", "advice"), ("edge", "step")]


def test_advisor_transcript_recent_and_trimmed(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                               cloud: ModelServer) -> None:
    gw = _advisor(start_gateway, transcript="recent:2", tool_result_chars=10)
    history = [*user("the task"),
               {"role": "assistant", "content": "old words"},
               {"role": "user", "content": "continue"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "x" * 50}]
    edge.script(Reply(None, tool_calls=[ToolCall("ask_cloud_advisor", "{}")]), Reply("ok"))
    cloud.script(Reply("advice"))
    ask(gw, history, stream=False, tools=TOOLS)
    prompt = cloud.requests[0]["messages"][-1]["content"]
    assert "the task" in prompt and "old words" not in prompt
    assert "x" * 10 + " …[40 characters trimmed]" in prompt


def _delegate(start: Callable[..., RunningGateway]) -> RunningGateway:
    return start_policy(start, "delegate")


@pytest.mark.parametrize("stream", [False, True])
def test_delegate_not_called(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                             cloud: ModelServer, stream: bool) -> None:
    gw = _delegate(start_gateway)
    edge.script(Reply("edge handles it"))
    answer = ask(gw, user("easy"), stream=stream, tools=TOOLS)
    assert answer.content == "edge handles it" and answer.headers["x-ecgw-route"] == "edge"
    assert "delegate_to_cloud" in _names(edge.requests[0]["tools"])
    assert purposes(gw.meter) == [("edge", "step")]


@pytest.mark.parametrize("stream", [False, True])
def test_delegate_with_cloud_tool_calls(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                        cloud: ModelServer, stream: bool) -> None:
    gw = _delegate(start_gateway)
    edge.script(Reply(None, tool_calls=[ToolCall("read_file", '{"path": "z"}'),
                                        ToolCall("delegate_to_cloud", '{"reason": "too hard"}')]))
    cloud.script(Reply(None, tool_calls=[ToolCall("write_file", '{"path": "out"}'),
                                         ToolCall("read_file", '{"path": "in"}')]))
    answer = ask(gw, user("hard"), stream=stream, tools=TOOLS)
    assert answer.tool_calls == [("write_file", '{"path": "out"}'), ("read_file", '{"path": "in"}')]
    assert answer.finish_reason == "tool_calls"
    assert purposes(gw.meter) == [("edge", "step"), ("cloud", "delegate")]
    # The cloud receives the client's request: the client's tools only, the client's messages.
    assert _names(cloud.requests[0]["tools"]) == ["read_file", "write_file"]
    assert cloud.requests[0]["messages"] == user("hard")


@pytest.mark.parametrize("stream", [False, True])
def test_delegate_with_cloud_text(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                  cloud: ModelServer, stream: bool) -> None:
    gw = _delegate(start_gateway)
    edge.script(Reply(None, tool_calls=[ToolCall("delegate_to_cloud", "{}")]))
    cloud.script(Reply("the cloud answer"))
    answer = ask(gw, user("hard"), stream=stream)
    assert answer.content == "the cloud answer" and answer.tool_calls == [] and answer.finish_reason == "stop"
    assert answer.headers["x-ecgw-route"] == ("edge" if stream else "mixed")


def test_tool_choice_none_injects_nothing(start_gateway: Callable[..., RunningGateway], edge: ModelServer) -> None:
    gw = _delegate(start_gateway)
    ask(gw, user("x"), stream=False, tools=TOOLS, tool_choice="none")
    assert _names(edge.requests[0]["tools"]) == ["read_file", "write_file"]


@pytest.mark.parametrize("stream", [False, True])
def test_text_of_successive_turns_is_set_apart(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                               cloud: ModelServer, stream: bool) -> None:
    gw = _advisor(start_gateway)
    edge.script(Reply("Let me check.", tool_calls=[ToolCall("ask_cloud_advisor", "{}")]), Reply("Done."))
    cloud.script(Reply("advice"))
    answer = ask(gw, user("task"), stream=stream, tools=TOOLS)
    assert answer.content == "Let me check.\n\nDone."
    import asyncio

    assert asyncio.run(gw.services.sessions.get("s1", "advisor")) == {"consults": 1, "steps_with_advice": 1}
