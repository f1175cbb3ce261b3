"""The span seam for per-step traces: channels and the pipeline open child spans of whatever span is current;
with tracing off the current span is ``NO_SPAN`` and every call is a no-op. The OpenTelemetry implementation lives
in ``gateway.telemetry.tracing``. Attributes are labels and numbers only — never prompt or answer content."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

Attribute = str | int | float | bool


class Span(Protocol):
    @property
    def trace_id(self) -> str | None: ...

    @property
    def recording(self) -> bool:
        """False for ``NO_SPAN``: work done only to fill in attributes (token counts) can be skipped."""
        ...

    def set(self, key: str, value: Attribute | None) -> None:
        """Set an attribute (None: leave it unset)."""
        ...

    def add(self, key: str, amount: int | float) -> None:
        """Add to a numeric attribute (token totals of a request)."""
        ...

    def child(self, name: str, **attributes: Attribute | None) -> Span: ...

    def end(self, error: BaseException | None = None) -> None: ...


class _NoSpan:
    trace_id: str | None = None
    recording = False

    def set(self, key: str, value: Attribute | None) -> None:
        return None

    def add(self, key: str, amount: int | float) -> None:
        return None

    def child(self, name: str, **attributes: Attribute | None) -> Span:
        return self

    def end(self, error: BaseException | None = None) -> None:
        return None


NO_SPAN: Span = _NoSpan()
_current: ContextVar[Span] = ContextVar("ecgw_current_span", default=NO_SPAN)


def current() -> Span:
    return _current.get()


def make_current(span: Span) -> None:
    """Make ``span`` the parent of the spans opened later in this request's task (it is never reset: each request
    runs in its own task, and a stream's calls happen after the endpoint has returned)."""
    _current.set(span)


@contextmanager
def ending(span: Span) -> Iterator[Span]:
    """``span`` for the ``with`` block, then ended — with the error that escapes the block, if any."""
    try:
        yield span
    except BaseException as exc:
        span.end(exc)
        raise
    span.end()
