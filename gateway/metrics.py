"""Prometheus metrics of client requests (what the agent saw), beside the metering pipeline's own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class RequestMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.requests = Counter("ecgw_requests", "Client chat requests by route (edge|cloud|mixed|none), policy "
                                "and HTTP status", ["route", "policy", "status"], registry=self.registry)
        self.duration = Histogram("ecgw_request_duration_seconds", "Client chat request duration, to the last "
                                  "byte", ["route", "policy", "streamed"], buckets=_BUCKETS, registry=self.registry)

    def observe(self, *, route: str, policy: str, status: int, streamed: bool, seconds: float) -> None:
        self.requests.labels(route, policy, str(status)).inc()
        self.duration.labels(route, policy, "true" if streamed else "false").observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
