"""A Redis restart between two steps (no request while it was down, as a quick restart or a failover): the next step
is served at once, its vault intact, with no operator — a pooled connection the old server closed is not a refusal.
(A step while Redis is down answers 503 and sends nothing: tests/gateway/test_replicas.py.)"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import httpx

from benchmarks.contenders import free_port
from tests.fakes.model_server import ModelServer
from tests.real_parts import redis_url
from tests.replicas import ROOT, replica_config, replicas

PLACEHOLDER = re.compile(r"\[EMAIL_ADDRESS_\d+\]")


def _redis(*args: str) -> str:
    return subprocess.run([str(ROOT / "scripts" / "redis.sh"), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _chat(base: str, messages: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", json={"model": "ecgw/cloud-only", "messages": messages},
                      headers={"X-Session-Id": "restart"}, timeout=60)


def test_the_first_steps_after_a_redis_restart_are_served_with_the_vault_intact(
        tmp_path: Path, edge: ModelServer, cloud: ModelServer) -> None:
    redis_url()  # Redis is installed and the suite runs with it (its own server is started below)
    port, where = free_port(), tmp_path / "redis"
    url = _redis("start", str(port), str(where), "--appendonly", "yes")
    try:
        config = replica_config(tmp_path, edge.url, cloud.url,  # type: ignore[attr-defined]
                                sessions={"store": "redis", "redis_url": url},
                                database_url=f"sqlite:///{tmp_path / 'metering.sqlite3'}")
        with replicas(config, count=1, workers=1) as (base,):
            mail = [{"role": "user", "content": "Write to carol@example.com"}]
            assert _chat(base, mail).status_code == 200
            placeholder = PLACEHOLDER.findall(str(cloud.requests[-1]["messages"][-1]["content"]))
            subprocess.run(["redis-cli", "-p", str(port), "shutdown"], check=True, capture_output=True)
            _redis("start", str(port), str(where), "--appendonly", "yes")
            answers = [_chat(base, [*mail, {"role": "user", "content": f"and erin{i}@example.com"}]) for i in range(3)]
            assert [a.status_code for a in answers] == [200, 200, 200], answers[0].text
            assert PLACEHOLDER.findall(str(cloud.requests[-1]["messages"][0]["content"])) == placeholder
            assert all("@example.com" not in str(body["messages"]) for body in cloud.requests)  # nothing raw left
    finally:
        _redis("stop", str(where))
