"""`edge.launch` decisions of a real `ecgw serve`: nothing is launched when an edge answers or with `never`, and a
launch that cannot install says why and stops the start. (The launch itself, with the real vLLM, is in
tests/real/test_launched_edge.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import yaml

from benchmarks.contenders import free_port
from tests.fakes.model_server import ModelServer, Reply
from tests.processes import wait_healthy

ROOT = Path(__file__).resolve().parents[3]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
    # An empty cache and a Python that cannot make a venv: a launch attempt fails at once instead of installing.
    env.update(ECGW_CACHE=str(tmp_path / "cache"), PYTHON="false")
    return env


def _config(tmp_path: Path, port: int, edge_url: str, launch: str, **edge: object) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "server": {"port": port, "workers": 1},
        "edge": {"base_url": edge_url, "model": "edge-model", "launch": launch, **edge},
        "cloud": {"api_key_env": None},
        "database_url": f"sqlite:///{tmp_path / 'm.sqlite3'}"}))
    return path


def _serve(tmp_path: Path, config: Path) -> tuple[subprocess.Popen[str], Path]:
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)], cwd=ROOT,
                                env=_env(tmp_path), stdout=out, stderr=subprocess.STDOUT, text=True)
    return proc, log


def _ask(base: str) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", timeout=30,
                      json={"model": "ecgw/edge-only", "messages": [{"role": "user", "content": "hi"}]})


def test_an_edge_that_answers_is_used_and_nothing_is_launched(tmp_path: Path, edge: ModelServer) -> None:
    port = free_port()
    proc, log = _serve(tmp_path, _config(tmp_path, port, edge.url + "/v1", "auto"))  # type: ignore[attr-defined]
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        edge.script(Reply("the configured edge"))
        response = _ask(f"http://127.0.0.1:{port}")
        assert response.status_code == 200
        assert response.json()["choices"][0]["message"]["content"] == "the configured edge"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "launching" not in log.read_text()
    assert not (tmp_path / "cache").exists()


def test_launch_never_serves_without_an_edge(tmp_path: Path) -> None:
    port = free_port()
    nobody = f"http://127.0.0.1:{free_port()}/v1"
    proc, log = _serve(tmp_path, _config(tmp_path, port, nobody, "never"))
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        response = _ask(f"http://127.0.0.1:{port}")
        assert response.status_code == 502 and nobody in response.json()["error"]["message"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "launching" not in log.read_text()


def test_a_launch_that_cannot_install_stops_the_start_and_says_what_to_do(tmp_path: Path) -> None:
    port = free_port()
    nobody = f"http://127.0.0.1:{free_port()}/v1"
    proc, log = _serve(tmp_path, _config(tmp_path, port, nobody, "auto"))
    assert proc.wait(timeout=120) == 1
    text = log.read_text()
    assert f"nothing answers at {nobody}" in text
    assert "installing vLLM" in text and "usually" in text  # progress: what, and how long it usually takes
    assert "edge.launch: never" in text and "Traceback" not in text


def test_a_launch_model_that_is_not_on_disk_is_named_before_anything_is_installed(tmp_path: Path) -> None:
    nobody = f"http://127.0.0.1:{free_port()}/v1"
    missing = tmp_path / "my-model"
    proc, log = _serve(tmp_path, _config(tmp_path, free_port(), nobody, "auto", launch_model=str(missing)))
    assert proc.wait(timeout=120) == 1
    text = log.read_text()
    assert f"edge.launch_model: {missing} is not a Hugging Face model directory" in text
    assert "installing" not in text and not (tmp_path / "cache").exists()
