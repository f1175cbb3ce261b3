"""A newcomer's first errors: a cloud key that is not set is named before any network attempt and warned about once
at start; litellm's banners stay out of the gateway's output; `ecgw serve` finds its config on its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from benchmarks.contenders import free_port
from tests.fakes.model_server import ModelServer, Reply
from tests.processes import wait_healthy

ROOT = Path(__file__).resolve().parents[2]
UNSET = "ECGW_TEST_KEY_NOBODY_SET"


@pytest.mark.parametrize("stream", [False, True])
def test_cloud_call_without_its_key_names_the_variable_and_sends_nothing(start_gateway, cloud: ModelServer,
                                                                         monkeypatch, stream: bool) -> None:
    # litellm's deepseek provider takes its URL from DEEPSEEK_API_BASE: without the check, this call would reach
    # the fake cloud (which answers anyone), so an empty request log shows that nothing left the gateway.
    monkeypatch.setenv("DEEPSEEK_API_BASE", cloud.url + "/v1")  # type: ignore[attr-defined]
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    gw = start_gateway(cloud={"model": "deepseek/deepseek-chat", "api_base": None, "api_key_env": "DEEPSEEK_API_KEY",
                              "transport": "litellm"})  # DEEPSEEK_API_BASE is litellm's
    response = httpx.post(gw.base_url + "/chat/completions", timeout=30, json={
        "model": "ecgw/cloud-only", "stream": stream, "messages": [{"role": "user", "content": "hello"}]})
    assert response.status_code == 503
    error = response.json()["error"]
    assert "DEEPSEEK_API_KEY" in error["message"] and "cloud.api_key_env" in error["message"]
    assert error["type"] == "cloud_not_configured"
    assert cloud.requests == []
    assert [(r.side, r.status) for r in gw.meter.calls] == [("cloud", 503)]


def test_the_same_call_with_the_key_set_reaches_the_cloud(start_gateway, cloud: ModelServer, monkeypatch) -> None:
    # The control for the test above: the provider URL trick does reach the fake cloud once a key is there.
    monkeypatch.setenv("DEEPSEEK_API_BASE", cloud.url + "/v1")  # type: ignore[attr-defined]
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    gw = start_gateway(cloud={"model": "deepseek/deepseek-chat", "api_base": None, "api_key_env": "DEEPSEEK_API_KEY",
                              "transport": "litellm"})  # DEEPSEEK_API_BASE is litellm's
    response = httpx.post(gw.base_url + "/chat/completions", timeout=30, json={
        "model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "hello"}]})
    assert response.status_code == 200 and len(cloud.requests) == 1


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_") and k != UNSET}
    env["PYTHON"] = "false"  # should the gateway try to launch an edge here, its install fails at once
    return env


@pytest.fixture()
def serve(tmp_path: Path) -> Iterator[object]:
    started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def run(config: dict[str, object] | None, *, cwd: Path, env: dict[str, str] | None = None,
            args: tuple[str, ...] = ()) -> tuple[subprocess.Popen[bytes], Path]:
        if config is not None:
            (cwd / "config.yaml").write_text(yaml.safe_dump(config))
        log = tmp_path / f"serve-{len(started)}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", *args], cwd=cwd,
                                    env=env or _env(), stdout=out, stderr=subprocess.STDOUT)
        started.append((proc, log))
        return proc, log

    yield run
    for proc, _ in started:
        proc.terminate()
        proc.wait(timeout=30)


def _config(tmp_path: Path, edge: ModelServer, cloud: ModelServer, port: int, **cloud_overrides: object
            ) -> dict[str, object]:
    return {"server": {"port": port, "workers": 2},
            "edge": {"base_url": edge.url + "/v1", "model": "edge-model"},  # type: ignore[attr-defined]
            "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1",  # type: ignore[attr-defined]
                      "api_key_env": None, **cloud_overrides},
            "sessions": {"sqlite_path": str(tmp_path / "sessions.sqlite3")},
            "database_url": f"sqlite:///{tmp_path / 'm.sqlite3'}"}


def test_serve_reads_config_yaml_in_the_working_directory_and_warns_once_about_the_key(
        tmp_path: Path, edge: ModelServer, cloud: ModelServer, serve) -> None:
    port = free_port()
    work = tmp_path / "project"
    work.mkdir()
    config = _config(tmp_path, edge, cloud, port, api_base=None, model="deepseek/deepseek-chat", api_key_env=UNSET)
    proc, log = serve(config, cwd=work)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, proc)  # listening on the port of ./config.yaml, found without --config
    edge.script(Reply("from the fake edge"))
    response = httpx.post(base + "/v1/chat/completions", timeout=30,
                          json={"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 200
    warnings = [line for line in log.read_text().splitlines() if UNSET in line]
    assert len(warnings) == 1 and "warning" in warnings[0] and "cloud.api_key_env" in warnings[0]
    assert "launching" not in log.read_text()  # an edge answered: nothing launched


def test_serve_reads_ecgw_config_file(tmp_path: Path, edge: ModelServer, cloud: ModelServer, serve) -> None:
    port = free_port()
    path = tmp_path / "elsewhere.yaml"
    path.write_text(yaml.safe_dump(_config(tmp_path, edge, cloud, port)))
    empty = tmp_path / "empty"
    empty.mkdir()
    proc, _ = serve(None, cwd=empty, env={**_env(), "ECGW_CONFIG_FILE": str(path)})
    wait_healthy(f"http://127.0.0.1:{port}", proc)


def test_litellm_banners_stay_out_of_the_log(tmp_path: Path, edge: ModelServer, cloud: ModelServer, serve) -> None:
    port = free_port()
    config = _config(tmp_path, edge, cloud, port, api_base=f"http://127.0.0.1:{free_port()}/v1",  # nobody there
                     transport="litellm")
    proc, log = serve(config, cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, proc)
    response = httpx.post(base + "/v1/chat/completions", timeout=60,
                          json={"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 502
    time.sleep(0.5)  # the log is written by the worker; give it a moment to flush
    text = log.read_text()
    assert "Give Feedback" not in text and "turn_on_debug" not in text and "Provider List" not in text
