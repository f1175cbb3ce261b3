"""A class blocked for a tier never reaches a target of that tier: the step goes to the first target of the fallback
chain whose tier may receive it, else stays on the edge (``x-ecgw-fallback: data-class``, the step record naming
the class) — for the step itself, every internal cloud call (plan, advice, delegation, shadow) and every surface
(chat, Responses, Messages). Real gateways on loopback; the two clouds are doubles speaking OpenAI's wire."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from privacy.audit.receipts import HEADER, parse
from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer

EMAIL = "alice@example.com"
PRICES = {"gpt-public": {"input": 1.0, "output": 2.0}, "gpt-private": {"input": 5.0, "output": 10.0}}
CONTACT_OFF_STANDARD = {"layers": {"ner": False}, "classes": {"contact": {"standard": "block"}}}


@pytest.fixture(scope="module")
def _trusted_server() -> Iterator[tuple[ModelServer, ThreadedServer]]:
    fake = ModelServer("trusted-cloud", model="gpt-private")
    server = ThreadedServer(fake.app).start()
    yield fake, server
    server.stop()


@pytest.fixture()
def trusted(_trusted_server: tuple[ModelServer, ThreadedServer]) -> ModelServer:
    fake, server = _trusted_server
    fake.reset()
    fake.url = server.url  # type: ignore[attr-defined]
    return fake


def _targets(public: ModelServer, trusted: ModelServer | None) -> dict[str, Any]:
    targets: dict[str, Any] = {"public": {"model": "openai/gpt-public", "api_base": public.url + "/v1",  # type: ignore[attr-defined]
                                          "timeout_s": 20}}
    if trusted is None:
        return {"targets": targets}
    targets["private"] = {"model": "openai/gpt-private", "api_base": trusted.url + "/v1",  # type: ignore[attr-defined]
                          "timeout_s": 20, "tier": "trusted"}
    return {"targets": targets, "default_target": "public", "fallbacks": {"public": ["private"]}}


def _start(start_gateway: Callable[..., RunningGateway], public: ModelServer, trusted: ModelServer | None,
           privacy: dict[str, Any] | None = None, **extra: Any) -> RunningGateway:
    return start_gateway(cloud=_targets(public, trusted), accounting={"prices": PRICES},
                         privacy=privacy if privacy is not None else CONTACT_OFF_STANDARD, **extra)


def _chat(gw: RunningGateway, *, model: str = "ecgw/cloud-only", stream: bool = False, content: str = f"write to {EMAIL}",
          headers: dict[str, str] | None = None, **body: Any) -> httpx.Response:
    response = httpx.post(gw.base_url + "/chat/completions", timeout=60, headers=headers or {},
                          json={"model": model, "stream": stream, "messages": [{"role": "user", "content": content}],
                                **body})
    assert response.status_code == 200, response.text
    return response


def _steps(gw: RunningGateway, count: int) -> list[Any]:
    deadline = time.monotonic() + 20
    while len(gw.meter.steps) < count:
        assert time.monotonic() < deadline, f"only {len(gw.meter.steps)} of {count} step records were written"
        time.sleep(0.02)
    return list(gw.meter.steps)


@pytest.mark.parametrize("stream", [False, True])
def test_a_class_blocked_for_standard_goes_to_the_first_trusted_target_of_the_chain(
        start_gateway: Callable[..., RunningGateway], cloud: ModelServer, trusted: ModelServer, stream: bool) -> None:
    gw = _start(start_gateway, cloud, trusted)
    response = _chat(gw, stream=stream, tier="standard", metadata={"tier": "trusted"},
                     headers={"x-ecgw-tier": "trusted"})
    assert cloud.requests == []
    assert len(trusted.requests) == 1 and EMAIL not in json.dumps(trusted.requests[0])  # pseudonymised there
    assert response.headers["x-ecgw-cloud-target"] == "private" and "x-ecgw-fallback" not in response.headers
    claims = parse(response.headers[HEADER])[1]
    assert (claims["target"], claims["tier"]) == ("private", "trusted")
    assert claims["classes"] == {"contact": {"pseudonymised": 1, "raw": 0}}
    # the budget was reserved, and the call metered, on the target that answered
    assert [(c.deployment, c.model) for c in gw.meter.calls if c.side == "cloud"] == [("private", "openai/gpt-private")]


def test_a_body_with_no_such_class_goes_where_the_policy_wanted(
        start_gateway: Callable[..., RunningGateway], cloud: ModelServer, trusted: ModelServer) -> None:
    gw = _start(start_gateway, cloud, trusted)
    response = _chat(gw, content="what is a monad?")
    assert response.headers["x-ecgw-cloud-target"] == "public" and len(cloud.requests) == 1
    assert parse(response.headers[HEADER])[1]["tier"] == "standard" and trusted.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_with_no_target_of_a_tier_that_may_the_step_stays_on_the_edge(
        start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer, stream: bool) -> None:
    gw = _start(start_gateway, cloud, None)
    edge.script(Reply("edge answer"))
    response = _chat(gw, stream=stream)
    assert cloud.requests == []
    assert response.headers["x-ecgw-fallback"] == "data-class" and response.headers["x-ecgw-route"] == "edge"
    step = _steps(gw, 1)[0]
    assert step.fallback == "data-class" and step.signal["data_class"] == "contact"
    assert step.signal["cloud_stopped"] == "data-class"


def test_the_strict_preset_keeps_secrets_off_every_tier(
        start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer,
        trusted: ModelServer) -> None:
    gw = _start(start_gateway, cloud, trusted, privacy={"layers": {"ner": False}, "profile": "strict"})
    edge.script(Reply("edge answer"))
    response = _chat(gw, content="deploy with key AKIAIOSFODNN7EXAMPLE")
    assert cloud.requests == [] and trusted.requests == []
    assert response.headers["x-ecgw-fallback"] == "data-class"
    assert _steps(gw, 1)[0].signal["data_class"] == "secrets"


def test_a_key_over_its_tenant_over_the_deployment_and_no_request_field_weakens_it(
        start_gateway: Callable[..., RunningGateway], cloud: ModelServer, trusted: ModelServer) -> None:
    server = {"api_keys": [{"name": "ci", "key": "k-ci", "tenant": "acme"},
                           {"name": "ops", "key": "k-ops", "tenant": "acme"}]}
    privacy = {"layers": {"ner": False}, "tenants": {"acme": {"classes": {"contact": {"standard": "block"}}}},
               "keys": {"ops": {"classes": {"contact": {"standard": "pseudonymise"}}}}}
    gw = _start(start_gateway, cloud, trusted, privacy=privacy, server=server)
    ci = _chat(gw, headers={"Authorization": "Bearer k-ci", "X-Session-Id": "s"},
               metadata={"privacy": {"classes": {"contact": {"standard": "allow"}}}})
    ops = _chat(gw, headers={"Authorization": "Bearer k-ops", "X-Session-Id": "s"})
    assert ci.headers["x-ecgw-cloud-target"] == "private" and ops.headers["x-ecgw-cloud-target"] == "public"
    assert len(trusted.requests) == 1 and len(cloud.requests) == 1


def test_the_last_check_counts_what_it_finds_on_the_exact_body(
        start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer) -> None:
    """A value only the last check finds (a JSON key of tool-call arguments, which the walk leaves alone) is of the
    class all the same: it never reaches the standard target, pseudonymised or raw."""
    gw = _start(start_gateway, cloud, None)
    edge.script(Reply("edge answer"))
    messages = [{"role": "user", "content": "send the note"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                    "name": "send", "arguments": json.dumps({EMAIL: "hello"})}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "sent"}]
    response = httpx.post(gw.base_url + "/chat/completions", timeout=60,
                          json={"model": "ecgw/cloud-only", "messages": messages})
    assert response.status_code == 200, response.text
    assert cloud.requests == []
    assert response.headers["x-ecgw-fallback"] == "data-class"


# Every internal cloud call kind: a sketch's plan, an advisor's advice, a delegation, a shadow call.
KINDS: dict[str, dict[str, Any]] = {
    "plan": {"model": "ecgw/sketch", "edge": [Reply("edge answer")]},
    "advice": {"model": "ecgw/advisor", "edge": [
        Reply(content=None, tool_calls=[ToolCall("ask_cloud_advisor", '{"question": "which address?"}')]),
        Reply("edge answer")]},
    "delegation": {"model": "ecgw/delegate", "edge": [
        Reply(content=None, tool_calls=[ToolCall("delegate_to_cloud", '{"reason": "hard"}')]), Reply("edge answer")]},
    "shadow": {"model": "ecgw", "edge": [Reply("edge answer")],
               "extra": {"policy": {"default": "step-routing", "knobs": {"step-routing": {
                   "tau": 10, "missing_logprobs": "edge"}}}, "learning": {"shadow_rate": 1.0, "seed": 11}}},
}
PURPOSES = {"plan": "plan", "advice": "advice", "delegation": "delegate", "shadow": "shadow"}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("fallback", [False, True])
def test_every_internal_cloud_call_keeps_the_class_off_standard(
        start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer, trusted: ModelServer,
        kind: str, fallback: bool) -> None:
    spec = KINDS[kind]
    gw = _start(start_gateway, cloud, trusted if fallback else None, **spec.get("extra", {}))
    edge.script(*spec["edge"])
    trusted.script(Reply("1. do it"), Reply("cloud answer"))
    _chat(gw, model=spec["model"])
    _steps(gw, 1)  # a shadowed step's record is written when its shadow call ends
    assert cloud.requests == []
    cloud_purposes = [c.purpose for c in gw.meter.calls if c.side == "cloud"]
    if fallback:  # the call went to the trusted target instead
        assert len(trusted.requests) == 1 and PURPOSES[kind] in cloud_purposes
        assert EMAIL not in json.dumps(trusted.requests[0])
    elif kind == "shadow":  # no shadow call, so no label, and the record says which class kept it local
        assert cloud_purposes == [] and gw.meter.steps[0].label is None
        assert gw.meter.steps[0].signal["shadow_data_class"] == "contact"
    else:
        assert cloud_purposes == [] and gw.meter.steps[0].signal.get("data_class") == "contact"


def test_the_responses_surface_keeps_the_class_off_standard(
        start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer) -> None:
    gw = _start(start_gateway, cloud, None)
    edge.script(Reply("edge answer"))
    response = httpx.post(gw.base_url + "/responses", timeout=60,
                          json={"model": "ecgw/cloud-only", "input": f"write to {EMAIL}"})
    assert response.status_code == 200, response.text
    assert cloud.requests == [] and response.headers["x-ecgw-fallback"] == "data-class"


def test_the_messages_surface_keeps_the_class_off_standard(
        start_gateway: Callable[..., RunningGateway], edge: ModelServer, cloud: ModelServer) -> None:
    gw = _start(start_gateway, cloud, None)
    edge.script(Reply("edge answer"))
    response = httpx.post(gw.url + "/v1/messages", timeout=60, json={
        "model": "ecgw/cloud-only", "max_tokens": 64, "messages": [{"role": "user", "content": f"write to {EMAIL}"}]})
    assert response.status_code == 200, response.text
    assert cloud.requests == [] and response.headers["x-ecgw-fallback"] == "data-class"
