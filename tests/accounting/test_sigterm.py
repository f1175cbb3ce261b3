"""SIGTERM to a real `ecgw serve` under load: every request that completed has its usage record."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml

from accounting.store import UsageStore
from tests.fakes.model_server import ModelServer, Reply
from tests.processes import wait_healthy

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client_loop(base: str, n: int, done: list[str], stop: threading.Event) -> None:
    i = 0
    with httpx.Client(timeout=30) as client:
        while not stop.is_set():
            i += 1
            body = {"messages": [{"role": "user", "content": f"client {n} question {i}"}], "stream": i % 2 == 0}
            try:
                response = client.post(base + "/v1/chat/completions", json=body, headers={"x-session-id": f"c{n}"})
                text = response.read().decode()
            except httpx.HTTPError:
                if stop.wait(0.05):
                    return
                continue
            complete = response.status_code == 200 and (not body["stream"] or "data: [DONE]" in text)
            if complete:
                done.append(response.headers["x-ecgw-request-id"])


@pytest.mark.parametrize(("workers", "backend"), [
    (1, "sqlite"), (2, "sqlite"), pytest.param(2, "postgres", marks=pytest.mark.postgres)])
def test_sigterm_under_load_loses_no_record(tmp_path: Path, edge: ModelServer, workers: int, backend: str,
                                            request: pytest.FixtureRequest) -> None:
    edge.script(*[Reply(content="a short answer from the edge", delay_s=0.02, chunk_delay_s=0.005)
                  for _ in range(5_000)])
    port = _free_port()
    database_url = (f"sqlite:///{tmp_path / 'usage.sqlite3'}" if backend == "sqlite"
                    else str(request.getfixturevalue("postgres_url")))
    config = {
        "server": {"port": port, "workers": workers},
        "edge": {"base_url": edge.url + "/v1", "model": "edge-model"},  # type: ignore[attr-defined]
        "cloud": {"model": "openai/gpt-test", "api_base": "http://127.0.0.1:9/v1", "api_key_env": None},
        "sessions": {"sqlite_path": str(tmp_path / "sessions.sqlite3")},
        "database_url": database_url,
        "accounting": {"spill_path": str(tmp_path / "spill.jsonl"), "edge_models": {"edge-model": {"params": 1e9}},
                       "writer": {"flush_interval_s": 5}},  # most records are still buffered at SIGTERM
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", str(tmp_path / "c.yaml")],
                            cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    stop = threading.Event()
    done: list[str] = []
    try:
        wait_healthy(base, proc)
        threads = [threading.Thread(target=_client_loop, args=(base, n, done, stop)) for n in range(8)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(done) < 20:  # SIGTERM once requests are flowing, however slow the machine is today
            assert time.monotonic() < deadline and proc.poll() is None, f"only {len(done)} requests in 60 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        stop.set()  # requests in flight go on; no new ones (a supervisor's backlog would hold them)
        try:
            output, _ = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
            pytest.fail("ecgw serve did not stop within 90 s of SIGTERM:\n" + output.decode(errors="replace")[-3000:])
        for t in threads:
            t.join(timeout=30)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # uvicorn re-raises the signal after its graceful shutdown, so -SIGTERM is a clean exit too.
    assert proc.returncode in (0, -signal.SIGTERM), output.decode(errors="replace")[-3000:]
    store = UsageStore.from_url(database_url)
    recorded = {r["request_id"] for r in store.rows()}
    store.dispose()
    missing = set(done) - recorded
    assert not missing, f"{len(missing)} of {len(done)} completed requests have no usage record"
    assert not (tmp_path / "spill.jsonl").exists()
