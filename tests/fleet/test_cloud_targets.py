"""Cloud targets behind the one door: fallback on each fault kind (429, 5xx, timeout, connection failure, no first
token), each attempt metered under its own target's model and price, cool-down, the target a policy, an arm or a
client's model alias names (configured names only), and a cross-provider fallback that drops Anthropic-only state.
The providers are doubles on loopback speaking OpenAI's and Anthropic's wire formats."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import pytest

from accounting.factory import build_record_builder
from gateway.config.settings import ConfigError, load_settings
from tests.fakes.model_server import ModelServer, Reply
from tests.fleet.conftest import closed_port

PRICES = {"gpt-primary": {"input": 1.0, "output": 2.0}, "gpt-backup": {"input": 10.0, "output": 20.0}}
EMAIL = "alice@example.com"


def _targets(primary_url: str, backup_url: str, **primary: Any) -> dict[str, Any]:
    return {"targets": {
        "primary": {"model": "openai/gpt-primary", "api_base": primary_url + "/v1", "timeout_s": 20, **primary},
        "backup": {"model": "openai/gpt-backup", "api_base": backup_url + "/v1", "timeout_s": 20}},
        "default_target": "primary", "fallbacks": {"primary": ["backup"]}}


@pytest.fixture()
def clouds(replicas: dict[str, ModelServer]) -> tuple[ModelServer, ModelServer]:
    return replicas["b"], replicas["c"]  # two more OpenAI-compatible servers, as two cloud providers


def _gateway(start_gateway: Any, cloud: dict[str, Any], **extra: Any) -> Any:
    return start_gateway(cloud=cloud, accounting={"prices": PRICES}, privacy={"layers": {"ner": False}}, **extra)


def _chat(gw: Any, session: str, *, stream: bool = False, model: str = "ecgw/cloud-only",
          headers: dict[str, str] | None = None, **body: Any) -> httpx.Response:
    return httpx.post(gw.base_url + "/chat/completions", timeout=60,
                      headers={"X-Session-Id": session, **(headers or {})},
                      json={"model": model, "stream": stream,
                            "messages": [{"role": "user", "content": f"write to {EMAIL}"}], **body})


def _cloud_calls(gw: Any) -> list[tuple[str | None, str, int]]:
    return [(c.deployment, c.model, c.status) for c in gw.meter.calls if c.side == "cloud"]


FAULTS = {
    "429": ({}, Reply(status=429, error_message="rate limited"), 429),
    "500": ({}, Reply(status=500, error_message="internal"), 502),
    "503": ({}, Reply(status=503, error_message="overloaded"), 502),
    "timeout": ({"timeout_s": 1}, Reply("late", delay_s=4), 504),
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_failing_primary_falls_back_and_each_attempt_is_metered_as_its_own(start_gateway, clouds, fault, stream):
    primary, backup = clouds
    knobs, reply, status = FAULTS[fault]
    gw = _gateway(start_gateway, _targets(primary.url, backup.url, **knobs))
    primary.script(reply)
    response = _chat(gw, f"fault-{fault}-{stream}", stream=stream)
    assert response.status_code == 200, response.text
    assert response.headers["x-ecgw-cloud-target"] == "backup"
    assert len(primary.requests) == 1 and len(backup.requests) == 1
    # the same protected body (the same placeholder for alice) went to both; neither saw her address
    assert primary.requests[0]["messages"] == backup.requests[0]["messages"]
    assert EMAIL not in str(primary.requests) + str(backup.requests)
    assert EMAIL in response.text  # restored for the client, whoever answered
    assert _cloud_calls(gw) == [("primary", "openai/gpt-primary", status), ("backup", "openai/gpt-backup", 200)]
    assert gw.meter.steps[-1].signal["cloud_chain"] == f"primary:{status}>backup"
    rows = [build_record_builder(gw.settings.accounting).build(c) for c in gw.meter.calls if c.side == "cloud"]
    assert rows[0]["cost_usd"] in (0, None) and rows[1]["cost_usd"] > 0  # the backup's price, not the primary's
    assert rows[1]["cost_usd"] == pytest.approx((rows[1]["raw_input_tokens"] * 10 + rows[1]["output_tokens"] * 20)
                                                / 1e6)


@pytest.mark.parametrize("stream", [False, True])
def test_an_unreachable_primary_falls_back(start_gateway, clouds, stream):
    _, backup = clouds
    gw = _gateway(start_gateway, _targets(f"http://127.0.0.1:{closed_port()}", backup.url))
    response = _chat(gw, f"unreachable-{stream}", stream=stream)
    assert response.status_code == 200 and response.headers["x-ecgw-cloud-target"] == "backup"
    assert [(d, s) for d, _, s in _cloud_calls(gw)] == [("primary", 502), ("backup", 200)]


def test_a_stream_with_no_first_token_in_time_falls_back(start_gateway, clouds):
    primary, backup = clouds
    gw = _gateway(start_gateway, _targets(primary.url, backup.url, first_token_timeout_s=1))
    primary.script(Reply("too late", delay_s=5))  # within timeout_s (20), past first_token_timeout_s
    response = _chat(gw, "slow-first-token", stream=True)
    assert response.status_code == 200 and response.headers["x-ecgw-cloud-target"] == "backup"
    assert [(d, s) for d, _, s in _cloud_calls(gw)] == [("primary", 504), ("backup", 200)]


def test_a_client_error_does_not_fall_back(start_gateway, clouds):
    primary, backup = clouds
    gw = _gateway(start_gateway, _targets(primary.url, backup.url))
    primary.script(Reply(status=400, error_message="bad request"))
    assert _chat(gw, "bad").status_code == 400 and not backup.requests


def test_the_last_target_failing_is_the_clients_error(start_gateway, clouds):
    primary, backup = clouds
    gw = _gateway(start_gateway, _targets(primary.url, backup.url))
    primary.script(Reply(status=429))
    backup.script(Reply(status=429))
    response = _chat(gw, "all-down")
    assert response.status_code == 429 and "x-ecgw-request-id" in response.headers
    assert [(d, s) for d, _, s in _cloud_calls(gw)] == [("primary", 429), ("backup", 429)]


def test_a_target_that_keeps_failing_cools_down(start_gateway, clouds):
    primary, backup = clouds
    gw = _gateway(start_gateway, {**_targets(primary.url, backup.url), "cool_after": 2, "cooldown_s": 3600})
    primary.script(Reply(status=500), Reply(status=500))
    for n in range(4):
        assert _chat(gw, f"cool-{n}").headers["x-ecgw-cloud-target"] == "backup"
    assert len(primary.requests) == 2 and len(backup.requests) == 4  # cooling: not asked again


def test_a_policy_an_arm_and_a_model_alias_name_their_target(start_gateway, clouds, edge):
    primary, backup = clouds
    experiments = {"active": "ab", "definitions": {"ab": {"arms": {
        "to-backup": {"policy": "cloud-only", "weight": 1, "knobs": {"cloud_target": "backup"}}}}}}
    gw = _gateway(start_gateway, {**_targets(primary.url, backup.url), "model_aliases": {"gpt-5.4": "backup"}},
                  policy={"knobs": {"sketch": {"cloud_target": "backup"}}}, experiments=experiments)
    arm = _chat(gw, "arm", model="any-model")  # names no policy: the session's arm decides
    assert arm.headers["x-ecgw-arm"] == "ab:to-backup" and arm.headers["x-ecgw-cloud-target"] == "backup"
    assert _chat(gw, "forced", headers={"X-ECGW-Policy": "cloud-only"}).headers["x-ecgw-cloud-target"] == "primary"
    assert _chat(gw, "sketch", model="ecgw/sketch").headers["x-ecgw-cloud-target"] == "backup"  # the policy's
    aliased = _chat(gw, "alias", model="gpt-5.4")
    assert aliased.headers["x-ecgw-policy"] == "cloud-only" and aliased.headers["x-ecgw-cloud-target"] == "backup"


def test_a_request_cannot_name_a_target_or_a_provider(start_gateway, clouds, edge):
    primary, backup = clouds
    gw = _gateway(start_gateway, {**_targets(primary.url, backup.url), "model_aliases": {"gpt-5.4": "backup"}})
    attempts = [
        {"model": "openai/gpt-backup"},  # a provider's model name that is no alias: the default policy
        {"model": "anthropic/claude-opus", "api_base": "http://attacker.example/v1"},
        {"model": "ecgw/cloud-only", "cloud_target": "backup", "metadata": {"cloud_target": "backup"}},
    ]
    for n, body in enumerate(attempts):
        response = _chat(gw, f"attack-{n}", **body)
        assert response.status_code == 200, response.text
        assert response.headers.get("x-ecgw-cloud-target") in (None, "primary")
    assert not backup.requests and len(primary.requests) == 1  # (what reaches it of the body: the boundary's)


def test_target_names_are_checked_at_start():
    base = {"targets": {"one": {"model": "openai/a"}}}
    with pytest.raises(ConfigError, match="names no target"):
        load_settings(None, cloud={**base, "fallbacks": {"one": ["two"]}})
    with pytest.raises(ConfigError, match="names no target"):
        load_settings(None, cloud={**base, "model_aliases": {"gpt-5.4": "nope"}})
    with pytest.raises(ConfigError, match="cloud_target is 'nope'"):
        load_settings(None, cloud=base, policy={"knobs": {"cloud-only": {"cloud_target": "nope"}}})
    with pytest.raises(ConfigError, match="unique across both"):
        load_settings(None, cloud=base, edge={"deployments": [{"name": "one", "base_url": "http://x/v1",
                                                                "model": "m"}]})


def test_default_is_the_shorthands_name_and_metering_tells_the_two_apart(tmp_path):
    edge = [{"name": "default", "base_url": "http://x/v1", "model": "m"}]
    with pytest.raises(ConfigError, match=r"edge.deployments.0.name: 'default' is the name the cloud's one-target"):
        load_settings(None, edge={"deployments": edge})  # the cloud is its shorthand, named default
    with pytest.raises(ConfigError, match=r"cloud.targets.default: 'default' is the name the edge's"):
        load_settings(None, cloud={"targets": {"default": {"model": "openai/a"}}})
    both = load_settings(None, edge={"deployments": [{**edge[0], "name": "gpu"}]},
                         cloud={"targets": {"default": {"model": "openai/a"}}})  # no shorthand on the edge: fine
    assert both.cloud.primary == "default"
    from accounting.store import UsageStore
    from tests.accounting.rows import row

    store = UsageStore.from_url(f"sqlite:///{tmp_path / 'usage.sqlite3'}")
    store.open()
    store.insert([row(side=side, deployment=name, request_id=f"r{n}") for n, (side, name) in enumerate(
        [("edge", "default"), ("cloud", "default"), ("cloud", "default"), ("edge", "gpu")])])
    assert {r["group"]: r["requests"] for r in store.aggregate("deployment")} == {
        "edge:default": 1, "cloud:default": 2, "gpu": 1}
    store.dispose()


def test_a_fallback_across_providers_drops_anthropic_only_state(start_gateway, clouds, caplog):
    _, backup = clouds
    cloud = {"targets": {
        "claude": {"model": "anthropic/claude-sonnet-4-5", "api_base": f"http://127.0.0.1:{closed_port()}",
                   "timeout_s": 20},
        "gpt": {"model": "openai/gpt-backup", "api_base": backup.url + "/v1", "timeout_s": 20}},
        "fallbacks": {"claude": ["gpt"]}}
    gw = _gateway(start_gateway, cloud)
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
    ephemeral = {"type": "ephemeral"}
    with caplog.at_level("INFO", logger="ecgw"):
        message = client.messages.create(
            model="ecgw/cloud-only", max_tokens=1024, thinking={"type": "enabled", "budget_tokens": 512},
            system=[{"type": "text", "text": "You deploy.", "cache_control": ephemeral}],
            tools=[{"name": "Read", "description": "read", "input_schema": {"type": "object"},
                    "cache_control": ephemeral}],
            messages=[
                {"role": "user", "content": [{"type": "text", "text": "read it", "cache_control": ephemeral}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "I should read it.", "signature": "U0lHTkFUVVJF"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}])
    assert message.content
    sent = str(backup.requests[-1])
    assert "U0lHTkFUVVJF" not in sent and "cache_control" not in sent and "budget_tokens" not in sent
    assert [(d, s) for d, _, s in _cloud_calls(gw)] == [("claude", 502), ("gpt", 200)]
    dropped = [r.getMessage() for r in caplog.records if "does not take" in r.getMessage()]
    assert dropped and "thinking_blocks" in dropped[0] and "cache_control" in dropped[0]
