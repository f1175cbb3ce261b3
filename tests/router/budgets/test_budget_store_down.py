"""The session store that holds the budget counters goes down mid-run (a real Redis behind a forwarder whose
connections are cut). The session's own state is then unreadable too, so a step is refused whole — 503 in its
surface's own envelope naming the store, nothing sent to the cloud — and ``GET /v1/budget`` answers 503
``budget_unavailable`` naming it; what was metered before is kept. (Counters that cannot be seeded while the store is
up keep the step on the edge instead: ``tests/router/budgets/test_budgets.py``.)"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from accounting.factory import build_meter
from gateway.app import create_app
from tests.conftest import settings_for
from tests.cuttable import Cuttable
from tests.door import guarded_cloud, guarded_services
from tests.fakes.threaded import ThreadedServer
from tests.real_parts import redis_url

PRICES = {"openai/gpt-test": {"input": 1000.0, "output": 2000.0}}


def _chat(base: str, key: str, session: str) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", timeout=30,
                      headers={"authorization": f"Bearer {key}", "x-session-id": session},
                      json={"model": "ecgw/cloud-only", "max_tokens": 5,
                            "messages": [{"role": "user", "content": "write the summary"}]})


def test_budgets_whose_store_goes_down_keep_steps_off_the_cloud_and_lose_no_metering(tmp_path: Path, edge: Any,
                                                                                    cloud: Any) -> None:
    import redis

    real = urlsplit(redis_url())
    own = redis.Redis.from_url(redis_url().rsplit("/", 1)[0] + "/12")  # this test's own database
    try:
        own.flushdb()  # what an earlier run sealed with its own secrets key
    finally:
        own.close()
    forwarder = Cuttable(real.hostname or "127.0.0.1", real.port or 6379).start()
    database = tmp_path / "metering.sqlite3"
    settings = settings_for(
        edge.url, cloud.url, database_url=f"sqlite:///{database}",  # type: ignore[attr-defined]
        sessions={"store": "redis", "redis_url": f"redis://127.0.0.1:{forwarder.port}/12", "redis_timeout_s": 1},
        secrets={"key_file": str(tmp_path / "secrets.key")},
        server={"api_keys": ["spender", "ratey"]}, accounting={"prices": PRICES},
        limits={"keys": {"spender": {"cloud_usd": {"amount": 10.0, "window": "30d"}}, "ratey": {"rpm": 100}}},
        privacy={"layers": {"ner": False}})
    services = guarded_services(settings, meter=build_meter(settings.accounting, database_url=settings.database_url),
                                cloud=guarded_cloud(settings))
    with ThreadedServer(create_app(settings, services=services)) as server:
        first = _chat(server.url, "spender", "s-up")
        assert first.status_code == 200 and first.headers["x-ecgw-route"] == "cloud", first.text
        assert len(cloud.requests) == 1
        forwarder.cut()

        # The session's own state (its policy, its vault) is unreadable too: the step is refused whole, in the
        # surface's own envelope, and nothing reaches the cloud
        refused = _chat(server.url, "spender", "s-down")
        assert refused.status_code == 503 and refused.headers["x-ecgw-request-id"], refused.text
        assert refused.json()["error"]["code"] == "session_store_unavailable"
        assert f"redis 127.0.0.1:{forwarder.port}/12" in refused.json()["error"]["message"]
        native = httpx.post(server.url + "/v1/messages", timeout=30, headers={"x-api-key": "ratey"},
                            json={"model": "ecgw/cloud-only", "max_tokens": 5,
                                  "messages": [{"role": "user", "content": "hi"}]})
        assert native.status_code == 503 and native.json()["type"] == "error", native.text  # Anthropic's envelope
        assert "session store" in native.json()["error"]["message"]

        budget = httpx.get(server.url + "/v1/budget", headers={"authorization": "Bearer spender"}, timeout=10)
        assert budget.status_code == 503 and budget.json()["error"]["code"] == "budget_unavailable"
        assert f"redis 127.0.0.1:{forwarder.port}/12" in budget.json()["error"]["message"]
        assert len(cloud.requests) == 1
    with sqlite3.connect(database) as db:  # the server has stopped: its meter flushed every record
        calls = db.execute("SELECT side, request_id FROM ecgw_usage_records").fetchall()
        steps = dict(db.execute("SELECT request_id, status FROM ecgw_step_records").fetchall())
    assert calls == [("cloud", first.headers["x-ecgw-request-id"])]  # the call made before; none after
    assert steps[first.headers["x-ecgw-request-id"]] == 200
