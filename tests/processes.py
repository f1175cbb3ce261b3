"""Helpers for tests that run `ecgw serve` as a real subprocess."""

from __future__ import annotations

import subprocess
import time

import httpx


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
