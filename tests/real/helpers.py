"""Real parts: a real vLLM (CPU build, SmolLM2-135M-Instruct) as the edge, and the real OpenClaw agent as the client.

`make test` (scripts/test.sh) starts vLLM in the background while the rest of the suite runs and exports
``ECGW_TEST_VLLM_URL``; it exports ``ECGW_TEST_OPENCLAW`` (the openclaw launcher) and ``ECGW_TEST_NODE_BIN`` (the
directory of a Node >= 24) once scripts/openclaw.sh has installed them. Without them these tests skip loudly, and
fail in CI (``tests.real_parts.require_env``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest

from tests.real_parts import require_env

VLLM_MODEL = "smollm2"  # scripts/vllm.sh --served-model-name
VLLM_READY_TIMEOUT_S = float(os.environ.get("ECGW_TEST_VLLM_READY_TIMEOUT_S", "600"))


_ready: dict[str, bool] = {}


def _wait_until_ready(url: str) -> None:
    """scripts/test.sh starts vLLM in the background (it takes about a minute); wait for it here, once."""
    if _ready.get(url):
        return
    log = os.environ.get("ECGW_TEST_VLLM_LOG")
    deadline = time.monotonic() + VLLM_READY_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        try:
            response = httpx.get(url.rstrip("/") + "/models", timeout=5)
            if response.status_code == 200:
                _ready[url] = True
                return
            last = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            last = type(exc).__name__
        if log and Path(log + ".failed").exists():
            break  # scripts/test.sh marks a start that failed; no point waiting
        time.sleep(1)
    tail = ""
    if log and Path(log).exists():
        tail = "\n" + "\n".join(Path(log).read_text(errors="replace").splitlines()[-40:])
    pytest.fail(f"vLLM at {url} is not ready ({last}); its start-up log follows:{tail}")


def vllm_url() -> str:
    url = require_env("ECGW_TEST_VLLM_URL", "the real vLLM server (scripts/vllm.sh)")
    _wait_until_ready(url)
    return url


def openclaw_paths() -> tuple[str, str]:
    """(the openclaw launcher, a directory holding Node >= 24) as installed by scripts/openclaw.sh."""
    launcher = require_env("ECGW_TEST_OPENCLAW", "OpenClaw (scripts/openclaw.sh)")
    node_bin = require_env("ECGW_TEST_NODE_BIN", "Node 24 for OpenClaw (scripts/openclaw.sh)")
    for path in (launcher, os.path.join(node_bin, "node")):
        if not os.access(path, os.X_OK):
            pytest.fail(f"{path} is not executable; run scripts/openclaw.sh install")
    return launcher, node_bin
