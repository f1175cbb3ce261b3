"""Experiment arms: stable assignment by session hash (across restarts), X-ECGW-Arm, knob overrides, metering."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

from gateway.config.settings import ConfigError
from router.experiments import ExperimentSettings, assign
from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer
from tests.router.policies.helpers import ask, user

EXPERIMENTS = {
    "active": "edge-vs-cloud",
    "definitions": {
        "edge-vs-cloud": {"arms": {
            "edge": {"policy": "edge-only", "weight": 1},
            "cloud": {"policy": "cloud-only", "weight": 1},
            "never": {"policy": "cloud-only", "weight": 0},
        }},
        "coins": {"arms": {
            "always": {"policy": "random-matched", "knobs": {"p": 1.0}},
            "never": {"policy": "random-matched", "knobs": {"p": 0.0}},
        }},
    },
}


def _start(start: Callable[..., RunningGateway], **more: Any) -> RunningGateway:
    return start(experiments=EXPERIMENTS, sessions={"store": "memory"}, **more)


def _arms(gw: RunningGateway, sessions: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for session in sessions:
        answer = ask(gw, user("hi"), stream=False, session=session)
        out[session] = answer.headers.get("x-ecgw-arm")
        call = gw.meter.calls[-1]
        assert (call.experiment, call.arm) == ("edge-vs-cloud", out[session].split(":")[1])  # type: ignore[union-attr]
        assert call.side == out[session].split(":")[1]  # type: ignore[union-attr]
    return out


def test_assignment_is_stable_across_gateway_restarts(start_gateway: Callable[..., RunningGateway]) -> None:
    sessions = [f"session-{i}" for i in range(24)]
    first = _arms(_start(start_gateway), sessions)
    second = _arms(_start(start_gateway), sessions)  # a new gateway (its own memory store): nothing remembered
    assert first == second
    assert set(first.values()) == {"edge-vs-cloud:edge", "edge-vs-cloud:cloud"}  # weight 0 never drawn


def test_assignment_is_sticky_and_weighted() -> None:
    experiment = ExperimentSettings.model_validate({"arms": {"a": {"policy": "edge-only", "weight": 3},
                                                             "b": {"policy": "cloud-only", "weight": 1}}})
    arms = [assign("x", experiment, f"s{i}").arm for i in range(4000)]
    assert 0.72 < arms.count("a") / len(arms) < 0.78
    assert assign("x", experiment, "s1") == assign("x", experiment, "s1")
    salted = experiment.model_copy(update={"salt": "again"})
    assert [assign("x", salted, f"s{i}").arm for i in range(50)] != arms[:50]


@pytest.mark.parametrize("stream", [False, True])
def test_forced_arm_applies_its_knob_overrides(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                               cloud: ModelServer, stream: bool) -> None:
    gw = _start(start_gateway)
    for _ in range(3):
        answer = ask(gw, user("x"), stream=stream, session="forced", arm="coins:always")
        assert answer.headers["x-ecgw-arm"] == "coins:always"
        assert answer.headers["x-ecgw-policy"] == "random-matched"
        assert answer.headers["x-ecgw-route"] == "cloud"
    later = ask(gw, user("x"), stream=stream, session="forced")  # the session keeps its arm
    assert later.headers["x-ecgw-arm"] == "coins:always"
    assert {(c.experiment, c.arm, c.side) for c in gw.meter.calls} == {("coins", "always", "cloud")}
    never = ask(gw, user("x"), stream=stream, session="other", arm="coins:never")
    assert never.headers["x-ecgw-route"] == "edge"


def test_arm_name_alone_means_the_active_experiment(start_gateway: Callable[..., RunningGateway]) -> None:
    gw = _start(start_gateway)
    answer = ask(gw, user("x"), stream=False, session="s", arm="cloud")
    assert answer.headers["x-ecgw-arm"] == "edge-vs-cloud:cloud" and answer.headers["x-ecgw-route"] == "cloud"


def test_explicit_policy_leaves_the_experiment(start_gateway: Callable[..., RunningGateway]) -> None:
    gw = _start(start_gateway)
    answer = ask(gw, user("x"), stream=False, session="s", policy="edge-only")
    assert "x-ecgw-arm" not in answer.headers
    assert (gw.meter.calls[-1].experiment, gw.meter.calls[-1].arm) == (None, None)


def test_unknown_arm_is_a_client_error(start_gateway: Callable[..., RunningGateway]) -> None:
    gw = _start(start_gateway)
    with pytest.raises(openai.BadRequestError, match="coins:always"):
        ask(gw, user("x"), stream=False, arm="nope")


def test_bad_arm_config_fails_at_startup(start_gateway: Callable[..., RunningGateway]) -> None:
    bad = {"active": None, "definitions": {"e": {"arms": {"a": {"policy": "step-routing",
                                                                "knobs": {"tau": "high"}}}}}}
    with pytest.raises(ConfigError, match=r"experiments.definitions.e.arms.a.knobs.*tau"):
        start_gateway(experiments=bad)
    unknown = {"active": None, "definitions": {"e": {"arms": {"a": {"policy": "nope"}}}}}
    with pytest.raises(ConfigError, match="nope"):
        start_gateway(experiments=unknown)
