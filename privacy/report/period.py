"""Whose records, over which time: the scope of one period report.

``prefix`` is the owner's namespace of internal session ids (``t.<tenant>/``, as ``gateway.state.tenancy`` makes them),
None for every owner; a record belongs to the period when its time is at or after ``since`` and before ``until``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement


@dataclass(frozen=True)
class Scope:
    owner: str  # as the report names it: "all", or the owner ("t.acme")
    prefix: str | None  # None: every owner
    since: float | None
    until: float

    def where(self, session: Any, moment: Any) -> list[ColumnElement[bool]]:
        """The filters on a table's session id and time columns."""
        out: list[ColumnElement[bool]] = [moment < self.until]
        if self.since is not None:
            out.append(moment >= self.since)
        if self.prefix is not None:
            out.append(session.startswith(self.prefix, autoescape=True))
        return out

    def holds(self, moment: float) -> bool:
        return (self.since is None or moment >= self.since) and moment < self.until


def iso(moment: float | None) -> str | None:
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_BUCKETS_S = (1, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400)


def bucket_for(start: float, end: float, *, most: int = 48) -> int:
    """The smallest of a few round bucket sizes that splits [start, end) into at most ``most`` buckets."""
    span = max(end - start, 1.0)
    for size in _BUCKETS_S:
        if span / size <= most:
            return size
    return _BUCKETS_S[-1]
