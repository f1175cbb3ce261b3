"""One pool member's health as this worker sees it: consecutive failures (of calls and of probes) eject it; an
ejected member is probed again after ``readmit_after_s`` and readmitted when it answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from router.errors import UpstreamError
from router.upstreams import retryable


@dataclass
class Health:
    eject_after: int
    readmit_after_s: float
    clock: Callable[[], float]
    failures: int = 0  # consecutive
    ejected_at: float | None = None
    in_flight: int = 0
    detail: str = "not probed yet"
    ejections: int = field(default=0)  # how often, for /metrics

    @property
    def healthy(self) -> bool:
        return self.ejected_at is None

    def failed(self, detail: str) -> None:
        self.failures += 1
        self.detail = detail
        if self.ejected_at is not None:
            self.ejected_at = self.clock()  # still failing: wait readmit_after_s again
        elif self.failures >= self.eject_after:
            self.ejected_at = self.clock()
            self.ejections += 1

    def eject(self, detail: str) -> None:
        """Out of the pool now (a member a reload added that did not answer its first probe)."""
        self.failures = max(self.failures, self.eject_after)
        self.detail = detail
        if self.ejected_at is None:
            self.ejections += 1
        self.ejected_at = self.clock()

    def succeeded(self, detail: str | None = None) -> None:
        self.failures = 0
        self.ejected_at = None
        if detail is not None:
            self.detail = detail

    def probe_due(self) -> bool:
        """Healthy members are probed every interval; an ejected one only once ``readmit_after_s`` has passed."""
        return self.ejected_at is None or self.clock() - self.ejected_at >= self.readmit_after_s

    def began(self) -> None:
        self.in_flight += 1

    def ended(self, failure: UpstreamError | None) -> Literal["ejected", "readmitted"] | None:
        """A call on this member ended: one fewer in flight; a success readmits it, a failure another member may
        answer counts toward ejection (a 4xx is the request's fault, not the member's). Returns the change of
        state, if any, for the pool to log in its own words."""
        self.in_flight -= 1
        was_healthy = self.healthy
        if failure is None:
            self.succeeded()
        elif retryable(failure):
            self.failed(failure.message)
        if self.healthy == was_healthy:
            return None
        return "readmitted" if self.healthy else "ejected"
