"""What the gateway's reports read from a meter: usage rows, settlement, ad-hoc store reads and ``/metrics``.

``StoreMeter`` keeps what it records and offers this; ``NullMeter`` (``accounting.enabled: false``) does not, and
the routes and the dashboard say so. They ask for this protocol, not for a concrete meter class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from accounting.database import StoreUnavailable

T = TypeVar("T")


@runtime_checkable
class UsageReports(Protocol):
    async def report(self, by: str, *, since: float | None = None, until: float | None = None,
                     session_prefix: str | None = None, session_id: str | None = None) -> list[dict[str, Any]]:
        """The rows of ``ecgw usage`` grouped ``by`` (``accounting.reports``) of the calls started in [``since``,
        ``until``) (of that one session, when ``session_id`` is given), after what is buffered is written."""
        ...

    async def settlement(self, request_ids: list[str], *, session_prefix: str | None = None,
                         session_id: str | None = None) -> dict[str, Any]:
        """``accounting.settlement.settlement_report`` of these requests (those of sessions whose id starts with
        ``session_prefix``, and of that one session when ``session_id`` is given), after this worker's buffer is
        written."""
        ...

    async def query(self, read: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``read(store, *args, **kwargs)`` off the event loop, after what is buffered is written."""
        ...

    def exposition(self) -> bytes:
        """The metering metrics in Prometheus' text format."""
        ...

    def unavailable(self, exc: BaseException) -> StoreUnavailable:
        """The error to show for a failed read (which database, what to check)."""
        ...
