"""The one invariant: nothing reaches the cloud except through CloudChannel, which always protects first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from privacy import PassThroughProtector, Protection
from privacy.classes.names import ANYONE, Who
from privacy.errors import PrivacyUnavailable
from router.channels import CloudChannel
from router.context import CallContext, RouteTracker
from router.learning.model import RouterModel
from tests.door import DoorViolation, GuardedCloud

CANARY = "CANARY-4111-1111"


class CanaryProtector(PassThroughProtector):
    """Replaces the canary and counts every body it protected."""

    def __init__(self) -> None:
        self.protected: list[dict[str, Any]] = []

    async def protect(self, body: dict[str, Any], *, session_id: str, request_id: str,
                      experiment: str | None = None, tiers: Sequence[str] = ("standard",),
                      who: Who = ANYONE) -> Protection:
        import json

        scrubbed = json.loads(json.dumps(body).replace(CANARY, "[SECRET_001]"))
        self.protected.append(scrubbed)
        return await PassThroughProtector().protect(scrubbed, session_id=session_id, request_id=request_id,
                                                    tiers=tiers, who=who)


class BrokenProtector(PassThroughProtector):
    async def protect(self, body: dict[str, Any], *, session_id: str, request_id: str,
                      experiment: str | None = None, tiers: Sequence[str] = ("standard",),
                      who: Who = ANYONE) -> Protection:
        raise PrivacyUnavailable("detector 'secrets' crashed")


def test_the_cloud_upstream_is_reachable_only_through_a_channel(gateway):
    """Nothing the services hand out is the raw cloud upstream: code gets channels, and a cloud channel protects."""
    services = gateway.services
    assert not hasattr(services, "cloud") and not hasattr(services, "edge")
    public = {name: getattr(services.doors, name) for name in dir(services.doors) if not name.startswith("_")}
    assert not any(isinstance(value, GuardedCloud) for value in public.values())
    route = RouteTracker()
    channel = services.doors.cloud(CallContext(request_id="r", session_id="s", policy="cloud-only"), route)
    assert isinstance(channel, CloudChannel)


async def test_the_guard_catches_a_call_that_skips_the_channel(gateway):
    with pytest.raises(DoorViolation):
        await gateway.guard.complete({"messages": [{"role": "user", "content": "raw"}]})


@pytest.mark.parametrize("stream", [False, True])
def test_every_policy_sends_only_protected_bodies(start_gateway, cloud, stream, tmp_path):
    protector = CanaryProtector()
    model = tmp_path / "router.json"  # learned-routing serves only with a fitted model; this one always escalates
    RouterModel(("step_index",), (0.0,), (1.0,), (0.0,), 10.0, 0.0).write(model)
    gw = start_gateway(protector=protector,
                       policy={"knobs": {"learned-routing": {"model": str(model), "threshold": 0.5}}})
    for name in gw.services.policies.names:
        for turn in range(2):
            response = httpx.post(gw.base_url + "/chat/completions", headers={"X-Session-Id": f"{name}-{stream}"},
                                  json={"model": f"ecgw/{name}", "stream": stream, "messages": [
                                      {"role": "system", "content": f"user card {CANARY}"},
                                      {"role": "user", "content": f"step {turn}: pay with {CANARY}"}]},
                                  timeout=30)
            assert response.status_code == 200, (name, response.text)
    assert cloud.requests, "no policy reached the cloud; the test proves nothing"
    assert all(CANARY not in str(body) for body in cloud.requests)
    assert len(cloud.requests) == len(protector.protected) == gw.guard.calls


@pytest.mark.parametrize("stream", [False, True])
def test_protection_failure_means_no_cloud_call(start_gateway, cloud, stream):
    gw = start_gateway(protector=BrokenProtector())
    response = httpx.post(gw.base_url + "/chat/completions", json={
        "model": "ecgw/cloud-only", "stream": stream, "messages": [{"role": "user", "content": "x"}]})
    assert response.status_code == 503
    assert response.json()["error"]["type"] == "privacy_unavailable"
    assert "secrets" in response.json()["error"]["message"]
    assert cloud.requests == []
