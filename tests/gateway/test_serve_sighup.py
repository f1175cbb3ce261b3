"""`kill -HUP` to a real `ecgw serve`: the file is read again and the next request runs on it — the same process
still serving (SIGHUP no longer ends it), the policy and the cloud model (a part of the doors) both changed."""

from __future__ import annotations

import signal
import time

import httpx
import yaml

from benchmarks.contenders import free_port
from tests.processes import serve, wait_healthy


def test_sighup_reloads_the_file_in_a_running_serve(tmp_path, edge, cloud):
    port = free_port()
    config = {"server": {"port": port, "workers": 1},
              "edge": {"base_url": edge.url + "/v1", "model": "edge-model", "launch": "never"},
              "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1", "api_key_env": None},
              "privacy": {"layers": {"ner": False}, "audit_spill_path": None},
              "accounting": {"spill_path": None},
              "secrets": {"key_file": str(tmp_path / "ecgw.key")},
              "database_url": f"sqlite:///{tmp_path / 'm.sqlite3'}"}
    path = tmp_path / "c.yaml"
    proc = serve(config, path)
    base = f"http://127.0.0.1:{port}"

    def step(session: str) -> httpx.Response:
        return httpx.post(base + "/v1/chat/completions", headers={"X-Session-Id": session}, timeout=30,
                          json={"messages": [{"role": "user", "content": "x"}]})

    try:
        wait_healthy(base, proc)
        assert step("before").headers["x-ecgw-policy"] == "edge-only"
        config["policy"] = {"default": "cloud-only"}
        config["cloud"]["model"] = "openai/gpt-after-sighup"
        path.write_text(yaml.safe_dump(config))
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 60  # a bound, not a measurement: the reload runs on the server's loop
        n = 0
        while (answer := step(f"after-{n}")).headers["x-ecgw-policy"] != "cloud-only":
            assert proc.poll() is None, "SIGHUP ended ecgw serve"
            assert time.monotonic() < deadline, "SIGHUP did not reload the configuration"
            n += 1
            time.sleep(0.2)
        assert answer.status_code == 200 and cloud.requests[-1]["model"] == "gpt-after-sighup"
        assert proc.poll() is None  # the same process, still serving
    finally:
        proc.terminate()
        output = proc.communicate(timeout=30)[0].decode(errors="replace")
    assert "configuration version 1 loaded" in output, output[-2000:]
