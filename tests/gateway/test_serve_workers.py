"""`ecgw serve --workers 2`: a real multi-process server; a session's sticky policy holds on every worker."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from benchmarks.contenders import free_port
from tests.processes import serve, wait_healthy


def test_two_workers_share_session_state(tmp_path, edge, cloud):
    port = free_port()
    config = {"server": {"port": port, "workers": 2},
              "edge": {"base_url": edge.url + "/v1", "model": "edge-model"},
              "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1", "api_key_env": None},
              "sessions": {"sqlite_path": str(tmp_path / "sessions.sqlite3")},
              "database_url": f"sqlite:///{tmp_path / 'm.sqlite3'}"}
    proc = serve(config, tmp_path / "c.yaml")
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, proc)
        # First step picks cloud-only explicitly; every later step (on fresh connections, spread over both
        # workers) must keep it without naming it.
        body = {"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "x"}]}
        assert httpx.post(base + "/v1/chat/completions", json=body, headers={"X-Session-Id": "w"}).status_code == 200
        for _ in range(12):
            r = httpx.post(base + "/v1/chat/completions", headers={"X-Session-Id": "w"},
                           json={"messages": [{"role": "user", "content": "x"}]})
            assert r.headers["x-ecgw-policy"] == "cloud-only"
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        assert len(children) >= 2
        # /metrics counts every worker's requests, whichever worker answers the scrape (multiprocess mode).
        for _ in range(4):
            metrics = httpx.get(base + "/metrics").text
            assert 'ecgw_requests_total{policy="cloud-only",route="cloud",status="200"} 13.0' in metrics
        # Metering counts a call when its writer thread takes the record: wait for both workers' writers.
        calls = 'ecgw_upstream_calls_total{policy="cloud-only",purpose="step",route="cloud",status="200"} 13.0'
        deadline = time.monotonic() + 60
        while calls not in (metrics := httpx.get(base + "/metrics").text) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert calls in metrics
    finally:
        proc.terminate()
        proc.wait(timeout=30)
