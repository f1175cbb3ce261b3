"""Measured cloud-call rates of experiment arms, for ``random-matched``'s ``match`` knob.

``ArmRates`` reads an arm's request counts through an injected function (the metering store's SQL aggregate: how
many requests the arm served and how many of them called the cloud), on a worker thread so the event loop never
waits on the database, and caches the rate for ``ttl_s`` seconds: the request path reads the store at most once a
minute per arm.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

# (experiment, arm) → (requests, requests that called the cloud at least once), or None when the store says nothing
ArmCounts = Callable[[str, str], tuple[int, int] | None]


class ArmRates:
    def __init__(self, counts_of: ArmCounts, *, ttl_s: float = 60.0, min_requests: int = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._counts_of = counts_of
        self._ttl = ttl_s
        self._min_requests = min_requests
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, float | None]] = {}

    async def __call__(self, experiment: str, arm: str) -> float | None:
        key = (experiment, arm)
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        counts = await asyncio.to_thread(self._counts_of, experiment, arm)
        rate = None
        if counts is not None and counts[0] >= self._min_requests:
            rate = counts[1] / counts[0]
        self._cache[key] = (now, rate)
        return rate
