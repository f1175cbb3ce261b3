"""What every upstream call of one client request carries: who to attribute it to (``CallContext``) and which sides
the request used (``RouteTracker``). Its own module so the channels and the step both depend on it, not on each
other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CallContext:
    """Attribution carried by every upstream call of one client request."""

    request_id: str
    session_id: str
    policy: str
    experiment: str | None = None
    arm: str | None = None


@dataclass
class RouteTracker:
    """Which sides a step used; becomes the ``x-ecgw-route`` header."""

    sides: set[str] = field(default_factory=set)

    def used(self, side: str) -> None:
        self.sides.add(side)

    @property
    def route(self) -> str:
        if self.sides == {"edge"}:
            return "edge"
        if self.sides == {"cloud"}:
            return "cloud"
        if not self.sides:
            return "none"
        return "mixed"
