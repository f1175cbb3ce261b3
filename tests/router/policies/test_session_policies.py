"""sketch, task-routing and random-matched: decisions taken once per session (or seeded by it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.config.settings import ConfigError
from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer, Reply
from tests.router.policies.helpers import TOOLS, ask, purposes, start_policy, user


def _start(start: Callable[..., RunningGateway], policy: str, **knobs: Any) -> RunningGateway:
    return start_policy(start, policy, knobs)


# sketch ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True])
def test_sketch_plans_once_and_injects_every_step(start_gateway: Callable[..., RunningGateway],
                                                  edge: ModelServer, cloud: ModelServer, stream: bool) -> None:
    gw = _start(start_gateway, "sketch", plan_words=50)
    cloud.script(Reply("1. read_file a 2. write_file b"))
    first = ask(gw, user("migrate the config"), stream=stream, tools=TOOLS)
    assert first.headers["x-ecgw-route"] == "mixed"
    history = [*user("migrate the config"), {"role": "assistant", "content": "step one done"},
               {"role": "user", "content": "go on"}]
    second = ask(gw, history, stream=stream, tools=TOOLS)
    assert second.headers["x-ecgw-route"] == "edge"
    assert purposes(gw.meter) == [("cloud", "plan"), ("edge", "step"), ("edge", "step")]
    plan_request = cloud.requests[0]
    assert "migrate the config" in plan_request["messages"][1]["content"]
    assert "read_file, write_file" in plan_request["messages"][1]["content"]
    assert "50 words" in plan_request["messages"][0]["content"]
    assert "tools" not in plan_request  # the planner gets tool names, not tools to call
    for request in edge.requests:
        system = request["messages"][0]
        assert system["role"] == "system" and system["content"].startswith("You are an agent.\n\nPlan for this task")
        assert system["content"].endswith("1. read_file a 2. write_file b")
        assert len(request["messages"]) in (2, 4)


def test_sketch_without_system_message_adds_one(start_gateway: Callable[..., RunningGateway],
                                                edge: ModelServer, cloud: ModelServer) -> None:
    gw = _start(start_gateway, "sketch")
    cloud.script(Reply("the plan"))
    ask(gw, [{"role": "user", "content": "task"}], stream=False)
    assert edge.requests[0]["messages"][0] == {"role": "system", "content": (
        "Plan for this task (from a planner; adapt it if tool results show it is wrong):\nthe plan")}


def test_sketch_plan_failure_runs_edge_without_plan_once(start_gateway: Callable[..., RunningGateway],
                                                         edge: ModelServer, cloud: ModelServer) -> None:
    gw = _start(start_gateway, "sketch")
    cloud.script(Reply(status=500))
    assert ask(gw, user("task"), stream=False).content is not None
    ask(gw, user("task"), stream=False)
    assert purposes(gw.meter) == [("cloud", "plan"), ("edge", "step"), ("edge", "step")]
    assert edge.requests[0]["messages"] == user("task")


# task-routing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("rating", "side"), [("Difficulty: 8/10", "cloud"), ("3", "edge")])
def test_edge_judge_routes_the_whole_session(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                             cloud: ModelServer, stream: bool, rating: str, side: str) -> None:
    gw = _start(start_gateway, "task-routing", scorer="edge-judge", threshold=0.6)
    edge.script(Reply(rating))
    first = ask(gw, user("refactor the module"), stream=stream)
    second = ask(gw, user("refactor the module"), stream=stream)
    assert first.headers["x-ecgw-route"] == "mixed" if side == "cloud" else "edge"
    assert second.headers["x-ecgw-route"] == side
    assert purposes(gw.meter) == [("edge", "judge"), (side, "step"), (side, "step")]
    assert edge.requests[0]["messages"][1]["content"] == "refactor the module"


def test_edge_judge_unparseable_uses_fallback(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                              cloud: ModelServer) -> None:
    gw = _start(start_gateway, "task-routing", scorer="edge-judge", fallback="cloud")
    edge.script(Reply("I cannot say"))
    ask(gw, user("task"), stream=False)
    assert purposes(gw.meter) == [("edge", "judge"), ("cloud", "step")]


def test_rules_scorer(start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer) -> None:
    gw = _start(start_gateway, "task-routing", scorer="rules", threshold=0.5,
                rules={"keywords": ["refactor", "prove"], "keywords_for_full": 1, "keyword_weight": 0.5,
                       "long_chars": 100000})
    ask(gw, user("please refactor this"), stream=False, session="hard")
    ask(gw, user("say hello"), stream=False, session="easy")
    assert purposes(gw.meter) == [("cloud", "step"), ("edge", "step")]


def test_table_scorer(start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer,
                      tmp_path: Path) -> None:
    table = {"task-1": {"decision": "cloud", "score": 0.9, "threshold": 0.5},
             "task-2": {"score": 0.2, "threshold": 0.5},
             "sess-3": {"decision": "edge"}}
    path = tmp_path / "routes.json"
    path.write_text(json.dumps(table))
    gw = _start(start_gateway, "task-routing", scorer="table", table_path=str(path))
    ask(gw, user("a"), stream=False, session="s-a", metadata={"task_id": "task-1"})
    ask(gw, user("b"), stream=False, session="s-b", metadata={"task_id": "task-2"})
    ask(gw, user("c"), stream=False, session="sess-3")
    assert purposes(gw.meter) == [("cloud", "step"), ("edge", "step"), ("edge", "step")]


def test_table_scorer_missing_file_fails_at_startup(start_gateway: Callable[..., RunningGateway]) -> None:
    with pytest.raises(ConfigError, match="table_path"):
        _start(start_gateway, "task-routing", scorer="table", table_path="/nonexistent/routes.json")


def test_parse_rating() -> None:
    from router.scorers import parse_rating

    assert parse_rating("7") == pytest.approx(0.7)
    assert parse_rating("Difficulty: 8/10.") == pytest.approx(0.8)
    assert parse_rating("I'd say 3 out of 5") == pytest.approx(0.6)
    assert parse_rating("0.25") == pytest.approx(0.25)
    assert parse_rating("<think>maybe 2</think> Nine") == pytest.approx(0.9)
    assert parse_rating("11") == 1.0
    assert parse_rating("no idea") is None


def test_pick_threshold() -> None:
    from router.scorers import pick_threshold

    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    threshold, share = pick_threshold(scores, 0.3)
    assert threshold == pytest.approx(0.8) and share == pytest.approx(0.3)
    threshold, share = pick_threshold(scores, 0.0)
    assert share == 0.0 and threshold > 1.0


# random-matched ----------------------------------------------------------------------------------------
def _coins(gw: RunningGateway, session: str, steps: int, stream: bool = False) -> list[str]:
    before = len(gw.meter.calls)
    for _ in range(steps):
        ask(gw, user("step"), stream=stream, session=session)
    return [c.side for c in gw.meter.calls[before:]]


@pytest.mark.parametrize("stream", [False, True])
def test_random_matched_is_seeded_by_session(start_gateway: Callable[..., RunningGateway], stream: bool) -> None:
    first = _start(start_gateway, "random-matched", p=0.5)
    second = _start(start_gateway, "random-matched", p=0.5)  # a restart: fresh session state
    a = _coins(first, "session-a", 12, stream)
    assert a == _coins(second, "session-a", 12, stream)
    assert {"edge", "cloud"} == set(a)
    assert all(c.purpose == "step" for c in first.meter.calls)


def test_random_matched_rate_and_seed() -> None:
    from router.policies.random_matched import RandomMatched

    coins = [RandomMatched.coin("", f"s{i}", j) for i in range(50) for j in range(40)]
    share = sum(c < 0.25 for c in coins) / len(coins)
    assert 0.22 < share < 0.28
    assert RandomMatched.coin("x", "s", 0) != RandomMatched.coin("y", "s", 0)


async def test_random_matched_takes_the_matched_arms_rate() -> None:
    from router.policies.random_matched import RandomMatched, RandomMatchedKnobs

    async def measured(experiment: str, arm: str) -> float | None:
        return 0.42 if (experiment, arm) == ("e", "router") else None

    policy = RandomMatched({"p": 0.1, "match": {"experiment": "e", "arm": "router"}}, cloud_rates=measured)
    assert await policy.probability(policy.knobs.default) == 0.42
    unmeasured = RandomMatched({"p": 0.1, "match": {"experiment": "e", "arm": "other"}}, cloud_rates=measured)
    assert await unmeasured.probability(unmeasured.knobs.default) == 0.1
    with pytest.raises(ValueError, match="set p"):
        RandomMatchedKnobs.model_validate({})


def test_random_matched_match_needs_p_even_with_rates() -> None:
    from router.policies.random_matched import RandomMatched

    # p is the rate until the matched arm has one; without it every request would fail at run time
    with pytest.raises(ValueError, match="set p"):
        RandomMatched({"match": {"experiment": "e", "arm": "a"}}, cloud_rates=lambda e, a: None)
