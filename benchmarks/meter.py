"""What metering adds to the request path: the cost of ``StoreMeter.record`` (it only enqueues; the batching
writer does the rest on its own thread)."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from accounting.calls import UpstreamCall
from accounting.factory import build_record_builder
from accounting.metrics import MeteringMetrics
from accounting.settings import AccountingSettings, WriterSettings
from accounting.store import UsageStore
from accounting.writer import StoreMeter


def _call(n: int) -> UpstreamCall:
    return UpstreamCall(request_id=f"req-{n}", session_id="bench", policy="cloud-only", purpose="step",
                        side="cloud", provider="openai", model="gpt-5.4", streamed=False, status=200,
                        started_at=1_780_000_000.0 + n, latency_s=0.2, ttft_s=0.1,
                        usage={"prompt_tokens": 1000, "completion_tokens": 50,
                               "prompt_tokens_details": {"cached_tokens": 640}})


def record_cost(calls: int = 20_000, rounds: int = 5) -> dict[str, Any]:
    """Microseconds per ``record()`` call, median over ``rounds`` rounds of ``calls`` calls each."""

    async def run(path: Path) -> list[float]:
        settings = AccountingSettings(writer=WriterSettings(flush_interval_s=60, batch_size=1_000_000))
        meter = StoreMeter(UsageStore.from_url(f"sqlite:///{path}"), build_record_builder(settings),
                           MeteringMetrics(), settings.writer)
        await meter.start()
        batch = [_call(n) for n in range(calls)]
        per_round = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for c in batch:
                meter.record(c)
            per_round.append((time.perf_counter() - t0) / calls * 1e6)
        await meter.aclose()
        return per_round

    with tempfile.TemporaryDirectory(prefix="ecgw-bench-meter-") as tmp:
        rounds_us = asyncio.run(run(Path(tmp) / "usage.sqlite3"))
    return {"calls_per_round": calls, "record_us_p50": round(statistics.median(rounds_us), 2),
            "record_us_max": round(max(rounds_us), 2)}
