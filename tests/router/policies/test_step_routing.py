"""step-routing through a real gateway: probe and inline modes, low and high entropy, missing logprobs,
anti-ping-pong, streaming and not."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.router.policies.helpers import TOOLS, ask, purposes, start_policy, user

CONFIDENT = {"Sure": 0.97, "Yes": 0.02, "OK": 0.01}  # H ≈ 0.15 nats
UNSURE = {f"t{i}": 1.0 for i in range(20)}  # uniform over 20: H = ln 20 ≈ 3.0 nats


def _gateway(start: Callable[..., RunningGateway], **knobs: Any) -> RunningGateway:
    return start_policy(start, "step-routing", knobs)


@pytest.mark.parametrize("stream", [False, True])
def test_probe_low_entropy_stays_on_edge(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                         cloud: ModelServer, stream: bool) -> None:
    gw = _gateway(start_gateway, mode="probe", tau=1.5)
    edge.script(Reply("Sure", first_token_top=CONFIDENT), Reply("edge answer here"))
    answer = ask(gw, user("list files"), stream=stream)
    assert answer.content == "edge answer here"
    assert answer.headers["x-ecgw-route"] == "edge"
    assert purposes(gw.meter) == [("edge", "probe"), ("edge", "step")]
    probe = edge.requests[0]
    assert probe["max_tokens"] == 1 and probe["temperature"] == 0
    assert probe["logprobs"] is True and probe["top_logprobs"] == 20 and probe["stream"] is False
    assert probe["messages"] == user("list files")
    assert cloud.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_probe_high_entropy_goes_to_cloud(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                          cloud: ModelServer, stream: bool) -> None:
    gw = _gateway(start_gateway, mode="probe", tau=1.5)
    edge.script(Reply("t0", first_token_top=UNSURE))
    cloud.script(Reply("cloud answer"))
    answer = ask(gw, user("prove the theorem"), stream=stream)
    assert answer.content == "cloud answer"
    assert answer.headers["x-ecgw-route"] == "mixed"  # the edge was probed, the cloud answered
    assert purposes(gw.meter) == [("edge", "probe"), ("cloud", "step")]
    assert len(edge.requests) == 1


def test_probe_entropy_matches_hand_computation(start_gateway: Callable[..., RunningGateway],
                                                edge: ModelServer) -> None:
    gw = _gateway(start_gateway, mode="probe", tau=0.6)
    top = {"a": 0.7, "b": 0.2, "c": 0.1}
    edge.script(Reply("a", first_token_top=top), Reply("fine"))
    ask(gw, user("x"), stream=False)
    expected = -sum(p * math.log(p) for p in top.values())  # ≈ 0.80 > 0.6
    state = _state(gw, "s1")
    assert state["last"]["entropy"] == pytest.approx(expected, abs=1e-9)
    assert state["last"]["side"] == "cloud"


def _state(gw: RunningGateway, session: str) -> dict[str, Any]:
    import asyncio

    value = asyncio.run(gw.services.sessions.get(session, "step_routing"))
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fallback", ["edge", "cloud"])
def test_missing_logprobs_uses_fallback(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                        cloud: ModelServer, stream: bool, fallback: str) -> None:
    gw = _gateway(start_gateway, mode="probe", missing_logprobs=fallback)
    # A server that ignores `logprobs`: the probe reply carries none.
    original = edge._logprobs
    edge._logprobs = lambda *a, **k: None  # type: ignore[method-assign]
    try:
        answer = ask(gw, user("hello"), stream=stream)
    finally:
        edge._logprobs = original  # type: ignore[method-assign]
    assert answer.headers["x-ecgw-route"] == ("edge" if fallback == "edge" else "mixed")
    assert purposes(gw.meter)[-1] == (fallback, "step")
    state = _state(gw, "s1")
    assert state["missing_logprobs"] == 1 and state["last"]["reason"] == "missing-logprobs"


@pytest.mark.parametrize("stream", [False, True])
def test_inline_low_entropy_continues_the_same_generation(start_gateway: Callable[..., RunningGateway],
                                                          edge: ModelServer, cloud: ModelServer,
                                                          stream: bool) -> None:
    gw = _gateway(start_gateway, mode="inline")
    edge.script(Reply("Sure here is the answer", first_token_top=CONFIDENT))
    answer = ask(gw, user("hi"), stream=stream)
    assert answer.content == "Sure here is the answer"
    assert answer.headers["x-ecgw-route"] == "edge"
    assert purposes(gw.meter) == [("edge", "step")]  # one prefill only
    assert len(edge.requests) == 1 and edge.requests[0]["stream"] is True
    assert edge.requests[0]["logprobs"] is True and edge.requests[0]["top_logprobs"] == 20
    if stream:  # the client did not ask for logprobs, so none reach it
        assert all(c.choices[0].logprobs is None for c in answer.chunks if c.choices)


@pytest.mark.parametrize("stream", [False, True])
def test_inline_high_entropy_cancels_edge_and_goes_to_cloud(start_gateway: Callable[..., RunningGateway],
                                                            edge: ModelServer, cloud: ModelServer,
                                                            stream: bool) -> None:
    gw = _gateway(start_gateway, mode="inline")
    edge.script(Reply("t0 " + "word " * 50, first_token_top=UNSURE, chunk_delay_s=0.02))
    cloud.script(Reply("cloud does it"))
    answer = ask(gw, user("hard"), stream=stream)
    assert answer.content == "cloud does it"
    assert purposes(gw.meter) == [("edge", "step"), ("cloud", "step")]
    assert gw.meter.calls[0].status == 499  # the edge generation was cancelled
    assert answer.headers["x-ecgw-route"] == "mixed"


def test_inline_with_client_tools_streams_tool_calls(start_gateway: Callable[..., RunningGateway],
                                                     edge: ModelServer) -> None:
    gw = _gateway(start_gateway, mode="inline", missing_logprobs="edge")
    edge.script(Reply(None, tool_calls=[ToolCall("read_file", '{"path": "a.txt"}')]))
    answer = ask(gw, user("read a.txt"), stream=True, tools=TOOLS)
    assert answer.tool_calls == [("read_file", '{"path": "a.txt"}')]
    assert answer.headers["x-ecgw-route"] == "edge"


def test_stay_on_cloud_after_escalation(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                        cloud: ModelServer) -> None:
    gw = _gateway(start_gateway, mode="probe", stay_on_cloud_steps=2)
    edge.script(Reply("t0", first_token_top=UNSURE), Reply("Sure", first_token_top=CONFIDENT), Reply("edge"))
    for _ in range(4):
        ask(gw, user("step"), stream=False)
    assert purposes(gw.meter) == [("edge", "probe"), ("cloud", "step"), ("cloud", "step"), ("cloud", "step"),
                                  ("edge", "probe"), ("edge", "step")]


def test_hold_in_tool_loop(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                           cloud: ModelServer) -> None:
    gw = _gateway(start_gateway, mode="probe", hold_in_tool_loop=True)
    edge.script(Reply("t0", first_token_top=UNSURE))
    cloud.script(Reply(None, tool_calls=[ToolCall("read_file", '{"path": "a"}')]), Reply("done"))
    first = ask(gw, user("task"), stream=False, tools=TOOLS)
    assert first.tool_calls
    loop = [*user("task"), {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "file body"}]
    second = ask(gw, loop, stream=False, tools=TOOLS)
    assert second.content == "done"
    assert purposes(gw.meter) == [("edge", "probe"), ("cloud", "step"), ("cloud", "step")]  # no second probe


def test_tau_by_model(start_gateway: Callable[..., RunningGateway], edge: ModelServer) -> None:
    gw = _gateway(start_gateway, mode="probe", tau=0.01, tau_by_model={"edge-model": 5.0})
    edge.script(Reply("t0", first_token_top=UNSURE), Reply("edge"))
    answer = ask(gw, user("x"), stream=False)
    assert answer.headers["x-ecgw-route"] == "edge"


def test_thinking_edge_decides_after_the_opener(start_gateway: Callable[..., RunningGateway],
                                                edge: ModelServer, cloud: ModelServer) -> None:
    from router.entropy import decision_entropy

    entries = [{"token": "<think>", "top_logprobs": [{"token": "<think>", "logprob": 0.0}]},
               {"token": "\n", "top_logprobs": [{"token": "\n", "logprob": 0.0}]},
               {"token": "a", "top_logprobs": [{"token": "a", "logprob": math.log(0.5)},
                                               {"token": "b", "logprob": math.log(0.5)}]}]
    assert decision_entropy(entries, skip_tokens=("<think>",)) == pytest.approx(math.log(2))
    assert decision_entropy(entries) == pytest.approx(0.0)
