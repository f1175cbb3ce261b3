"""Inbound findings: sensitive values a cloud answer carried that neither the call's placeholders nor its request
did (``privacy.response_guard``). One audit record per cloud call (kind ``inbound``, rows in ``privacy_inbound``),
chained like every record; a row holds the type, the layer that found it, where in the answer, the request, the
session and its owner, and what the guard did (``audit`` or ``redact``) — never the value nor a hash of it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from privacy.audit.tables import PrivacyInbound


def inbound_record(*, call_id: str, session_id: str, request_id: str, owner: str, action: str, created_at: float,
                   found: list[tuple[str, str, str]]) -> dict[str, Any] | None:
    """The audit record of one answer's ``found`` (type, layer, location) findings; None when there are none."""
    if not found:
        return None
    rows = [{"call_id": call_id, "session_id": session_id, "request_id": request_id, "owner": owner, "type": type_,
             "layer": layer, "location": location, "action": action, "created_at": created_at}
            for type_, layer, location in found]
    return {"kind": "inbound", "rows": rows}


def inbound_counts(engine: Engine, session_id: str) -> dict[str, Any]:
    """A session's inbound findings: how many, by type and by where in the answers, and the calls that had any."""
    with Session(engine) as db:
        rows = db.exec(select(PrivacyInbound.call_id, PrivacyInbound.type, PrivacyInbound.location,
                              PrivacyInbound.action).where(PrivacyInbound.session_id == session_id)).all()
    return {"total": len(rows), "calls": len({r[0] for r in rows}),
            "by_type": dict(sorted(Counter(r[1] for r in rows).items())),
            "by_location": dict(sorted(Counter(r[2] for r in rows).items())),
            "by_action": dict(sorted(Counter(r[3] for r in rows).items()))}


def inbound_by_session(engine: Engine) -> dict[str, int]:
    """Inbound findings per session, across sessions (the dashboard's overview)."""
    with Session(engine) as db:
        rows = db.exec(select(PrivacyInbound.session_id, func.count())
                       .group_by(col(PrivacyInbound.session_id))).all()
    return {str(s): int(n) for s, n in rows}
