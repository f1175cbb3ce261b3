"""One pool member's health as this worker sees it: consecutive failures (of calls and of probes) eject it; an
ejected member is probed again after ``readmit_after_s`` and readmitted when it answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


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

    def succeeded(self, detail: str | None = None) -> None:
        self.failures = 0
        self.ejected_at = None
        if detail is not None:
            self.detail = detail

    def probe_due(self) -> bool:
        """Healthy members are probed every interval; an ejected one only once ``readmit_after_s`` has passed."""
        return self.ejected_at is None or self.clock() - self.ejected_at >= self.readmit_after_s
