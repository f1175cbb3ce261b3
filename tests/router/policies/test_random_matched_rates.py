"""random-matched with `match`: p comes from the other arm's cloud-call rate, measured by the metering store."""

from __future__ import annotations

import time

import httpx

from gateway.app import create_app
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.threaded import ThreadedServer


def _post(url: str, session: str, arm: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", headers={"X-Session-Id": session, "X-ECGW-Arm": arm},
                      json={"messages": [{"role": "user", "content": "next step"}]}, timeout=30)


def test_control_arm_takes_p_from_the_matched_arms_measured_rate(tmp_path, edge, cloud):
    experiment = {"active": "ab", "definitions": {"ab": {"arms": {
        "router": {"policy": "cloud-only", "weight": 1},
        "control": {"policy": "random-matched", "weight": 1,
                    "knobs": {"p": 0.0, "match": {"experiment": "ab", "arm": "router"}}}}}}}
    settings = settings_for(edge.url, cloud.url, experiments=experiment,
                            database_url=f"sqlite:///{tmp_path / 'usage.sqlite3'}",
                            accounting={"writer": {"flush_interval_s": 0.05}})
    services = guarded_services(settings)
    with ThreadedServer(create_app(settings, services=services)) as server:
        for i in range(4):
            assert _post(server.url, f"router-{i}", "router").status_code == 200
        deadline = time.monotonic() + 10
        while len(services.meter.store.rows(experiment="ab", arm="router")) < 4:  # type: ignore[attr-defined]
            assert time.monotonic() < deadline, "router arm's calls were not metered"
            time.sleep(0.05)
        cloud_before = len(cloud.requests)
        for i in range(6):
            assert _post(server.url, f"control-{i}", "control").headers["x-ecgw-route"] == "cloud"
        # p fell back to 0.0 would have kept every step on the edge; the measured rate of 1.0 sends all to the cloud
        assert len(cloud.requests) - cloud_before == 6
