"""Real parts (see tests/real/helpers.py): a real vLLM as the edge, the real OpenClaw agent as the client."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real_vllm: needs the real vLLM server started by `make test` (scripts/vllm.sh)")
    config.addinivalue_line("markers", "real_agent: needs OpenClaw installed by `make test` (scripts/openclaw.sh)")
