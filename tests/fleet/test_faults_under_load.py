"""Faults under load (issue 25 §4, the correctness part; the figures are `make bench`'s): 32 sessions at once
through one gateway with two edge replicas and two cloud targets, while one edge replica goes away and the primary
cloud target answers 429, then 500, then hangs. Every failure happened before the first byte, so no client sees an
error; and every request's metering is in the database — each request's settlement mark counts exactly the records
stored for it (the failed attempts included), none missing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import yaml

from accounting.store import UsageStore
from gateway.app import create_app
from gateway.config.settings import load_settings
from tests.door import GuardedCloud, guarded_services, guarded_targets
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.fleet.conftest import deployment

SESSIONS, STEPS = 32, 3


async def _load(url: str, phase: int) -> list[httpx.Response]:
    async def session(n: int) -> list[httpx.Response]:
        model = "ecgw/cloud-only" if n % 2 else "ecgw/edge-only"
        out = []
        async with httpx.AsyncClient(timeout=60) as client:
            for step in range(STEPS):
                out.append(await client.post(url + "/v1/chat/completions", headers={"X-Session-Id": f"s{n}"},
                                             json={"model": model, "messages": [
                                                 {"role": "user", "content": f"phase {phase} step {step}"}]}))
        return out

    return [r for rs in await asyncio.gather(*(session(n) for n in range(SESSIONS))) for r in rs]


def test_an_edge_replica_lost_and_a_failing_cloud_cost_no_client_error_and_no_metering(tmp_path: Path, replicas):
    survivor, primary, backup = replicas["a"], replicas["b"], replicas["c"]
    victim = ModelServer("edge-victim", model="edge-model")
    victim_server = ThreadedServer(victim.app).start()
    database = tmp_path / "usage.sqlite3"
    config: dict[str, Any] = {
        "edge": {"deployments": [deployment("victim", victim_server.url), deployment("a", survivor.url)],
                 "health_interval_s": 3600, "eject_after": 2, "connect_timeout_s": 2, "read_timeout_s": 10},
        "cloud": {"targets": {
            "primary": {"model": "openai/gpt-primary", "api_base": primary.url + "/v1", "timeout_s": 1},  # type: ignore[attr-defined]
            "backup": {"model": "openai/gpt-backup", "api_base": backup.url + "/v1", "timeout_s": 20}},  # type: ignore[attr-defined]
            "default_target": "primary", "fallbacks": {"primary": ["backup"]}, "cool_after": 100},
        "privacy": {"layers": {"ner": False}, "audit_spill_path": None},
        "accounting": {"spill_path": None},
        "sessions": {"store": "sqlite", "sqlite_path": str(tmp_path / "sessions.sqlite3")},
        "secrets": {"key_file": str(tmp_path / "ecgw.key")},
        "database_url": f"sqlite:///{database}",
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    settings = load_settings(path)
    guards: list[GuardedCloud] = []
    gateway = ThreadedServer(create_app(settings, services=guarded_services(
        settings, cloud_transport=guarded_targets(guards)))).start()
    responses: list[httpx.Response] = []
    try:
        responses += asyncio.run(_load(gateway.url, 0))  # both replicas serve their sessions
        assert victim.requests and survivor.requests
        victim_server.stop()  # one edge replica goes away; its sessions' next steps must move
        # the primary cloud fails every way in turn: rate limited, broken, hanging past its timeout
        primary.script(*[Reply(status=429, error_message="rate limited")] * 6,
                       *[Reply(status=500, error_message="internal")] * 6, *[Reply("late", delay_s=3)] * 4)
        responses += asyncio.run(_load(gateway.url, 1))
    finally:
        gateway.stop()  # the gateway's shutdown flushes the meter
    assert [r.status_code for r in responses if r.status_code != 200] == []  # no client saw any fault
    assert len(responses) == 2 * SESSIONS * STEPS
    assert len(primary.requests) >= 16 and backup.requests  # the faults happened, and the backup answered
    store = UsageStore.from_url(f"sqlite:///{database}")
    try:
        settled = store.settlement([r.headers["x-ecgw-request-id"] for r in responses])
    finally:
        store.dispose()
    unsettled = {rid: counts for rid, counts in settled.items() if counts[0] is None or counts[0] != counts[1]}
    assert len(settled) == len(responses) and unsettled == {}  # every request's records, the failed attempts too
    assert sum(stored for _, stored in settled.values()) > len(responses)  # failed attempts were metered as well
