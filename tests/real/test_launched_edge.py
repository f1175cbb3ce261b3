"""`ecgw serve` with no edge running launches the real vLLM (scripts/vllm.sh's cached install, the embedded
SmolLM2-135M-Instruct), answers an edge-only step from it, restarts it when it dies, and stops it on exit — with
two workers and one launcher."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from benchmarks.contenders import free_port
from tests.processes import wait_healthy
from tests.real.helpers import vllm_url

pytestmark = pytest.mark.real_vllm

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_TIMEOUT_S = float(os.environ.get("ECGW_TEST_VLLM_READY_TIMEOUT_S", "600")) + 120


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes], timeout_s: float) -> re.Match[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found
        assert proc.poll() is None, f"ecgw serve exited ({proc.returncode}):\n{log.read_text()[-3000:]}"
        time.sleep(1)
    raise AssertionError(f"no {pattern!r} in the output after {timeout_s:g} s:\n{log.read_text()[-3000:]}")


def _ask(base: str) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", timeout=300, json={
        "model": "ecgw/edge-only", "max_tokens": 16,
        "messages": [{"role": "user", "content": "Say hello."}]})


def test_serve_launches_an_edge_answers_from_it_restarts_it_and_stops_it(tmp_path: Path) -> None:
    vllm_url()  # the suite's own vLLM is up: scripts/vllm.sh's install into the cache is complete
    port = free_port()
    nobody = f"http://127.0.0.1:{free_port()}/v1"
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({
        "server": {"port": port, "workers": 2},
        # edge.launch: auto, the default; launch_args reach vLLM's command line (after the defaults, so they win)
        "edge": {"base_url": nobody, "read_timeout_s": 300, "launch_args": ["--max-model-len", "2048"]},
        "cloud": {"api_key_env": None},
        "sessions": {"sqlite_path": str(tmp_path / "sessions.sqlite3")},
        "database_url": f"sqlite:///{tmp_path / 'm.sqlite3'}"}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_") or k == "ECGW_CACHE"}
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)], cwd=ROOT,
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    pids: list[int] = []
    try:
        first = int(_wait_for(log, r"starting vLLM on 127\.0\.0\.1:\d+, pid (\d+)", proc, 120).group(1))
        pids.append(first)
        wait_healthy(base, proc, timeout_s=LAUNCH_TIMEOUT_S)

        response = _ask(base)
        assert response.status_code == 200, response.text
        assert response.headers["x-ecgw-route"] == "edge"
        assert response.json()["choices"][0]["message"]["content"]
        # Launched on the configured URL's port, which was free, under the embedded model's name, with launch_args.
        served = httpx.get(nobody + "/models", timeout=10).json()["data"][0]
        assert (served["id"], served["max_model_len"]) == ("smollm2-135m-instruct", 2048)

        os.killpg(first, signal.SIGKILL)  # the edge dies under the gateway
        second = int(_wait_for(log, r"restarted \(pid (\d+)\)", proc, 60).group(1))
        pids.append(second)
        assert second != first
        deadline = time.monotonic() + LAUNCH_TIMEOUT_S
        while (status := _ask(base).status_code) != 200 and time.monotonic() < deadline:
            time.sleep(2)
        assert status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    text = log.read_text(errors="replace")
    assert text.count("launching a local vLLM") == 1  # one launcher, whatever the number of workers
    assert code == 0, text[-3000:]
    for pid in pids:
        deadline = time.monotonic() + 10
        while _group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _group_alive(pid), f"the launched vLLM (pid {pid}) outlived the gateway"
    with pytest.raises(httpx.HTTPError):
        httpx.get(nobody + "/models", timeout=5)
