"""Helpers for tests that run `ecgw serve` as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]


def serve(config: dict[str, Any], path: Path) -> subprocess.Popen[bytes]:
    """``ecgw serve --config path`` with ``config`` written there, in the project's root, with no ``ECGW_*``
    variable of this environment; its output (stdout and stderr together) on the process's ``stdout``."""
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
    return subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", str(path)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_healthy(base: str, process: subprocess.Popen[bytes], *, timeout_s: float = 90.0) -> None:
    """Until ``base``/healthz answers 200; fails at once if the process exits first."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert process.poll() is None, f"ecgw serve exited with code {process.returncode} before it was healthy"
        assert time.monotonic() < deadline, f"ecgw serve not healthy after {timeout_s:g} s"
        time.sleep(0.2)
