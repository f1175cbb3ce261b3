"""sensitivity-routing: the edge answers a step whose context holds a class of its ``classes`` knob (default the
special categories and secrets), the cloud the rest — through a real gateway on loopback, the cloud a double."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer, Reply


def _ask(gw: RunningGateway, content: str, *, history: str | None = None) -> httpx.Response:
    messages = [{"role": "user", "content": content}]
    if history is not None:  # the class sits in an earlier turn: the whole context counts
        messages = [{"role": "user", "content": history}, {"role": "assistant", "content": "noted"}, *messages]
    response = httpx.post(gw.base_url + "/chat/completions", timeout=30,
                          json={"model": "ecgw/sensitivity-routing", "messages": messages})
    assert response.status_code == 200, response.text
    return response


def test_a_step_holding_a_listed_class_stays_on_the_edge_and_the_rest_go_to_the_cloud(
        start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer) -> None:
    gw = start_gateway(privacy={"layers": {"ner": False}})
    edge.script(Reply("edge answer"))
    cloud.script(Reply("cloud answer"), Reply("cloud answer"))
    assert _ask(gw, "what is a monad?").headers["x-ecgw-route"] == "cloud"
    assert _ask(gw, "now deploy it", history="the key is AKIAIOSFODNN7EXAMPLE").headers["x-ecgw-route"] == "edge"
    assert _ask(gw, "write to alice@example.com").headers["x-ecgw-route"] == "cloud"  # contact: not in the knob
    assert len(cloud.requests) == 2 and "AKIA" not in str(cloud.requests)
    steps = {s.route: s for s in gw.meter.steps}
    assert steps["edge"].reason == "classes" and steps["edge"].signal["classes"] == "secrets"


@pytest.mark.parametrize("classes", [["contact"], []])
def test_the_classes_knob_names_what_stays(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                           cloud: ModelServer, classes: list[str]) -> None:
    gw = start_gateway(privacy={"layers": {"ner": False}},
                       policy={"knobs": {"sensitivity-routing": {"classes": classes}}})
    edge.script(Reply("edge answer"))
    cloud.script(Reply("cloud answer"))
    route = _ask(gw, "write to alice@example.com").headers["x-ecgw-route"]
    assert route == ("edge" if classes else "cloud")


def test_an_unknown_class_in_the_knob_is_refused_at_start() -> None:
    from gateway.config.settings import ConfigError, load_settings
    from router.policies import builtin_policies

    with pytest.raises((ConfigError, ValueError), match="sensitivity-routing"):
        settings = load_settings(None, policy={"knobs": {"sensitivity-routing": {"classes": ["health"]}}})
        builtin_policies()["sensitivity-routing"](settings.policy.knobs["sensitivity-routing"])
