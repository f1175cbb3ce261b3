"""`ecgw serve --workers 2` forks its workers from a parent that loaded the detectors' models once: both workers
serve, each says its models were loaded in the parent, a killed worker is replaced by another forked from it, and
SIGTERM lets a stream in flight finish before the gateway exits."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.contenders import free_port
from tests.fakes.model_server import Reply
from tests.processes import serve, wait_healthy

READY_S = 300  # a start on a loaded machine (the kill test's figure)


def _children(pid: int) -> set[int]:
    return {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def _processes_seen(base: str, want: set[int], *, timeout_s: float = READY_S) -> dict[int, Any]:
    """/readyz on fresh connections until every pid of ``want`` has answered: pid → its ``process`` block."""
    seen: dict[int, Any] = {}
    deadline = time.monotonic() + timeout_s
    while not want <= seen.keys():
        assert time.monotonic() < deadline, f"workers {sorted(want - seen.keys())} never answered (saw {sorted(seen)})"
        try:
            process = httpx.get(base + "/readyz", timeout=30).json()["process"]
        except httpx.HTTPError:
            time.sleep(0.2)
            continue
        seen[process["pid"]] = process
    return seen


def test_forked_workers_share_models_are_replaced_and_drain(tmp_path, edge):
    port = free_port()
    config = {"server": {"port": port, "workers": 2},
              "edge": {"base_url": edge.url + "/v1", "model": "edge-model", "read_timeout_s": 60},
              "sessions": {"sqlite_path": str(tmp_path / "sessions.sqlite3")},
              "database_url": f"sqlite:///{tmp_path / 'm.sqlite3'}"}
    proc = serve(config, tmp_path / "c.yaml")
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, proc, timeout_s=READY_S)
        deadline = time.monotonic() + READY_S
        while len(workers := _children(proc.pid)) < 2:
            assert time.monotonic() < deadline, "ecgw serve did not start two workers"
            time.sleep(0.2)
        seen = _processes_seen(base, workers)
        # both serve, and neither loaded the models: the parent did, before it forked them
        assert {p["models_loaded_in"] for p in seen.values()} == {proc.pid}

        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + READY_S
        while len(replaced := _children(proc.pid) - {victim}) < 2:
            assert time.monotonic() < deadline, "the killed worker was not replaced"
            time.sleep(0.2)
        fresh = _processes_seen(base, replaced - workers)
        assert all(p["models_loaded_in"] == proc.pid for p in fresh.values())

        # a slow stream in flight when the gateway is asked to stop: it is finished, then the gateway exits
        edge.script(Reply(content="one two three four five six", chunk_delay_s=0.5))
        received: list[str] = []

        def stream() -> None:
            body = {"model": "ecgw/edge-only", "stream": True, "messages": [{"role": "user", "content": "x"}]}
            with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=120) as r:
                received.extend(line for line in r.iter_lines() if line)

        reader = threading.Thread(target=stream)
        reader.start()
        deadline = time.monotonic() + READY_S
        while not edge.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert edge.requests, "the stream never reached the edge"
        proc.send_signal(signal.SIGTERM)
        reader.join(timeout=120)
        assert not reader.is_alive()
        assert received[-1] == "data: [DONE]" and "six" in "".join(received)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
