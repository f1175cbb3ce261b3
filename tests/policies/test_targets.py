"""Routing that aims at a target: the threshold is set online from the policy's own signal, shared through the
session store (two gateways on one SQLite store stand for two replicas), and a threshold set beside a target, or a
forced arm marked ``forceable: false``, is refused."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import httpx
import yaml

from gateway.cli import main
from gateway.sessions import SQLiteSessionStore
from router.targets import MIN_SIGNALS, TargetTracker


def test_two_replicas_on_one_store_hold_the_target_through_a_drift(tmp_path: Path) -> None:
    async def run() -> list[bool]:
        stores = [SQLiteSessionStore(str(tmp_path / "s.sqlite3")) for _ in range(2)]
        trackers = [TargetTracker(store) for store in stores]
        draws = random.Random(3)
        decided = []
        for i in range(600):  # the signal's distribution moves up half-way through
            signal = draws.lognormvariate(0.0 if i < 300 else 0.5, 0.5)
            aimed = await trackers[i % 2].decide("step-routing", "exp:a", signal, 0.25)
            decided.append(aimed.cloud)
        report = await trackers[0].report("step-routing", "exp:a")
        assert report is not None and report["steps"] == 600  # both replicas' decisions in one state
        for store in stores:
            await store.aclose()
        return decided

    decided = asyncio.run(run())
    assert not any(decided[:MIN_SIGNALS])  # warming up: nothing to the cloud
    for start in range(100, 600, 100):  # every window of 100 after warm-up, before and after the drift
        assert abs(sum(decided[start:start + 100]) - 25) <= 3, (start, sum(decided[start:start + 100]))


def test_a_threshold_and_a_target_both_set_stop_serve_naming_the_knob(tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"edge": {"launch": "never"}, "policy": {"knobs": {
        "step-routing": {"tau": 1.2, "target_cloud_rate": 0.25}}}}))
    assert main(["serve", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "policy.knobs.step-routing" in err and "tau" in err and "target_cloud_rate" in err
    config.write_text(yaml.safe_dump({"edge": {"launch": "never"}, "policy": {"knobs": {
        "task-routing": {"scorer": "rules", "threshold": 0.4, "target_cloud_rate": 0.25}}}}))
    assert main(["serve", "--config", str(config)]) == 2
    assert "threshold and target_cloud_rate" in capsys.readouterr().err


def test_an_arm_that_is_not_forceable_cannot_be_chosen_by_header(start_gateway) -> None:
    gw = start_gateway(experiments={"definitions": {"exp": {"arms": {
        "costly": {"policy": "cloud-only", "weight": 0, "forceable": False},
        "local": {"policy": "edge-only", "weight": 1}}}}})
    refused = httpx.post(gw.base_url + "/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]},
                         headers={"x-ecgw-arm": "exp:costly"}, timeout=30)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "arm_not_forceable"
    assert gw.guard.calls == 0
    allowed = httpx.post(gw.base_url + "/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]},
                         headers={"x-ecgw-arm": "exp:local"}, timeout=30)
    assert allowed.status_code == 200 and allowed.headers["x-ecgw-arm"] == "exp:local"
