"""The facts a channel reports about one upstream call; the meter turns them into a record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from accounting.pricing import Pricer


@dataclass
class UpstreamCall:
    request_id: str
    session_id: str
    policy: str
    purpose: str
    side: str  # "edge" | "cloud"
    provider: str
    model: str
    streamed: bool
    status: int
    started_at: float  # unix time
    latency_s: float
    ttft_s: float | None = None
    experiment: str | None = None
    arm: str | None = None
    deployment: str | None = None  # the configured edge deployment or cloud target that made the call
    key_label: str | None = None  # the API key it was made for (``Identity.label``, never a secret): key budgets
    usage: Mapping[str, Any] | None = None  # the upstream's usage object, OpenAI-shaped
    # Only for estimating tokens when the upstream reported no usage; never stored.
    request_body: Mapping[str, Any] | None = field(default=None, repr=False)
    output_text: str = field(default="", repr=False)
    # The price table of the configuration the call ran under (``PricedMeter``; a reload's prices apply to calls
    # made after it, whenever the writer builds their rows); None: the meter's own.
    prices: Pricer | None = field(default=None, repr=False, compare=False)


@dataclass
class StepRecord:
    """One client request (agent step) as a whole: what the policy decided and on what signal, which sides
    answered, the status and the latency. Labels and numbers only — never content."""

    request_id: str
    session_id: str
    policy: str
    started_at: float  # unix time
    latency_s: float
    status: int
    route: str  # "edge" | "cloud" | "mixed" | "none"
    decision: str | None = None
    reason: str | None = None
    signal: Mapping[str, Any] = field(default_factory=dict)
    experiment: str | None = None
    arm: str | None = None
    fallback: str | None = None  # "privacy-blocked" when privacy kept the step on the edge
    trace_id: str | None = None
    # Numbers and labels a learned router reads (``router.learning.features``), and the step's agreement label
    # from a shadow call (``router.learning.agreement``) when it had one. Never text.
    features: Mapping[str, Any] = field(default_factory=dict)
    label: Mapping[str, Any] | None = None


class Meter(Protocol):
    """Receives every upstream call, every step's decision record, and the end of every client request (its
    settlement mark, ``accounting.settlement``). Must not block the request path."""

    def record(self, call: UpstreamCall) -> None: ...

    def record_step(self, step: StepRecord) -> None: ...

    def settle(self, request_id: str, session_id: str) -> None: ...

    async def start(self) -> None:
        """Start what needs the running event loop (a background writer); called once, before the first call."""
        ...

    async def aclose(self) -> None:
        """Flush what is queued and stop; nothing recorded before is lost."""
        ...


class PricedMeter:
    """A meter that stamps every call with one price table (the configuration snapshot's) on its way to ``inner``."""

    def __init__(self, inner: Meter, prices: Pricer) -> None:
        self._inner = inner
        self.prices = prices

    def record(self, call: UpstreamCall) -> None:
        if call.prices is None:
            call.prices = self.prices
        self._inner.record(call)

    def record_step(self, step: StepRecord) -> None:
        self._inner.record_step(step)

    def settle(self, request_id: str, session_id: str) -> None:
        self._inner.settle(request_id, session_id)

    async def start(self) -> None:
        return None  # the inner meter's lifecycle is its owner's

    async def aclose(self) -> None:
        return None


class NullMeter:
    """Records nothing (metering switched off)."""

    def record(self, call: UpstreamCall) -> None:
        return None

    def record_step(self, step: StepRecord) -> None:
        return None

    def settle(self, request_id: str, session_id: str) -> None:
        return None

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class MemoryMeter:
    """Keeps calls in a list; for tests and for `ecgw scrub`-style one-off runs."""

    def __init__(self) -> None:
        self.calls: list[UpstreamCall] = []
        self.steps: list[StepRecord] = []

    def record(self, call: UpstreamCall) -> None:
        self.calls.append(call)

    def record_step(self, step: StepRecord) -> None:
        self.steps.append(step)

    def settle(self, request_id: str, session_id: str) -> None:
        return None  # nothing is stored, so nothing is ever pending

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
