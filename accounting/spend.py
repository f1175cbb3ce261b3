"""What a scope has spent, from the metering database (the truth a budget counter is seeded from).

The four measures budgets count, over the rows of a scope since a moment: ``usd`` (cloud cost), ``tokens`` (cloud
prompt + output tokens), ``calls`` (cloud calls that did any work) and ``pflops`` (edge FLOPs / 1e15).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, case, func, select

from accounting.records import UsageRecord
from accounting.store import UsageStore

SHADOW = "shadow"  # the purpose of a shadow call (gateway.learning.shadow): no tenant's, key's or session's spend


def _table() -> Table:
    table: Table = UsageRecord.__table__  # type: ignore[attr-defined]
    return table


def spend(store: UsageStore, *, since: float | None, where: Sequence[tuple[str, str]] = ()) -> dict[str, float]:
    t = _table()
    cloud, edge = t.c.side == "cloud", t.c.side == "edge"

    def total(expr: Any, when: Any) -> Any:
        return func.coalesce(func.sum(case((when, expr), else_=0)), 0)

    query = select(total(t.c.cost_usd, cloud & t.c.cost_usd.is_not(None)).label("usd"),
                   total(t.c.prompt_tokens + t.c.output_tokens, cloud).label("tokens"),
                   total(1, cloud & (t.c.usage_source != "none")).label("calls"),
                   total(t.c.edge_flops, edge & t.c.edge_flops.is_not(None)).label("flops"))
    if since is not None:
        query = query.where(t.c.started_at >= since)
    for column, value in where:
        query = query.where(t.c[column] == value)
    if not any(column == "purpose" for column, _ in where):  # shadow calls are the operator's (limits.shadow)
        query = query.where(t.c.purpose != SHADOW)
    with store.engine.connect() as conn:
        row = conn.execute(query).one()._mapping
    return {"usd": float(row["usd"] or 0.0), "tokens": float(row["tokens"] or 0), "calls": float(row["calls"] or 0),
            "pflops": float(row["flops"] or 0.0) / 1e15}
