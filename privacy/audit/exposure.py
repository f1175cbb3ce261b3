"""Exposure measured from what left: after every cloud call, the body that actually went out is searched for every
listed unit's value and its normalised variants — the last check's walk with the one unit matcher, so the
exposure report and the last check agree on what a leak is; only the verdict and the unit id are stored
(``privacy.lastcheck``).

Reports (``ecgw privacy-report``, ``GET /v1/sessions/{id}/privacy``, eval's exposure column) read these verdicts,
so a unit that left raw because no layer found it is reported exposed. The search runs on the audit's writer
thread, off the request path. ``privacy.passthrough`` does the same for ``privacy.enabled: false``.
"""

from __future__ import annotations

import time
from typing import Any

from sqlmodel import Session, select

from privacy.audit.tables import PrivacyEgress
from privacy.audit.writer import AuditWriter, Record
from privacy.detect import UnitMatcher, fold, variants

# the last check's walk: one idea of where a body holds text
from privacy.lastcheck import body_leaves, body_seams, spread_found
from privacy.lastcheck.obfuscated import undone
from privacy.lastcheck.spread import reasoning_splits


def exposed_unit_ids(engine: Any, session_id: str) -> set[str]:
    with Session(engine) as db:
        rows = db.exec(select(PrivacyEgress.unit_id).where(PrivacyEgress.session_id == session_id)).all()
    return set(rows)


def units_left_raw(body: dict[str, Any], units: UnitMatcher | None) -> list[str]:
    """Ids of the listed units whose value stands in ``body``: the last check's walk (``privacy.lastcheck``: every key,
    string and number, in each surface form it could be read in, across adjacent content parts and messages, and
    across every string in order) with the one unit matcher (``privacy.detect.units.UnitMatcher``), so what counts
    as having left is decided once. Also backwards, in rot13, dotted, spelled out and in base85 (``obfuscated``)."""
    if units is None or not len(units):
        return []
    found: set[str] = set()
    for _, text, _ in body_leaves(body, "", None):
        for n, form in enumerate(variants(text)):
            found.update(f.unit_id for f in units.find(fold(text) if n == 0 else form) if f.unit_id)
        for form in undone(text):  # backwards, rot13, dotted, spelled out, base85
            found.update(f.unit_id for f in units.find(form) if f.unit_id)
    for _, glued, boundary, _ in body_seams(body):
        found.update(f.unit_id for f in units.find(fold(glued)) if f.unit_id and f.start < boundary < f.end)
    found.update(f.unit_id for f in spread_found(body, units) if f.unit_id)
    found.update(f.unit_id for f in reasoning_splits(body, units) if f.unit_id)
    return sorted(found)


class ExposureRecorder:
    """Queues the egress verdicts of one cloud call on the audit writer."""

    def __init__(self, audit: AuditWriter) -> None:
        self._audit = audit

    def record(self, call_id: str, session_id: str, body: dict[str, Any], units: UnitMatcher | None) -> None:
        if units is None or not len(units):
            return
        created = time.time()

        def build() -> Record | None:  # on the writer thread; written (and retried) like every audit record
            exposed = units_left_raw(body, units)
            if not exposed:
                return None
            return {"kind": "egress", "rows": [{"call_id": call_id, "session_id": session_id, "unit_id": unit_id,
                                                "created_at": created} for unit_id in exposed]}

        self._audit.submit(build)

