"""The one gate for what the suite needs from outside Python: the real services `make test` starts and the
benchmark data in ``../shared``. Absent on a laptop → the test skips and says why (``-ra`` prints it);
absent under CI → the test fails and says which part is missing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

from eval.paths import ENV_VAR as ACEBENCH_ENV
from eval.paths import acebench_dir

LLAMA_COMPAT = {"send_max_tokens": True, "string_content": True, "null_content_as_empty": True,
                "stream_usage": False, "stream_tools": False, "dedupe_tool_call_names": True}


def in_ci() -> bool:
    """CI is set to anything but an explicit no (``CI=true`` and ``CI=1`` alike)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(reason: str) -> NoReturn:
    if in_ci():
        pytest.fail(f"in CI every real-parts test must run, but {reason}")
    pytest.skip(reason)


def require_env(name: str, what: str) -> str:
    value = os.environ.get(name)
    if value:
        return value
    missing(f"{name} is not set: {what} is not running (`make test` starts it)")


def llama_url() -> str:
    return require_env("ECGW_TEST_LLAMA_URL", "the real SmolLM2 llama-cpp server")


def redis_url() -> str:
    return require_env("ECGW_TEST_REDIS_URL", "the Redis server (scripts/redis.sh)")


def postgres_url() -> str:
    return require_env("ECGW_TEST_POSTGRES_URL", "the test PostgreSQL server (scripts/postgres.sh)")


def acebench_data() -> Path:
    """The benchmark's data, read in place (never copied): ``$ECGW_ACEBENCH_DIR`` or ``../shared/acebench``."""
    path = acebench_dir()
    if not (path / "tasks").is_dir():
        missing(f"the AceBench data is not at {path}: set {ACEBENCH_ENV} (a clone of the repo alone has no "
                "../shared)")
    return path
