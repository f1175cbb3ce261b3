"""One scripted three-step agent trajectory through every policy, as arms of one experiment, compared by
``ecgw ab`` from the metered calls."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.cli.main import main
from router.ab import compare, render_markdown, row_from_call
from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.router.policies.helpers import TOOLS, ask

CONFIDENT = {"Reading": 0.97, "Let": 0.03}
UNSURE = {f"t{i}": 1.0 for i in range(20)}
POLICIES = ["edge-only", "cloud-only", "task-routing", "step-routing", "sketch", "advisor", "delegate",
            "random-matched"]
EXPERIMENT = {"active": None, "definitions": {"trajectory": {"arms": {
    name: {"policy": name, "knobs": {"p": 0.5}} if name == "random-matched" else {"policy": name}
    for name in POLICIES}}}}
TASK = "Copy the setting from a.txt into b.txt and report the value."


def _step(body: dict[str, Any]) -> int:
    """Which step of the trajectory a request belongs to: the number of tool results so far."""
    return sum(1 for m in body.get("messages") or () if m.get("role") == "tool"
               and not str(m.get("content", "")).startswith("advice"))


def _agent_reply(body: dict[str, Any], top: dict[str, float] | None) -> Reply:
    step = _step(body)
    if step == 0:
        return Reply("Reading a.txt", tool_calls=[ToolCall("read_file", '{"path": "a.txt"}')], first_token_top=top)
    if step == 1:
        return Reply("Writing b.txt", tool_calls=[ToolCall("write_file", '{"path": "b.txt"}')], first_token_top=top)
    return Reply("The value is 42 and b.txt is updated.", first_token_top=top)


def edge_responder(body: dict[str, Any]) -> Reply:
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    tools = [t["function"]["name"] for t in body.get("tools") or ()]
    step = _step(body)
    if system.startswith("Rate how difficult"):
        return Reply("7")
    advised = any(str(m.get("content", "")).startswith("advice") for m in body.get("messages") or ())
    if "ask_cloud_advisor" in tools and step == 0 and not advised:
        return Reply(None, tool_calls=[ToolCall("ask_cloud_advisor", '{"question": "where is the setting?"}')])
    if "delegate_to_cloud" in tools and step == 1:
        return Reply(None, tool_calls=[ToolCall("delegate_to_cloud", '{"reason": "unsure"}')])
    return _agent_reply(body, UNSURE if step == 1 else CONFIDENT)  # step-routing escalates step 2


def cloud_responder(body: dict[str, Any]) -> Reply:
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    if system.startswith("You plan"):
        return Reply("1. read_file a.txt 2. write_file b.txt 3. report the value")
    if system.startswith("You advise"):
        return Reply("advice: the setting is on the first line of a.txt")
    return _agent_reply(body, None)


@pytest.fixture()
def responders(edge: ModelServer, cloud: ModelServer) -> Iterator[None]:
    edge._responder, cloud._responder = edge_responder, cloud_responder
    yield
    edge._responder = cloud._responder = None


def run_trajectory(gw: RunningGateway, arm: str, *, stream: bool) -> list[str]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a file agent."},
                                      {"role": "user", "content": TASK}]
    session = f"traj-{arm}-{stream}"
    routes = []
    for _ in range(3):
        answer = ask(gw, messages, stream=stream, session=session, arm=f"trajectory:{arm}", tools=TOOLS)
        routes.append(answer.headers["x-ecgw-route"])
        if not answer.tool_calls:
            assert answer.content == "The value is 42 and b.txt is updated."
            break
        calls = [{"id": f"c{len(messages)}{i}", "type": "function", "function": {"name": n, "arguments": a}}
                 for i, (n, a) in enumerate(answer.tool_calls)]
        messages.append({"role": "assistant", "content": answer.content, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "setting=42"} for c in calls]
    assert len(routes) == 3
    return routes


EXPECTED_CLOUD = {"edge-only": 0, "cloud-only": 3, "task-routing": 3, "step-routing": 1, "sketch": 1, "advisor": 1,
                  "delegate": 1}


@pytest.mark.parametrize("stream", [False, True])
def test_trajectory_through_every_policy(start_gateway: Callable[..., RunningGateway], responders: None,
                                         stream: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gw = start_gateway(experiments=EXPERIMENT, sessions={"store": "memory"})
    for arm in POLICIES:
        run_trajectory(gw, arm, stream=stream)
    rows = [row_from_call(c) for c in gw.meter.calls]
    assert all(r["experiment"] == "trajectory" for r in rows)
    reports = {r.group: r for r in compare(rows, by="arm")}
    for arm, expected in EXPECTED_CLOUD.items():
        assert reports[arm].cloud_calls == expected, arm
    # The coin of step i is the first 8 bytes of sha256("ecgw-random-matched\x1f\x1ftraj-random-matched-<stream>
    # \x1f<i>") over 2**64, computed by hand: 0.363, 0.385, 0.240 (all < p = 0.5) without streaming; 0.806,
    # 0.241, 0.623 with it.
    assert reports["random-matched"].cloud_calls == (1 if stream else 3)
    assert reports["task-routing"].purposes["edge:judge"] == 1
    assert reports["step-routing"].purposes["edge:step"] == 3  # inline: the escalated generation was cancelled
    assert reports["sketch"].purposes["cloud:plan"] == 1
    assert reports["advisor"].purposes["cloud:advice"] == 1
    assert reports["delegate"].purposes["cloud:delegate"] == 1
    assert all(r.requests == 3 for r in reports.values())
    calls_file = tmp_path / "calls.jsonl"
    calls_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["ab", "--experiment", "trajectory", "--calls", str(calls_file)]) == 0
    printed = capsys.readouterr().out
    assert "| step-routing | 1 | 3 | 0.333 | 1 |" in printed
    out = os.environ.get("ECGW_TRAJECTORY_TABLE")
    if out:  # for the closing note
        Path(out).with_suffix(f".{'stream' if stream else 'json'}.md").write_text(printed)
    table = render_markdown(list(reports.values()))
    assert "| step-routing | 1 | 3 | 0.333 | 1 |" in table and "| edge-only | 1 | 3 | 0.000 | 0 |" in table
