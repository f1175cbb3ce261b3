"""A cost target on a running gateway (real HTTP, the cloud a double speaking OpenAI's wire format): every cloud call
of a targeted session — the deciding step and the sticky ones after it — reaches the tracker at metering's price,
and achieved against target shows in ``GET /v1/budget`` and on ``/metrics``."""

from __future__ import annotations

from typing import Any

import httpx

# USD per 1M tokens; a cache read at the input price, so a call's cost is its usage at two prices
PRICES = {"openai/gpt-test": {"input": 1000.0, "cache_read": 1000.0, "output": 2000.0}}
TARGET = 0.5
SESSIONS = 24  # past the tracker's warm-up (20 signals), so some sessions go to the cloud


def test_a_cost_target_counts_every_cloud_call_of_its_sessions_and_reports_achieved_against_target(
        start_gateway: Any, cloud: Any) -> None:
    gw = start_gateway(
        accounting={"prices": PRICES},
        policy={"default": "task-routing", "knobs": {"task-routing": {
            "scorer": "rules", "rules": {"long_chars": 400}, "target_cost_per_session": TARGET}}},
        privacy={"layers": {"ner": False}})
    for k in range(SESSIONS):
        for step in range(2):  # the second step follows the session's first decision
            answer = httpx.post(gw.base_url + "/chat/completions", timeout=30,
                                headers={"x-session-id": f"task-{k}"},
                                json={"messages": [{"role": "user", "content": "plan " * (3 * k + 1) + f"step {step}"}]})
            assert answer.status_code == 200, answer.text
    clouds = [s for s in gw.meter.steps if s.route == "cloud"]
    assert clouds and any(s.reason == "sticky" for s in clouds)  # some sessions went to the cloud, for two steps
    assert all(s.signal.get("target_cost_per_session") == TARGET for s in gw.meter.steps)
    spent = sum(u["prompt_tokens"] * 1000.0 + u["completion_tokens"] * 2000.0 for u in cloud.usages) / 1e6

    budget = httpx.get(gw.base_url + "/budget", timeout=10)
    assert budget.status_code == 200, budget.text
    [row] = budget.json()["targets"]
    assert row["policy"] == "task-routing" and row["arm"] is None and row["target_cost_per_session"] == TARGET
    assert row["sessions"] == SESSIONS and row["steps"] == SESSIONS  # one decision per session
    assert abs(row["achieved_cost_per_session"] - spent / SESSIONS) < 1e-9
    assert row["achieved_cloud_rate"] == len({s.session_id for s in clouds}) / SESSIONS

    metrics = httpx.get(gw.url + "/metrics", timeout=10).text
    assert f'ecgw_target_cost_per_session_usd{{arm="-",policy="task-routing"}} {TARGET}' in metrics
    assert 'ecgw_target_achieved_cost_per_session_usd{arm="-",policy="task-routing"}' in metrics
