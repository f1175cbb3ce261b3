"""Several `ecgw serve` processes (stand-ins for machines) sharing one session store and one metering database."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from benchmarks.contenders import free_port
from tests.processes import wait_healthy
from tests.real_parts import redis_url

ROOT = Path(__file__).resolve().parents[1]


def replica_config(tmp: Path, edge_url: str, cloud_url: str, *, sessions: dict[str, Any], database_url: str,
                   **extra: Any) -> Path:
    """One config file every replica reads (each is given its own port on the command line)."""
    config = {"edge": {"base_url": edge_url + "/v1", "model": "edge-model"},
              "cloud": {"model": "openai/gpt-test", "api_base": cloud_url + "/v1", "api_key_env": None},
              "sessions": sessions,
              "database_url": database_url,
              # patterns find the e-mails these tests use; NER would only slow every worker's start
              "privacy": {"layers": {"ner": False}},
              # one secrets key for every replica (machines would share it through secrets.key_env)
              "secrets": {"key_file": str(tmp / "ecgw.key")},
              **extra}
    path = tmp / f"replicas-{free_port()}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def replicas(config: Path, *, count: int, workers: int) -> Iterator[list[str]]:
    """``count`` gateways, each ``ecgw serve --workers N`` on its own port; their base URLs. Stopped (SIGTERM,
    so each flushes its metering buffer) on exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECGW_", "PROMETHEUS_"))}
    started: list[subprocess.Popen[bytes]] = []
    bases: list[str] = []
    try:
        for _ in range(count):
            port = free_port()
            started.append(subprocess.Popen(
                [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config), "--port", str(port),
                 "--workers", str(workers)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
            bases.append(f"http://127.0.0.1:{port}")
        for base, process in zip(bases, started, strict=True):
            wait_healthy(base, process, timeout_s=300)  # a loaded CI machine starts workers slowly
        yield bases
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(timeout=60)


def fresh_redis() -> str:
    """The test Redis, emptied: a store sealed with another test's key would (rightly) refuse this test's key."""
    import redis

    url = redis_url()
    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()
    return url
