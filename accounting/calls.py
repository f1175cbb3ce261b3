"""The facts a channel reports about one upstream call; the meter turns them into a record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


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
    usage: Mapping[str, Any] | None = None  # the upstream's usage object, OpenAI-shaped
    # Only for estimating tokens when the upstream reported no usage; never stored.
    request_body: Mapping[str, Any] | None = field(default=None, repr=False)
    output_text: str = field(default="", repr=False)


class Meter(Protocol):
    """Receives every upstream call. Must not block the request path."""

    def record(self, call: UpstreamCall) -> None: ...


class NullMeter:
    """Records nothing (metering switched off)."""

    def record(self, call: UpstreamCall) -> None:
        return None


class MemoryMeter:
    """Keeps calls in a list; for tests and for `ecgw scrub`-style one-off runs."""

    def __init__(self) -> None:
        self.calls: list[UpstreamCall] = []

    def record(self, call: UpstreamCall) -> None:
        self.calls.append(call)
