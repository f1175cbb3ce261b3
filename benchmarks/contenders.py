"""The servers under test, each a subprocess on a free loopback port, stopped by PID."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
LITELLM_PROXY_VERSION = "1.80.0"  # 1.110.2's [proxy] extra needs litellm-proxy, which the registry lacks


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def peak_rss_mb(pid: int) -> float:
    """Peak resident memory of a process and its children (workers), in MB."""
    total = 0.0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024
        except FileNotFoundError:
            continue
    return total


@dataclass
class Server:
    name: str
    url: str  # base URL ending in /v1
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited early; log: {self.log}\n{self._tail()}")
            try:
                if httpx.get(self.url + "/models", timeout=1.0).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready after {timeout_s}s; log: {self.log}\n{self._tail()}")

    def _tail(self) -> str:
        return self.log.read_text()[-3000:] if self.log and self.log.exists() else ""

    def rss_mb(self) -> float:
        return peak_rss_mb(self.process.pid) if self.process else float("nan")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _spawn(name: str, args: list[str], workdir: Path, url: str, env: dict[str, str] | None = None) -> Server:
    """Start ``args`` from the repository root; its log goes to ``workdir``."""
    log = workdir / f"{name}.log"
    handle = log.open("wb")
    process = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT,
                               env={**os.environ, **(env or {})})
    server = Server(name=name, url=url, process=process, log=log)
    server.wait_ready()
    return server


def start_upstream(workdir: Path) -> Server:
    port = free_port()
    return _spawn("upstream", [sys.executable, "-m", "benchmarks.upstream", "--port", str(port)], workdir,
                  f"http://127.0.0.1:{port}/v1")


def start_ecgw(name: str, workdir: Path, upstream: Server, *, policy: str, workers: int = 1,
               privacy_mode: str | None = None) -> Server:
    port = free_port()
    config = {
        "server": {"port": port, "workers": workers},
        "edge": {"base_url": upstream.url, "model": "bench"},
        "cloud": {"model": "openai/bench", "api_base": upstream.url, "api_key_env": None},
        "policy": {"default": policy},
        "database_url": f"sqlite:///{workdir / (name + '.sqlite3')}",
    }
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
    return _spawn(name, [sys.executable, "-m", "gateway.cli", "serve", "--config", str(path)], workdir,
                  f"http://127.0.0.1:{port}/v1", env=env)


def litellm_proxy_python() -> Path | None:
    """LiteLLM's proxy in its own venv (cached outside the repo); None if it cannot be installed here."""
    cache = Path(os.environ.get("ECGW_CACHE", Path.home() / ".cache" / "ecgw"))
    venv = cache / f"litellm-proxy-{LITELLM_PROXY_VERSION}"
    python = venv / "bin" / "python"
    if python.exists() and (venv / "bin" / "litellm").exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", f"litellm[proxy]=={LITELLM_PROXY_VERSION}"])
    if done.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        return None
    return python


def start_litellm_proxy(workdir: Path, upstream: Server) -> Server | None:
    python = litellm_proxy_python()
    if python is None:
        return None
    port = free_port()
    config = {"model_list": [{"model_name": "bench", "litellm_params": {
        "model": "openai/bench", "api_base": upstream.url, "api_key": "none"}}],
        "litellm_settings": {"drop_params": True}}
    path = workdir / "litellm.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
    return _spawn("litellm-proxy", [str(python.parent / "litellm"), "--config", str(path), "--port", str(port),
                                    "--num_workers", "1"], workdir, f"http://127.0.0.1:{port}/v1", env=env)


def start_portkey(workdir: Path, upstream: Server) -> tuple[Server | None, str]:
    """Portkey's open-source gateway (Node, ``scripts/portkey.sh``) in front of the upstream, or None and why not."""
    done = subprocess.run([str(ROOT / "scripts" / "portkey.sh"), "env"], capture_output=True, text=True)
    paths = dict(part.split("=", 1) for part in done.stdout.split() if "=" in part)
    if done.returncode != 0 or "ECGW_PORTKEY_SERVER" not in paths:
        return None, f"Portkey's gateway did not install: {done.stderr.strip()[-300:]}"
    port = free_port()
    try:
        server = _spawn("portkey", [paths["ECGW_PORTKEY_NODE"], paths["ECGW_PORTKEY_SERVER"], f"--port={port}",
                                    "--headless"], workdir, f"http://127.0.0.1:{port}/v1")
    except RuntimeError as exc:
        return None, f"Portkey's gateway did not start: {str(exc)[-300:]}"
    server.extra_headers = {"x-portkey-provider": "openai", "x-portkey-custom-host": upstream.url,
                            "authorization": "Bearer none"}
    return server, ""
