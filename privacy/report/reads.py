"""The period report's reads, each over one scope (``privacy.report.period.Scope``): the audit's calls, findings
and egress verdicts, the signed checkpoints, the metering store's cloud calls and step records.

Rows only, no arithmetic beyond SQL's counts; ``privacy.report.build`` puts them together.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Table, func, inspect, select
from sqlalchemy.engine import Connection, Engine

from accounting.records import StepRecordRow, UsageRecord
from accounting.reports import derive
from accounting.store import UsageStore
from privacy.audit import (
    PrivacyCall,
    PrivacyChain,
    PrivacyCheckpoint,
    PrivacyEgress,
    PrivacyInbound,
    PrivacyReceipt,
    all_findings,
)
from privacy.audit.receipts import parse
from privacy.report.period import Scope

PLACED = ("pseudonymise", "mask")  # the actions that put a placeholder (or a type mask) where the value stood


def _t(model: Any) -> Table:
    table: Table = model.__table__
    return table


def has_table(engine: Engine, name: str) -> bool:
    with engine.connect() as conn:
        return bool(inspect(conn).has_table(name))


def audited_calls(conn: Connection, scope: Scope) -> list[dict[str, Any]]:
    """The audit's cloud calls (bodies that left, protected): id, session, request, time."""
    c = _t(PrivacyCall)
    query = select(c.c.id, c.c.session_id, c.c.request_id, c.c.created_at).where(
        *scope.where(c.c.session_id, c.c.created_at)).order_by(c.c.created_at)
    return [dict(r._mapping) for r in conn.execute(query)]


def findings(conn: Connection, scope: Scope) -> list[dict[str, Any]]:
    """Per call, type, layer and action: how many findings (the call's time decides the period)."""
    c, f = _t(PrivacyCall), all_findings()
    query = (select(f.c.call_id, f.c.type, f.c.layer, f.c.action, func.count().label("n"))
             .select_from(f.join(c, c.c.id == f.c.call_id))
             .where(*scope.where(c.c.session_id, c.c.created_at))
             .group_by(f.c.call_id, f.c.type, f.c.layer, f.c.action))
    return [dict(r._mapping) for r in conn.execute(query)]


def audited_units(conn: Connection, scope: Scope) -> list[dict[str, Any]]:
    """Per call: the listed units an ``audit`` action let through on purpose (the operator's choice)."""
    c, f = _t(PrivacyCall), all_findings()
    query = (select(f.c.call_id, f.c.unit_id).distinct().select_from(f.join(c, c.c.id == f.c.call_id))
             .where(*scope.where(c.c.session_id, c.c.created_at), f.c.action == "audit", f.c.unit_id.is_not(None)))
    return [dict(r._mapping) for r in conn.execute(query)]


def egress(conn: Connection, scope: Scope) -> list[dict[str, Any]]:
    """The egress scan's verdicts: one row per listed unit found raw in a body that left."""
    g = _t(PrivacyEgress)
    query = (select(g.c.call_id, g.c.session_id, g.c.unit_id, g.c.created_at)
             .where(*scope.where(g.c.session_id, g.c.created_at)).order_by(g.c.created_at))
    return [dict(r._mapping) for r in conn.execute(query)]


def receipts(conn: Connection, scope: Scope) -> dict[str, int]:
    """The signed egress receipts handed out (``privacy.audit.receipts``), per cloud target."""
    r = _t(PrivacyReceipt)
    query = (select(r.c.target, func.count()).where(*scope.where(r.c.session_id, r.c.created_at))
             .group_by(r.c.target).order_by(r.c.target))
    return {str(target): int(n) for target, n in conn.execute(query)}


def receipt_claims(conn: Connection, scope: Scope) -> list[dict[str, Any]]:
    """Every egress receipt of the scope with its claims (read from its token, unverified: the trail's verification
    checks every stored receipt's signature), oldest first."""
    r = _t(PrivacyReceipt)
    query = (select(r.c.id, r.c.call_id, r.c.request_id, r.c.session_id, r.c.target, r.c.created_at, r.c.token)
             .where(*scope.where(r.c.session_id, r.c.created_at)).order_by(r.c.created_at, r.c.id))
    out = []
    for row in conn.execute(query):
        found = dict(row._mapping)
        found["claims"] = parse(str(found.pop("token")))[1]
        out.append(found)
    return out


def last_entry(conn: Connection, until: float) -> int | None:
    """The sequence number of the chain's last entry made before ``until`` (None: none)."""
    c = _t(PrivacyChain)
    found = conn.execute(select(func.max(c.c.seq)).where(c.c.created_at < until)).scalar()
    return None if found is None else int(found)


def checkpoints(conn: Connection) -> list[dict[str, Any]]:
    p = _t(PrivacyCheckpoint)
    query = select(p.c.seq, p.c.head_seq, p.c.head_hash, p.c.created_at, p.c.hash).order_by(p.c.seq)
    return [dict(r._mapping) for r in conn.execute(query)]


def cloud_usage(store: UsageStore, scope: Scope, by: str) -> list[dict[str, Any]]:
    """``GET /v1/usage?by=…`` rows (``accounting.reports.derive``) for the scope, those with cloud calls only."""
    rows = store.aggregate(by, since=scope.since, until=scope.until, session_prefix=scope.prefix)
    return [row for row in map(derive, rows) if row["cloud_calls"]]


def targets_by_request(conn: Connection, scope: Scope) -> dict[str, set[str]]:
    """Per request id, the cloud targets its cloud calls went to (every attempt: a failed one was sent too)."""
    u = _t(UsageRecord)
    query = (select(u.c.request_id, u.c.deployment).distinct()
             .where(*scope.where(u.c.session_id, u.c.started_at), u.c.side == "cloud"))
    out: dict[str, set[str]] = {}
    for request_id, deployment in conn.execute(query):
        out.setdefault(str(request_id), set()).add(str(deployment or "-"))
    return out


def steps(conn: Connection, scope: Scope) -> list[dict[str, Any]]:
    """Step records: route, the fallback that kept a step on the edge, the signal (JSON), status, time."""
    s = _t(StepRecordRow)
    query = (select(s.c.session_id, s.c.started_at, s.c.policy, s.c.route, s.c.fallback, s.c.signal, s.c.status)
             .where(*scope.where(s.c.session_id, s.c.started_at)).order_by(s.c.started_at))
    out = []
    for r in conn.execute(query):
        row = dict(r._mapping)
        try:
            signal = json.loads(row["signal"] or "{}")
        except ValueError:
            signal = {}
        row["signal"] = signal if isinstance(signal, dict) else {}
        out.append(row)
    return out


def inbound(conn: Connection, scope: Scope) -> list[dict[str, Any]]:
    """The response guard's findings (``privacy.response_guard``): what cloud answers carried that no request did,
    per type and action (``audit``: recorded, ``redact``: replaced before the client got it)."""
    i = _t(PrivacyInbound)
    query = (select(i.c.type, i.c.action, func.count().label("n"))
             .where(*scope.where(i.c.session_id, i.c.created_at)).group_by(i.c.type, i.c.action))
    return [dict(r._mapping) for r in conn.execute(query)]
