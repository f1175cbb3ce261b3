"""`ecgw serve --workers 2`, reloaded the ways an operator slips (issue 37, finding 1): every worker runs the version
a reload accepted even when the file changes again before the other worker polls; an empty file is refused, and a
worker that dies afterwards comes back with its keys; SIGHUP with a file that is not UTF-8 is refused and audited,
and the supervisor still reloads on the next SIGHUP and stops on SIGTERM."""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.contenders import free_port
from gateway.admin.database import AdminDatabase
from tests.processes import serve, wait_healthy

ADMIN, USER = "sk-admin-w", "sk-user-w"
BOUND_S = 180  # a bound on each wait, not a measurement (workers poll the store every 2 s; a worker restarts slowly on a
# loaded machine)


def _workers(pid: int) -> set[int]:
    """The supervisor's worker processes (every child: ``gateway.launch.prefork`` forks nothing else)."""
    return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def test_two_workers_run_only_what_a_reload_accepted(tmp_path, edge, cloud):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    config: dict[str, Any] = {
        "server": {"port": port, "workers": 2, "api_keys": [USER], "admin_keys": [{"name": "ops", "key": ADMIN}]},
        "edge": {"base_url": edge.url + "/v1", "model": "edge-model", "launch": "never"},
        "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1", "api_key_env": None},
        "sessions": {"store": "sqlite", "sqlite_path": str(tmp_path / "sessions.sqlite3")},
        "privacy": {"layers": {"ner": False}, "audit_spill_path": None},
        "accounting": {"spill_path": None},
        "secrets": {"key_file": str(tmp_path / "ecgw.key")},
        "database_url": f"sqlite:///{tmp_path / 'm.sqlite3'}"}
    cloud_only = {**config, "policy": {"default": "cloud-only"}}
    path = tmp_path / "c.yaml"
    proc = serve(config, path)

    def answers(key: str | None, n: int = 12) -> list[httpx.Response]:
        """``n`` new sessions' steps on fresh connections (spread over both workers)."""
        return [httpx.post(base + "/v1/chat/completions", timeout=30, json={"messages": [{"role": "user", "content": "x"}]},
                           headers={"X-Session-Id": uuid.uuid4().hex,
                                    **({"Authorization": f"Bearer {key}"} if key else {})}) for _ in range(n)]

    def policies() -> set[str]:
        return {answer.headers.get("x-ecgw-policy", str(answer.status_code)) for answer in answers(USER)}

    def reload() -> httpx.Response:
        return httpx.post(base + "/admin/v1/reload", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)

    def audited(who: str) -> list[dict[str, Any]]:
        db = AdminDatabase.from_url(config["database_url"])
        try:
            return [a for a in db.actions() if a["who"] == who]
        finally:
            db.dispose()

    try:
        wait_healthy(base, proc, timeout_s=BOUND_S)
        assert policies() == {"edge-only"}

        # 1. The reload is accepted; the file changes back before the other worker polls: both run the accepted one.
        path.write_text(yaml.safe_dump(cloud_only))
        assert reload().status_code == 200
        path.write_text(yaml.safe_dump(config))
        _until(lambda: policies() == {"cloud-only"} and policies() == {"cloud-only"},
               "the workers did not all run the accepted version")

        # 2. An empty file is refused; a worker killed afterwards starts again with the keys, on the accepted version.
        path.write_text("")
        refused = reload()
        assert refused.status_code == 400 and "is empty" in refused.json()["error"]["message"]
        workers = _workers(proc.pid)
        assert len(workers) == 2, workers
        killed = min(workers)
        os.kill(killed, signal.SIGKILL)
        _until(lambda: len(_workers(proc.pid) - {killed}) == 2, "the supervisor did not start the worker again")
        def keyed_and_accepted() -> bool:
            assert {a.status_code for a in answers(None)} == {401}, "a worker answered without a key"
            return policies() == {"cloud-only"}

        _until(keyed_and_accepted, "the worker started again did not adopt the accepted version")

        # 3. SIGHUP with a file that is not UTF-8: refused and audited; the next SIGHUP still reloads.
        path.write_bytes(yaml.safe_dump(config).encode() + b"# caf\xe9\n")
        proc.send_signal(signal.SIGHUP)
        _until(lambda: any(a["status"] == 400 for a in audited("SIGHUP")), "the refused SIGHUP was not audited")
        assert policies() == {"cloud-only"}
        path.write_text(yaml.safe_dump(config))
        proc.send_signal(signal.SIGHUP)
        _until(lambda: policies() == {"edge-only"} and policies() == {"edge-only"}, "the second SIGHUP did not reload")
        assert [a["status"] for a in audited("SIGHUP")] == [400, 200]
    finally:
        proc.terminate()
        output = proc.communicate(timeout=60)[0].decode(errors="replace")
        print(output[-4000:])  # shown when the test fails
    assert proc.returncode == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
