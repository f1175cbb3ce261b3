"""Privacy across sessions, for the operator's dashboard: units registered, findings by type and action, exposure
per session (``privacy.audit.session_report.session_report``, one per session), and the bodies the cloud received per call.

A stored body holds placeholders where values were protected; a call on which any value left raw (action
``audit``, or a listed unit the egress scan found in what was sent: ``privacy.audit.exposure``) has its body withheld
here, so the dashboard never shows a raw value."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from privacy.audit.inbound import inbound_by_session
from privacy.audit.session_report import session_report
from privacy.audit.sets import all_findings
from privacy.audit.tables import PrivacyCall, PrivacyEgress, PrivacyUnit

_SUMMARY = ("session_id", "cloud_calls", "units_known", "units_exposed", "units_protected", "exposure")


def overview(engine: Engine, open_body: Callable[[PrivacyCall], str]) -> dict[str, Any]:  # noqa: ARG001 (no bodies)
    with Session(engine) as db:
        units = db.exec(select(PrivacyUnit.session_id, func.count()).group_by(PrivacyUnit.session_id)).all()
        found = all_findings()
        findings = db.exec(select(found.c.type, found.c.action, func.count())
                           .group_by(found.c.type, found.c.action)).all()
        called = db.exec(select(PrivacyCall.session_id).distinct()).all()
    by_type: dict[str, dict[str, int]] = {}
    for type_, action, n in findings:
        by_type.setdefault(type_, {})[action] = int(n)
    sessions = sorted({s for s, _ in units if s != "*"} | set(called))
    inbound = inbound_by_session(engine)
    return {
        "units_registered": sum(int(n) for s, n in units if s != "*"),
        "units_from_config": sum(int(n) for s, n in units if s == "*"),
        "findings_by_type": dict(sorted(by_type.items())),
        "inbound": sum(inbound.values()),
        "sessions": [{**{k: session_report(engine, s)[k] for k in _SUMMARY}, "inbound": inbound.get(s, 0)}
                     for s in sessions],
    }


def cloud_bodies(engine: Engine, open_body: Callable[[PrivacyCall], str], session_id: str) -> list[dict[str, Any]]:
    """Per cloud call of the session, oldest first: its request id, findings by action, and the body exactly as the
    cloud received it (placeholders; ``open_body`` unseals the audit's copy) — or None when a value left raw on
    that call (found, or a listed unit in the body as sent)."""
    with Session(engine) as db:
        calls = db.exec(select(PrivacyCall).where(PrivacyCall.session_id == session_id)
                        .order_by(col(PrivacyCall.created_at))).all()
        found = all_findings()
        rows = db.exec(select(found.c.call_id, found.c.action, func.count())
                       .where(found.c.session_id == session_id)
                       .group_by(found.c.call_id, found.c.action)).all()
        egress = db.exec(select(PrivacyEgress.call_id, func.count()).where(PrivacyEgress.session_id == session_id)
                         .group_by(PrivacyEgress.call_id)).all()
    units_left = {call_id: int(n) for call_id, n in egress}
    actions: dict[str, dict[str, int]] = {}
    for call_id, action, n in rows:
        actions.setdefault(call_id, {})[action] = int(n)
    out = []
    for call in calls:
        counts = actions.get(call.id, {})
        raw_left = max(counts.get("audit", 0), units_left.get(call.id, 0))
        out.append({"request_id": call.request_id, "created_at": call.created_at, "findings": counts,
                    "raw_left": raw_left, "body": None if raw_left else json.loads(open_body(call))})
    return out
