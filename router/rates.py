"""Measured cloud-call rates of experiment arms, for ``random-matched``'s ``match`` knob.

``ArmRates`` reads an arm's metering rows through an injected function (the metering store's
``UsageStore.rows(experiment=..., arm=...)``) and caches the rate for ``ttl_s`` seconds, so the request path
reads the store at most once a minute per arm.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from router.ab import cloud_call_rate

RowsOf = Callable[[str, str], Iterable[Mapping[str, Any]]]  # (experiment, arm) → that arm's metering rows


class ArmRates:
    def __init__(self, rows_of: RowsOf, *, ttl_s: float = 60.0, min_requests: int = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._rows_of = rows_of
        self._ttl = ttl_s
        self._min_requests = min_requests
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, float | None]] = {}

    def __call__(self, experiment: str, arm: str) -> float | None:
        key = (experiment, arm)
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        rows = [r for r in self._rows_of(experiment, arm)]
        requests = {r.get("request_id") for r in rows}
        rate = cloud_call_rate(rows, experiment=experiment, arm=arm) if len(requests) >= self._min_requests else None
        self._cache[key] = (now, rate)
        return rate
