"""Rows and calls for the store tests."""

from __future__ import annotations

import uuid
from typing import Any

from accounting.calls import UpstreamCall


def row(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "record_id": uuid.uuid4().hex, "started_at": 1_780_000_000.0, "day": "2026-05-28", "request_id": "req-1",
        "session_id": "s1", "experiment": None, "arm": None, "policy": "cloud-only", "purpose": "step",
        "side": "cloud", "provider": "openai", "model": "gpt-test", "streamed": False, "status": 200,
        "latency_s": 0.5, "ttft_s": 0.1, "prompt_tokens": 1000, "cache_read_tokens": 600, "cache_write_tokens": 0,
        "raw_input_tokens": 400, "output_tokens": 50, "reasoning_tokens": None, "usage_source": "upstream",
        "cost_usd": 0.002, "price_version": "v1", "edge_flops": None, "flops_formula": None,
    }
    base.update(kw)
    return base


def call(n: int = 0, **kw: Any) -> UpstreamCall:
    base: dict[str, Any] = dict(request_id=f"req-{n}", session_id="s1", policy="cloud-only", purpose="step",
                                side="cloud", provider="openai", model="gpt-test", streamed=False, status=200,
                                started_at=1_780_000_000.0 + n, latency_s=0.2, ttft_s=0.1,
                                usage={"prompt_tokens": 100, "completion_tokens": 10,
                                       "prompt_tokens_details": {"cached_tokens": 64}})
    base.update(kw)
    return UpstreamCall(**base)
