"""Completion grades per session, reported by the harness that graded them, kept next to the metering records so
an experiment's arms can be compared on completion as well as cost (``router.ab.compare``'s ``grades``)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Table, select
from sqlalchemy.dialects import postgresql, sqlite

from accounting.records import SessionGrade
from accounting.store import UsageStore


def _grades() -> Table:
    table: Table = SessionGrade.__table__  # type: ignore[attr-defined]
    return table


def put_grade(store: UsageStore, session_id: str, score: float, *, source: str | None = None,
              now: float | None = None) -> None:
    """Set (or replace) the session's grade."""
    row = {"session_id": session_id, "score": score, "source": source, "updated_at": now or time.time()}
    table = _grades()
    update = {"score": row["score"], "source": row["source"], "updated_at": row["updated_at"]}
    statement: Any
    if store.engine.dialect.name == "postgresql":
        statement = postgresql.insert(table).values(row).on_conflict_do_update(index_elements=["session_id"],
                                                                               set_=update)
    else:
        statement = sqlite.insert(table).values(row).on_conflict_do_update(index_elements=["session_id"],
                                                                           set_=update)
    with store.engine.begin() as conn:
        conn.execute(statement)


def grades_of(store: UsageStore, sessions: Iterable[str]) -> dict[str, float]:
    wanted = sorted(set(sessions))
    if not wanted:
        return {}
    t = _grades()
    with store.engine.connect() as conn:
        return {str(s): float(v) for s, v in conn.execute(select(t.c.session_id, t.c.score)
                                                           .where(t.c.session_id.in_(wanted)))}
