"""Step decision records (one per client request, ``StepRecord``) in the metering store: write, and the few
reads the dashboard needs — route mix and request rate per policy, and a session's steps with their calls."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, Table, cast, func, select
from sqlalchemy.engine import Connection

from accounting.calls import StepRecord
from accounting.records import StepRecordRow, UsageRecord
from accounting.store import UsageStore, insert_new, time_bucket

ROUTES = ("edge", "cloud", "mixed", "none")


def _steps() -> Table:
    table: Table = StepRecordRow.__table__  # type: ignore[attr-defined]
    return table


def step_row(step: StepRecord) -> dict[str, Any]:
    return {
        "request_id": step.request_id, "session_id": step.session_id, "started_at": step.started_at,
        "experiment": step.experiment, "arm": step.arm, "policy": step.policy, "route": step.route,
        "decision": step.decision, "reason": step.reason, "signal": json.dumps(dict(step.signal), sort_keys=True),
        "fallback": step.fallback, "status": step.status, "latency_s": step.latency_s, "trace_id": step.trace_id,
        "features": json.dumps(dict(step.features), sort_keys=True) if step.features else None,
        "label": json.dumps(dict(step.label), sort_keys=True) if step.label is not None else None,
    }


def insert_steps(store: UsageStore, rows: Sequence[dict[str, Any]], *, conn: Connection | None = None) -> None:
    """Append step rows; one already stored (same ``request_id``, a retried batch) is skipped. ``conn``: in that
    connection's transaction."""
    insert_new(conn or store.engine, _steps(), rows, key="request_id")


def route_mix(store: UsageStore, *, since: float | None = None) -> list[dict[str, Any]]:
    """Per policy: steps answered by the edge, the cloud, both (``mixed``), and those privacy kept on the edge."""
    t = _steps()
    query = select(t.c.policy, t.c.route, func.count().label("steps"),
                   func.count(t.c.fallback).label("blocked")).group_by(t.c.policy, t.c.route)
    if since is not None:
        query = query.where(t.c.started_at >= since)
    out: dict[str, dict[str, Any]] = {}
    with store.engine.connect() as conn:
        for policy, route, steps, blocked in conn.execute(query):
            row = out.setdefault(policy, {"policy": policy, "steps": 0, "privacy_blocked": 0,
                                          **{r: 0 for r in ROUTES}})
            row[route if route in ROUTES else "none"] += int(steps)
            row["steps"] += int(steps)
            row["privacy_blocked"] += int(blocked)
    return [out[p] for p in sorted(out)]


def request_rate(store: UsageStore, bucket_s: float, *, since: float | None = None) -> list[dict[str, Any]]:
    """Steps per time bucket and policy: ``{"t": bucket start, "policy", "steps", "errors"}``, oldest first."""
    t = _steps()
    bucket = time_bucket(t.c.started_at, bucket_s, store.engine.dialect.name).label("bucket")
    errors = func.sum(cast(t.c.status >= 400, Integer)).label("errors")
    query = select(bucket, t.c.policy, func.count().label("steps"), errors).group_by(bucket, t.c.policy)
    if since is not None:
        query = query.where(t.c.started_at >= since)
    with store.engine.connect() as conn:
        return [{"t": float(r.bucket), "policy": r.policy, "steps": int(r.steps), "errors": int(r.errors or 0)}
                for r in conn.execute(query.order_by(bucket, t.c.policy))]


def blocked_steps(store: UsageStore, *, since: float | None = None) -> dict[str, int]:
    """Per session: steps that privacy kept on the edge whatever the policy wanted."""
    t = _steps()
    query = select(t.c.session_id, func.count()).where(t.c.fallback.is_not(None)).group_by(t.c.session_id)
    if since is not None:
        query = query.where(t.c.started_at >= since)
    with store.engine.connect() as conn:
        return {str(s): int(n) for s, n in conn.execute(query)}


def session_steps(store: UsageStore, session_id: str) -> list[dict[str, Any]]:
    """A session's steps, oldest first, each with its upstream calls (``calls``: purpose, side, tokens, cost).
    Calls of requests that left no step record (a step still streaming) come as steps with ``decision`` None."""
    t = _steps()
    u: Table = UsageRecord.__table__  # type: ignore[attr-defined]
    with store.engine.connect() as conn:
        steps = [dict(r._mapping) for r in conn.execute(
            select(t).where(t.c.session_id == session_id).order_by(t.c.started_at))]
        calls = [dict(r._mapping) for r in conn.execute(
            select(u).where(u.c.session_id == session_id).order_by(u.c.started_at))]
    by_request: dict[str, dict[str, Any]] = {}
    for step in steps:
        step["signal"] = json.loads(step["signal"] or "{}")
        step["features"] = json.loads(step["features"] or "{}")
        step["label"] = json.loads(step["label"]) if step["label"] else None
        step["calls"] = []
        by_request[step["request_id"]] = step
    for call in calls:
        found = by_request.get(call["request_id"])
        if found is None:
            found = by_request[call["request_id"]] = {
                "request_id": call["request_id"], "session_id": session_id, "started_at": call["started_at"],
                "policy": call["policy"], "experiment": call["experiment"], "arm": call["arm"], "route": None,
                "decision": None, "reason": None, "signal": {}, "fallback": None, "status": None,
                "latency_s": None, "trace_id": None, "features": {}, "label": None, "calls": []}
        found["calls"].append({k: call[k] for k in (
            "purpose", "side", "model", "status", "latency_s", "prompt_tokens", "raw_input_tokens",
            "cache_read_tokens", "cache_write_tokens", "output_tokens", "cost_usd", "edge_flops", "usage_source")})
    return sorted(by_request.values(), key=lambda s: float(s["started_at"]))


def labelled_steps(store: UsageStore, *, since: float | None = None, until: float | None = None
                   ) -> list[dict[str, Any]]:
    """Steps that carry a shadow call's label, oldest first: ``request_id``, ``session_id``, ``started_at``,
    ``features`` and ``label`` (decoded) — what ``ecgw router fit`` and ``replay`` learn from. ``since``: started at
    or after; ``until``: started strictly before."""
    t = _steps()
    query = (select(t.c.request_id, t.c.session_id, t.c.started_at, t.c.features, t.c.label)
             .where(t.c.label.is_not(None)).order_by(t.c.started_at, t.c.id))
    if since is not None:
        query = query.where(t.c.started_at >= since)
    if until is not None:
        query = query.where(t.c.started_at < until)
    with store.engine.connect() as conn:
        return [{"request_id": r.request_id, "session_id": r.session_id, "started_at": float(r.started_at),
                 "features": json.loads(r.features or "{}"), "label": json.loads(r.label)}
                for r in conn.execute(query)]
