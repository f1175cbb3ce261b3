"""Budgets and rate limits across machines: two `ecgw serve` replicas (two workers each) sharing one Redis and one
metering database; every request opens a new connection, so steps spread over every worker of both replicas."""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.real_parts import redis_url
from tests.replicas import replica_config, replicas

PRICE = {"input": 0.0, "output": 10_000.0}  # USD per 1M tokens: a 5-token answer costs $0.05
STEP_USD = 5 * 10_000.0 / 1e6
BUDGET_USD = 0.5


def _own_redis() -> str:
    """A database of the test Redis of this test's own, emptied (other tests seal db 0 with their own keys)."""
    import redis

    url = redis_url().rsplit("/", 1)[0] + "/11"
    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()
    return url


def _chat(base: str, key: str, session: str, text: str) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", timeout=60,
                      json={"model": "ecgw/cloud-only", "max_tokens": 5,
                            "messages": [{"role": "user", "content": text}]},
                      headers={"authorization": f"Bearer {key}", "x-session-id": session})


def _cloud_costs(database: Path) -> list[float]:
    with sqlite3.connect(database) as db:
        return [row[0] for row in db.execute("SELECT cost_usd FROM ecgw_usage_records WHERE side = 'cloud'")]


def test_one_key_on_two_replicas_keeps_its_budget_and_its_rate_limit(tmp_path: Path, edge: Any, cloud: Any) -> None:
    database = tmp_path / "metering.sqlite3"
    config = replica_config(
        tmp_path, edge.url, cloud.url, sessions={"store": "redis", "redis_url": _own_redis()},
        database_url=f"sqlite:///{database}",
        server={"api_keys": ["team", "ratey"]},
        accounting={"prices": {"openai/gpt-test": PRICE}},
        limits={"keys": {"team": {"cloud_usd": {"amount": BUDGET_USD, "window": "30d"}},
                         "ratey": {"rpm": 10}}})
    with replicas(config, count=2, workers=2) as bases:
        # 32 sessions of one key at once, three steps each, alternating replicas
        def session(k: int) -> list[httpx.Response]:
            return [_chat(bases[(k + i) % 2], "team", f"agent-{k}", f"Session {k} step {i}: write the report now")
                    for i in range(3)]

        with ThreadPoolExecutor(32) as pool:
            burst = [answer for answers in pool.map(session, range(32)) for answer in answers]
        assert all(a.status_code == 200 for a in burst), [a.text for a in burst if a.status_code != 200]
        on_cloud = [a for a in burst if a.headers["x-ecgw-route"] == "cloud"]
        kept = [a for a in burst if a.headers.get("x-ecgw-fallback") == "budget"]
        assert on_cloud and kept and len(on_cloud) + len(kept) == len(burst)
        assert all(a.headers["x-ecgw-route"] == "edge" for a in kept)
        # once spent, every later step of the key is answered on the edge, on either replica
        later = [_chat(bases[i % 2], "team", f"late-{i}", f"Later step {i} of the report") for i in range(6)]
        assert [(a.status_code, a.headers.get("x-ecgw-route"), a.headers.get("x-ecgw-fallback")) for a in later] == [
            (200, "edge", "budget")] * 6, [a.text for a in later if a.status_code != 200]
        left = httpx.get(bases[1] + "/v1/budget", headers={"authorization": "Bearer team"}, timeout=10).json()
        [row] = left["limits"]
        assert row["kind"] == "cloud_usd" and row["spent"] <= BUDGET_USD + 1e-9 and row["left"] < STEP_USD

        # requests per minute: 24 at once over both replicas against rpm 10 (in one minute: start well inside one)
        if time.time() % 60 > 40:
            time.sleep(61 - time.time() % 60)
        with ThreadPoolExecutor(24) as pool:
            rated = list(pool.map(lambda i: httpx.post(
                bases[i % 2] + "/v1/chat/completions", timeout=60, json={"messages": [{"role": "user",
                                                                                       "content": f"r{i}"}]},
                headers={"authorization": "Bearer ratey"}), range(24)))
        statuses = sorted(a.status_code for a in rated)
        assert 9 <= statuses.count(200) <= 11 and statuses.count(200) + statuses.count(429) == 24, statuses
        refused = next(a for a in rated if a.status_code == 429)
        assert refused.headers["x-ratelimit-limit-requests"] == "10" and int(refused.headers["retry-after"]) >= 1
    # what metering recorded (both replicas flushed on stop): never more than the budget and one step
    costs = _cloud_costs(database)
    assert len(costs) == len(on_cloud)
    assert sum(costs) <= BUDGET_USD + max(costs) + 1e-9
