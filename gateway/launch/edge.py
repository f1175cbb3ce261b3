"""``edge.launch``: at ``ecgw serve``'s start, when no edge answers at ``edge.base_url`` (``auto``) or always
(``always``), launch a local vLLM, wait for it with progress, point the edge settings at it, keep it running, and
stop it with the gateway. Only ``ecgw serve``'s own process launches; its workers get the launched URL."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TextIO
from urllib.parse import urlsplit

import httpx

from gateway.config.settings import EdgeSettings, Settings
from gateway.http.errors import StartupError
from gateway.launch.progress import Ticker
from gateway.launch.supervisor import Supervisor, tail
from gateway.launch.vllm import EMBEDDED_MODEL, EMBEDDED_NAME, START_USUALLY, VllmScript

READY_TIMEOUT_S = 900.0  # vLLM's CPU build on two busy cores; a GPU start compiles kernels first
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def edge_answers(base_url: str, *, api_key_env: str | None = None, timeout_s: float = 3.0) -> bool:
    """Whether an OpenAI-compatible server answers ``GET {base_url}/models`` (any status below 500)."""
    key = os.environ.get(api_key_env) if api_key_env else None
    headers = {"authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(base_url.rstrip("/") + "/models", headers=headers, timeout=timeout_s)
    except httpx.HTTPError:
        return False
    return response.status_code < 500


def wants_launch(edge: EdgeSettings) -> bool:
    if edge.launch == "never" or edge.deployments:  # a pool never launches: its members are servers of their own
        return False
    return edge.launch == "always" or not edge_answers(edge.base_url, api_key_env=edge.api_key_env)


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind: TIME_WAIT does not count
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def launch_port(base_url: str) -> int:
    """The port of ``base_url`` when it is on this machine and free (so the configured URL becomes true), else
    any free loopback port."""
    parts = urlsplit(base_url)
    if parts.hostname in _LOOPBACK and parts.port and _bindable(parts.port):
        return parts.port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cache_dir() -> Path:
    return Path(os.environ.get("ECGW_CACHE") or Path.home() / ".cache" / "ecgw")


class LaunchedEdge:
    """The running edge: where it is, and how to stop it."""

    def __init__(self, supervisor: Supervisor, *, base_url: str, model: str) -> None:
        self.supervisor = supervisor
        self.base_url = base_url
        self.model = model

    def stop(self) -> None:
        self.supervisor.stop()
        self.supervisor.log_path.unlink(missing_ok=True)  # a failed start's log is quoted in its error already

    def stop_on_signals(self) -> None:
        """SIGTERM ends the gateway with the edge. (uvicorn takes it while it serves, shuts down gracefully, then
        raises it again, which lands here; SIGINT unwinds as KeyboardInterrupt.) SIGHUP reloads the configuration
        (``gateway.live.reload``): it never ends the gateway nor its edge."""

        def handler(signum: int, frame: FrameType | None) -> None:
            self.stop()
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

        if threading.current_thread() is threading.main_thread():  # the only thread that may set handlers
            signal.signal(signal.SIGTERM, handler)


def _wait_ready(supervisor: Supervisor, base_url: str, ticker: Ticker, timeout_s: float) -> None:
    while not edge_answers(base_url, timeout_s=2.0):
        code = supervisor.exit_code()
        if code is not None:
            raise StartupError(f"the launched vLLM exited with code {code} before it was ready; its log "
                               f"({supervisor.log_path}) ends:\n{tail(supervisor.log_path)}")
        if ticker.elapsed_s > timeout_s:
            raise StartupError(f"the launched vLLM was not ready after {timeout_s:g} s; its log "
                               f"({supervisor.log_path}) ends:\n{tail(supervisor.log_path)}")
        time.sleep(1.0)


def launch_edge(settings: Settings, *, out: TextIO, script: VllmScript | None = None,
                ready_timeout_s: float = READY_TIMEOUT_S) -> tuple[Settings, LaunchedEdge | None]:
    """Launch when ``edge.launch`` says so; returns the settings pointed at the launched edge (or unchanged) and
    the running edge, which the caller stops."""
    edge = settings.edge
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per readiness probe
    if not wants_launch(edge):
        return settings, None
    model_dir = str(Path(edge.launch_model).expanduser().resolve()) if edge.launch_model else None
    if model_dir is not None and not Path(model_dir, "config.json").is_file():
        raise StartupError(f"edge.launch_model: {model_dir} is not a Hugging Face model directory (no config.json); "
                           "vLLM is launched offline, so the model must be on disk")
    what = edge.launch_model or f"the embedded {EMBEDDED_MODEL}"
    why = "edge.launch is always" if edge.launch == "always" else f"nothing answers at {edge.base_url}"
    print(f"ecgw: {why}: launching a local vLLM serving {what} as the edge (set edge.launch: never to "
          "serve without one)", file=out, flush=True)
    script = script or VllmScript()
    script.install(out)
    port = launch_port(edge.base_url)
    name = edge.model if edge.launch_model else EMBEDDED_NAME
    log_path = cache_dir() / f"ecgw-edge-{port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    supervisor = Supervisor(script.command(port=port, name=name, model_dir=model_dir, args=edge.launch_args),
                            name="the launched edge vLLM", log_path=log_path)
    base_url = f"http://127.0.0.1:{port}/v1"
    launched = LaunchedEdge(supervisor, base_url=base_url, model=name)
    launched.stop_on_signals()  # from here on: a SIGTERM while we wait must not leave the server behind
    pid = supervisor.start()
    try:
        print(f"ecgw: starting vLLM on 127.0.0.1:{port}, pid {pid}, log {log_path}", file=out, flush=True)
        with Ticker(out, "waiting for the edge model to load", usually=START_USUALLY, every_s=20) as ticker:
            _wait_ready(supervisor, base_url, ticker, ready_timeout_s)
    except BaseException:
        supervisor.stop()  # its log stays: the error quotes it
        raise
    supervisor.watch()
    print(f"ecgw: edge ready: {what} at {base_url} as model {name!r} (pid {pid}); restarted if it dies, stopped "
          "with the gateway", file=out, flush=True)
    launched_settings = settings.model_copy(
        update={"edge": edge.model_copy(update={"base_url": base_url, "model": name})})
    return launched_settings, launched
