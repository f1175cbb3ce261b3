"""Routing that aims at a target: the threshold is set online from the policy's own signal, shared through the
session store (two gateways on one SQLite store stand for two replicas), and a threshold set beside a target, or a
forced arm marked ``forceable: false``, is refused."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import httpx
import yaml

from gateway.cli.main import main
from gateway.state.sessions import SQLiteSessionStore
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


def test_a_cost_target_holds_the_cost_per_session_when_cloud_steps_start_costing_twice_as_much(tmp_path: Path) -> None:
    """``target_cost_per_session``: two replicas on one store, sessions of 6 steps, a cloud step's cost doubling
    half-way: every window of 25 sessions after warm-up spends within 12 % of the target, and the share of steps
    sent to the cloud halves to get there (the starting share alone would spend half the target)."""
    target, steps = 0.06, 6

    async def run() -> tuple[list[float], list[float], dict[str, Any] | None]:
        stores = [SQLiteSessionStore(str(tmp_path / "s.sqlite3")) for _ in range(2)]
        trackers = [TargetTracker(store) for store in stores]
        draws = random.Random(5)
        costs, shares = [], []
        for session in range(150):
            spent, clouds = 0.0, 0
            for i in range(steps):
                tracker = trackers[(session + i) % 2]
                aimed = await tracker.decide_cost("step-routing", None, draws.lognormvariate(0.0, 0.5), target,
                                                  new_session=i == 0)
                if aimed.cloud:
                    usd = draws.uniform(0.01, 0.03) * (1 if session < 75 else 2)
                    await trackers[i % 2].spent("step-routing", None, usd)
                    spent, clouds = spent + usd, clouds + 1
            costs.append(spent)
            shares.append(clouds / steps)
        report = await trackers[1].report("step-routing", None)
        for store in stores:
            await store.aclose()
        return costs, shares, report

    costs, shares, report = asyncio.run(run())
    for start in range(25, 150, 25):
        mean = sum(costs[start:start + 25]) / 25
        assert abs(mean - target) <= 0.12 * target, (start, mean)
    before, after = sum(shares[25:75]) / 50, sum(shares[100:150]) / 50
    assert 0.4 < before < 0.6 and 0.2 < after < 0.3, (before, after)
    assert report is not None and report["sessions"] == 150 and report["target_cost_per_session"] == target
    assert abs(report["achieved_cost_per_session"] - sum(costs) / 150) < 1e-9


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
    config.write_text(yaml.safe_dump({"edge": {"launch": "never"}, "policy": {"knobs": {
        "step-routing": {"target_cloud_rate": 0.25, "target_cost_per_session": 0.5}}}}))
    assert main(["serve", "--config", str(config)]) == 2
    assert "target_cloud_rate and target_cost_per_session (two targets)" in capsys.readouterr().err
    config.write_text(yaml.safe_dump({"edge": {"launch": "never"}, "cloud": {"model": "openai/unpriced-test"},
                                      "accounting": {"litellm_fallback": False}, "policy": {"knobs": {
        "task-routing": {"scorer": "rules", "target_cost_per_session": 0.5}}}}))
    assert main(["serve", "--config", str(config)]) == 2  # a cost nothing can price could never be aimed at
    assert "policy.knobs.task-routing.target_cost_per_session" in capsys.readouterr().err


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
