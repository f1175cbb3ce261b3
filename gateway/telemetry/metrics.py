"""Prometheus metrics of client requests (what the agent saw), beside the metering pipeline's own.

Within a machine, ``ecgw serve --workers N`` runs Prometheus' multiprocess mode: every worker writes its values to
files under ``PROMETHEUS_MULTIPROC_DIR`` and ``/metrics``, whichever worker answers, sums them all. Across machines
each replica is its own scrape target and Prometheus' ``instance`` label tells them apart (sum over it).
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from gateway.config.settings import ObservabilitySettings

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class RequestMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.requests = Counter("ecgw_requests", "Client chat requests by route (edge|cloud|mixed|none), policy "
                                "and HTTP status", ["route", "policy", "status"], registry=self.registry)
        self.duration = Histogram("ecgw_request_duration_seconds", "Client chat request duration, to the last "
                                  "byte", ["route", "policy", "streamed"], buckets=_BUCKETS, registry=self.registry)

        # Each label set's children, looked up once: ``labels()`` takes a lock and rebuilds the key every call.
        self._children: dict[tuple[str, str, int, bool], tuple[Any, Any]] = {}

    def observe(self, *, route: str, policy: str, status: int, streamed: bool, seconds: float) -> None:
        key = (route, policy, status, streamed)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (self.requests.labels(route, policy, str(status)),
                                              self.duration.labels(route, policy, "true" if streamed else "false"))
        children[0].inc()
        children[1].observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def multiprocess_values() -> Callable[[], None]:
    """Metrics made from now on keep their values in ``$PROMETHEUS_MULTIPROC_DIR``'s files, which every worker of
    this machine shares. prometheus_client reads the variable once, when it is imported, and ``ecgw``'s own
    sub-commands import it before ``ecgw serve`` knows it forks workers: so it is read again here. Returns what puts
    the in-process value class back (a serve that ends in the same process — a test, a refused start — must not
    leave later metrics writing to a directory that is gone)."""
    from prometheus_client import values

    before = values.ValueClass
    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]

    def restore() -> None:
        values.ValueClass = before

    return restore


def multiprocess_exposition() -> bytes | None:
    """Every worker's metrics of this machine, summed; None when this process serves alone."""
    if not os.environ.get(MULTIPROC_ENV):
        return None
    from prometheus_client import multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


@dataclass(frozen=True)
class MetricsKey:
    """What ``GET /metrics`` asks for (``observability.metrics_key_env``); None: it is open."""

    secret: str | None

    @classmethod
    def from_settings(cls, settings: ObservabilitySettings) -> MetricsKey:
        return cls(os.environ[settings.metrics_key_env] if settings.metrics_key_env else None)

    def opens(self, headers: Mapping[str, str]) -> bool:
        if self.secret is None:
            return True
        scheme, _, given = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.secret.encode())
