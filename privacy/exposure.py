"""Exposure measured from what left: after every cloud call, the body that actually went out is searched for every
listed unit's value and its normalised variants; only the verdict and the unit id are stored (``privacy_egress``).

Reports (``ecgw privacy-report``, ``GET /v1/sessions/{id}/privacy``, eval's exposure column) read these verdicts,
so a unit that left raw because no layer found it is reported exposed. The search runs on the audit's writer
thread, off the request path. ``privacy.passthrough`` does the same for ``privacy.enabled: false``.
"""

from __future__ import annotations

import re
import time
from typing import Any

from sqlmodel import Field, Session, SQLModel, select

from privacy.audit_writer import AuditWriter, Record
from privacy.normalise import canonical, variants
from privacy.units import Unit

_SEP = r"[^0-9A-Za-z\u4e00-\u9fff]{0,3}"


class PrivacyEgress(SQLModel, table=True):
    """One row per listed unit whose raw value was in a body that left for the cloud."""

    __tablename__ = "privacy_egress"

    id: int | None = Field(default=None, primary_key=True)
    call_id: str = Field(index=True)
    session_id: str = Field(index=True)
    unit_id: str
    created_at: float


def exposed_unit_ids(engine: Any, session_id: str) -> set[str]:
    with Session(engine) as db:
        rows = db.exec(select(PrivacyEgress.unit_id).where(PrivacyEgress.session_id == session_id)).all()
    return set(rows)


def _pattern(value: str) -> re.Pattern[str] | None:
    chars = [ch for ch in canonical(value) if ch.isalnum()]
    if not chars:
        return None
    return re.compile(r"(?<![0-9A-Za-z])" + _SEP.join(map(re.escape, chars)) + r"(?![0-9A-Za-z])", re.IGNORECASE)


def _texts(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            out.append(str(key))
            _texts(item, out)
    elif isinstance(value, list):
        for item in value:
            _texts(item, out)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        out.append(str(value))


def _readable(body: dict[str, Any]) -> str:
    """Every key, string and number of the body in every surface form, and the messages' text read in order."""
    parts: list[str] = []
    _texts(body, parts)
    glued: list[str] = []
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else [content]:
            text = part.get("text") if isinstance(part, dict) else part
            if isinstance(text, str):
                glued.append(text)
    parts.append("".join(glued))
    return "\n".join(form for text in parts for form in variants(text))


def units_left_raw(body: dict[str, Any], units: list[Unit]) -> list[str]:
    """Ids of the units whose value (any case, any separators, any encoding the last check decodes) is in ``body``."""
    if not units:
        return []
    text = _readable(body)
    out = []
    for unit in units:
        pattern = _pattern(unit.value)
        if pattern is not None and pattern.search(text):
            out.append(unit.unit_id)
    return sorted(set(out))


class ExposureRecorder:
    """Queues the egress verdicts of one cloud call on the audit writer."""

    def __init__(self, audit: AuditWriter) -> None:
        self._audit = audit

    def record(self, call_id: str, session_id: str, body: dict[str, Any], units: list[Unit]) -> None:
        if not units:
            return
        created = time.time()

        def build() -> Record | None:  # on the writer thread; written (and retried) like every audit record
            exposed = units_left_raw(body, units)
            if not exposed:
                return None
            return {"kind": "egress", "rows": [{"call_id": call_id, "session_id": session_id, "unit_id": unit_id,
                                                "created_at": created} for unit_id in exposed]}

        self._audit.submit(build)


def write_egress(engine: Any, rows: list[dict[str, Any]]) -> None:
    """Store egress verdicts (the audit store's ``egress`` records)."""
    with Session(engine) as db:
        if rows and db.exec(select(PrivacyEgress.id).where(PrivacyEgress.call_id == rows[0]["call_id"])).first():
            return  # a retried record the database took before
        db.add_all([PrivacyEgress(**row) for row in rows])
        db.commit()
