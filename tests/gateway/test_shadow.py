"""Shadow calls (gateway/learning/shadow.py) through a real gateway on loopback, the cloud a double speaking its wire format:
the share drawn, the purpose and the meter, the label beside the step's features, never returned to the client, and
no shadow where the cloud may not go (edge-only, a key that opts out, a step privacy keeps on the edge); a shadow
call keeps its request's configuration, its cloud target included, through a reload that removes that target."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx

from accounting.calls import MemoryMeter, StepRecord
from gateway.app import create_app
from gateway.config.settings import CloudSettings, load_settings
from gateway.egress.transports.cloud import LiteLLMUpstream
from gateway.egress.transports.provider_request import ProviderRequest
from tests.conftest import RunningGateway
from tests.door import GuardedCloud, guarded_services
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer
from tests.gateway.test_reload import _chat, _config, _reload, _write

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}}}}}]
EDGE_ONLY_ANSWERS = {"policy": {"default": "step-routing", "knobs": {"step-routing": {"tau": 10, "missing_logprobs": "edge"}}}}


def _shadowing(rate: float = 1.0, **more: Any) -> dict[str, Any]:
    return {**EDGE_ONLY_ANSWERS, "learning": {"shadow_rate": rate, "seed": 11}, **more}


def _ask(gw: RunningGateway, session: str, *, key: str | None = None, stream: bool = False,
         content: str = "please read the file") -> httpx.Response:
    headers = {"X-Session-Id": session}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = {"model": "ecgw", "messages": [{"role": "user", "content": content}], "tools": TOOLS, "stream": stream}
    response = httpx.post(gw.base_url + "/chat/completions", json=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response


def _steps(gw: RunningGateway, count: int) -> list[StepRecord]:
    """The step records once ``count`` are written (a shadowed step's is written when its shadow call ends)."""
    deadline = time.monotonic() + 20
    while len(gw.meter.steps) < count:
        assert time.monotonic() < deadline, f"only {len(gw.meter.steps)} of {count} step records were written"
        time.sleep(0.02)
    return list(gw.meter.steps)


def test_an_edge_step_is_shadowed_labelled_and_never_shown(start_gateway: Callable[..., RunningGateway],
                                                           edge: ModelServer, cloud: ModelServer) -> None:
    gw = start_gateway(**_shadowing())
    edge.script(Reply(content=None, tool_calls=[ToolCall("read", '{"path": "notes.txt", "limit": 10}')]),
                Reply(content="The file says hello world"))
    cloud.script(Reply(content=None, tool_calls=[ToolCall("read", '{ "limit": 10.0, "path": " notes.txt" }')]),
                 Reply(content="Something else entirely, zebra crossing"))
    first = _ask(gw, "shadow-1")
    _steps(gw, 1)  # the cloud double answers in order: the first shadow call first
    second = _ask(gw, "shadow-1", stream=True)
    assert first.headers["x-ecgw-route"] == "edge" and second.headers["x-ecgw-route"] == "edge"
    assert first.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == (
        '{"path": "notes.txt", "limit": 10}')  # the edge's answer, not the cloud's
    assert "zebra" not in second.text and '"content":"hello "' in second.text
    steps = {s.request_id: s for s in _steps(gw, 2)}
    one, two = steps[first.headers["x-ecgw-request-id"]], steps[second.headers["x-ecgw-request-id"]]
    assert one.label == {"agree": True, "kind": "tool", "similarity": 1.0}
    assert two.label is not None and two.label["agree"] is False and two.label["kind"] == "text"
    assert one.features["tools_offered"] == 1 and one.features["last_role"] == "user"
    assert "entropy_first" in two.features and "margin" in two.features  # from the inline probe's logprobs
    shadows = [c for c in gw.meter.calls if c.purpose == "shadow"]
    assert [(c.side, c.status) for c in shadows] == [("cloud", 200), ("cloud", 200)]
    # its own request ids: the client's requests never carry its cost
    assert all(c.request_id.startswith("shadow-") for c in shadows)
    client_ids = {first.headers["x-ecgw-request-id"], second.headers["x-ecgw-request-id"]}
    assert {c.request_id for c in gw.meter.calls if c.request_id in client_ids} == client_ids
    assert all(c.side == "edge" for c in gw.meter.calls if c.request_id in client_ids)
    assert len(cloud.requests) == 2 and not cloud.requests[0].get("stream")
    assert gw.guard.calls == 2  # through the one door


def test_the_share_drawn_follows_the_rate(start_gateway: Callable[..., RunningGateway], cloud: ModelServer) -> None:
    gw = start_gateway(**_shadowing(0.3))
    for i in range(20):
        _ask(gw, f"rate-{i % 3}")
    coin = random.Random(11)
    expected = sum(coin.random() < 0.3 for _ in range(20))
    steps = _steps(gw, 20)
    assert 0 < expected < 20
    assert sum(s.label is not None for s in steps) == expected == len(cloud.requests)


def test_no_shadow_under_edge_only_for_an_opted_out_key_or_at_rate_zero(
        start_gateway: Callable[..., RunningGateway], cloud: ModelServer) -> None:
    keys = {"api_keys": [{"name": "lab", "key": "k-lab"},
                         {"name": "private", "key": "k-private", "learning": {"shadow": False}}]}
    gw = start_gateway(**_shadowing(server=keys))
    _ask(gw, "opt-1", key="k-private")
    _ask(gw, "opt-2", key="k-private")
    httpx.post(gw.base_url + "/chat/completions", headers={"Authorization": "Bearer k-lab"}, timeout=30,
               json={"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "hi"}]}).raise_for_status()
    _ask(gw, "opt-3", key="k-lab")
    steps = _steps(gw, 4)
    assert [s.label is not None for s in steps] == [False, False, False, True]
    assert len(cloud.requests) == 1
    off = start_gateway(**_shadowing(0.0))
    _ask(off, "off-1")
    assert _steps(off, 1)[0].label is None and len(cloud.requests) == 1


def test_steps_privacy_would_block_are_not_shadowed(start_gateway: Callable[..., RunningGateway],
                                                    cloud: ModelServer) -> None:
    gw = start_gateway(**_shadowing(privacy={"actions": {"EMAIL_ADDRESS": "block"}}))
    _ask(gw, "blocked-1", content="write to ada@example.com about the file")  # the edge answers, the door blocks
    gw2 = start_gateway(**_shadowing(privacy={"actions": {"EMAIL_ADDRESS": "block"}},
                                     policy={"default": "cloud-only"}))
    kept = _ask(gw2, "blocked-2", content="write to ada@example.com about the file")
    assert kept.headers["x-ecgw-fallback"] == "privacy-blocked"
    assert _steps(gw, 1)[0].label is None and _steps(gw2, 1)[0].label is None
    assert cloud.requests == []
    assert not [c for c in gw.meter.calls + gw2.meter.calls if c.purpose == "shadow"]


def test_shadow_calls_spend_the_operators_budget_not_the_tenants(start_gateway: Callable[..., RunningGateway],
                                                                 cloud: ModelServer) -> None:
    limits = {"default_key": {"cloud_calls": {"amount": 1, "window": "1d"}},
              "shadow": {"cloud_calls": {"amount": 2, "window": "1d"}}}
    gw = start_gateway(**_shadowing(limits=limits))
    for i in range(4):
        _ask(gw, f"budget-{i}")
    steps = _steps(gw, 4)
    assert len(cloud.requests) == 2  # the shadow budget's two calls; then it is spent and steps go unlabelled
    assert sum(s.label is not None for s in steps) == 2
    budget = httpx.get(gw.url + "/v1/budget", timeout=10).json()["limits"]
    key = next(r for r in budget if r["kind"] == "cloud_calls")
    assert key["spent"] == 0  # the tenant's key was charged nothing


def test_a_failing_cloud_leaves_the_step_unlabelled(start_gateway: Callable[..., RunningGateway],
                                                    cloud: ModelServer) -> None:
    gw = start_gateway(**_shadowing())
    cloud.script(Reply(status=500, error_message="boom"))
    response = _ask(gw, "fail-1")
    assert response.status_code == 200
    step = _steps(gw, 1)[0]
    assert step.label is None and step.features["step_index"] == 1
    assert [c.status for c in gw.meter.calls if c.purpose == "shadow"] == [502]  # the provider's 500, as the door maps it
    assert json.loads(response.text)["choices"][0]["message"]["content"]


class HeldTarget:
    """A cloud target's transport (the wire to the cloud double) that holds each call until ``release`` is set;
    once closed, a call still in flight fails, as one on a closed HTTP client does."""

    side = "cloud"

    def __init__(self, settings: CloudSettings, release: threading.Event) -> None:
        self._inner = LiteLLMUpstream(settings)
        self.provider, self.model = self._inner.provider, self._inner.model
        self.release, self.entered, self.closed = release, threading.Event(), False

    async def ready(self) -> tuple[bool, str]:
        return await self._inner.ready()

    async def aclose(self) -> None:
        self.closed = True

    async def complete(self, request: ProviderRequest) -> dict[str, Any]:
        self.entered.set()
        await asyncio.to_thread(self.release.wait, 30)
        if self.closed:
            raise RuntimeError(f"{self.model}: cannot send a request, as the client has been closed")
        return await self._inner.complete(request)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[dict[str, Any]]:
        raise AssertionError("a shadow call is one non-streamed answer")
        yield {}


def test_a_reload_removing_the_cloud_target_waits_for_the_shadow_call_using_it(tmp_path: Path, edge: ModelServer,
                                                                               cloud: ModelServer) -> None:
    targets = {name: {"model": f"openai/gpt-{name}", "api_base": cloud.url + "/v1",  # type: ignore[attr-defined]
                      "api_key_env": None, "timeout_s": 10} for name in ("first", "second")}
    config = _config(tmp_path, edge, cloud, policy=EDGE_ONLY_ANSWERS["policy"],
                     learning={"shadow_rate": 1.0, "seed": 11})
    config["cloud"]["targets"] = targets
    path = _write(tmp_path / "config.yaml", config)
    release, held = threading.Event(), {}

    def transport(settings: CloudSettings) -> GuardedCloud:  # every target wears the door's guard
        held[settings.model] = HeldTarget(settings, release)
        return GuardedCloud(held[settings.model])

    settings, meter = load_settings(path), MemoryMeter()
    services = guarded_services(settings, config_path=str(path), meter=meter, cloud_transport=transport)
    server = ThreadedServer(create_app(settings, services=services)).start()
    try:
        answer = _chat(server.url, session="held")
        assert answer.status_code == 200 and answer.headers["x-ecgw-route"] == "edge", answer.text
        first = held["openai/gpt-first"]
        assert first.entered.wait(30), "the shadow call never reached the default target"
        # the request has ended; its shadow call is in flight on "first" when a reload removes that target
        config["cloud"] = {**config["cloud"], "targets": {"second": targets["second"]}}
        _write(path, config)
        reloaded = _reload(server.url)
        assert reloaded.status_code == 200 and reloaded.json()["not_reloadable"] == [], reloaded.text
        for _ in range(50):  # the replaced snapshot retires in a task: a bound, not a measurement
            httpx.get(server.url + "/healthz", timeout=10)
        assert not first.closed  # the shadow call still holds its request's snapshot, and so the target
        release.set()
        deadline = time.monotonic() + 20
        while not meter.steps or not first.closed:
            assert time.monotonic() < deadline, "the shadow call never ended, or its target was never closed"
            time.sleep(0.02)
        step = meter.steps[0]
        assert step.request_id == answer.headers["x-ecgw-request-id"]
        assert step.label is not None and step.label["agree"] is True  # the double answers as the edge did
        shadow = [c for c in meter.calls if c.purpose == "shadow"]
        assert [(c.status, c.model) for c in shadow] == [(200, "openai/gpt-first")]
        assert [r["model"] for r in cloud.requests] == ["gpt-first"]
    finally:
        release.set()
        server.stop()
