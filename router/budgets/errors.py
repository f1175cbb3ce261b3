"""What a budget or a rate limit says when it stops a call. The gateway maps them (``gateway.http.failures``): a spent
cloud budget keeps the step on the edge (``x-ecgw-fallback: budget``) or, with ``limits.on_exceed: reject``, answers
429; a spent edge budget and a rate limit answer 429; a budget that cannot be read keeps the step off the cloud."""

from __future__ import annotations

from datetime import UTC, datetime

from accounting.errors import EcgwError


def iso(moment: float | None) -> str | None:
    """A unix time as ISO 8601 UTC (``2026-12-01T21:00:00Z``)."""
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class OverBudget(EcgwError):
    """A budget would be exceeded by this call, and the call is refused: 429 naming the budget, when it resets and
    what is left (an ``edge_pflops`` budget, or any with ``limits.on_exceed: reject``)."""

    def __init__(self, *, name: str, kind: str, window: str, amount: float, spent: float,
                 resets_at: float | None, retry_after_s: int) -> None:
        self.name, self.kind, self.window, self.amount, self.spent = name, kind, window, amount, spent
        self.resets_at, self.retry_after_s = resets_at, retry_after_s
        left = max(amount - spent, 0.0)
        self.left = left
        resets = f"it resets at {iso(resets_at)}" if resets_at is not None else "it lasts the session's life"
        super().__init__(f"the {kind} budget of {name} ({amount:g} per {window}) is spent: {left:g} left, {resets}")
        self.reason = str(self)


    @classmethod
    def like(cls, other: OverBudget) -> OverBudget:
        return cls(name=other.name, kind=other.kind, window=other.window, amount=other.amount, spent=other.spent,
                   resets_at=other.resets_at, retry_after_s=other.retry_after_s)


class CloudBudgetSpent(OverBudget):
    """A cloud budget is spent and ``limits.on_exceed`` is ``edge``: the step is answered on the edge instead
    (``x-ecgw-fallback: budget``), as a privacy block is; a policy's own cloud consultation degrades the same way."""


class BudgetUnavailable(EcgwError):
    """A budget applies but its counter cannot be read or written (the session store, or the metering database that
    seeds it, is down): the call is not made (fail closed); 503 when the edge cannot answer instead."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CloudBudgetUnavailable(BudgetUnavailable):
    """A cloud budget cannot be read: the step stays on the edge (``x-ecgw-fallback: budget-unavailable``)."""


# What keeps a step (or a policy's cloud consultation) on the edge rather than failing it.
KEPT_ON_EDGE = (CloudBudgetSpent, CloudBudgetUnavailable)


def fallback_of(exc: BaseException) -> str:
    """The ``x-ecgw-fallback`` value for an exception in ``KEPT_ON_EDGE``."""
    return "budget" if isinstance(exc, CloudBudgetSpent) else "budget-unavailable"


class RateLimited(EcgwError):
    """A request or token rate limit is over its minute: 429 with ``Retry-After`` and ``x-ratelimit-*``."""

    def __init__(self, message: str, headers: dict[str, str]) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers
