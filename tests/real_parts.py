"""Where the real services started by `make test` are, and how to skip loudly (or fail in CI) without them."""

from __future__ import annotations

import os

import pytest

LLAMA_COMPAT = {"send_max_tokens": True, "string_content": True, "null_content_as_empty": True,
                "stream_usage": False, "stream_tools": False, "dedupe_tool_call_names": True}


def require_env(name: str, what: str) -> str:
    value = os.environ.get(name)
    if value:
        return value
    reason = f"{name} is not set: {what} is not running (`make test` starts it)"
    if os.environ.get("CI"):
        pytest.fail(f"in CI every real-parts test must run, but {reason}")
    pytest.skip(reason)


def llama_url() -> str:
    return require_env("ECGW_TEST_LLAMA_URL", "the real SmolLM2 llama-cpp server")


def redis_url() -> str:
    return require_env("ECGW_TEST_REDIS_URL", "the Redis server (scripts/redis.sh)")


def postgres_url() -> str:
    return require_env("ECGW_TEST_POSTGRES_URL", "the PostgreSQL server (scripts/postgres.sh)")
