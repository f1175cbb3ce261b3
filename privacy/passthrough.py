"""``privacy.enabled: false`` with the audit on: the body leaves unchanged, and which listed units left raw is still
measured and recorded (never the body), so an unprotected baseline shows its real exposure instead of none."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from privacy.audit import Hasher, PrivacyCall, units_record
from privacy.audit_writer import AuditWriter
from privacy.exposure import ExposureRecorder
from privacy.protection import PassThroughProtector, Protection
from privacy.registry import UnitRegistry
from privacy.report import session_exposure
from privacy.units import Unit, UnitsDocument


async def read_exposure(audit: AuditWriter, session_id: str) -> dict[str, Any]:
    """``privacy.report.session_exposure`` read on the writer thread, after every write queued before it."""
    store = audit.store

    def read() -> dict[str, Any]:
        store.ensure()
        return session_exposure(store.engine, session_id)

    report: dict[str, Any] = await asyncio.wrap_future(audit.read(read))
    return report


class RecordingPassThroughProtector(PassThroughProtector):
    """``privacy.enabled: false`` with the audit on: the body leaves unchanged, and which listed units left raw is
    recorded, so an unprotected baseline shows its real exposure."""

    def __init__(self, *, units: UnitRegistry, audit: AuditWriter, hasher: Hasher) -> None:
        self.units = units
        self._audit = audit
        self._hasher = hasher
        self._exposure = ExposureRecorder(audit)

    async def protect(self, body: dict[str, Any], *, session_id: str, request_id: str,
                      experiment: str | None = None) -> Protection:
        protection = await super().protect(body, session_id=session_id, request_id=request_id,
                                           experiment=experiment)
        call_id, created = uuid.uuid4().hex, time.time()
        call = PrivacyCall(id=call_id, session_id=session_id, request_id=request_id, experiment=experiment,
                           created_at=created, body="{}", findings=0)  # the raw body is never written to disk
        self._audit.submit(lambda: {"kind": "call", "call": call.model_dump(), "findings": []})
        _, matcher = await self.units.matcher(session_id)
        self._exposure.record(call_id, session_id, dict(body), matcher)
        return protection

    async def register_units(self, session_id: str, document: UnitsDocument) -> list[Unit]:
        units = await self.units.register(session_id, document)
        self._persist_units(session_id, units)
        return units

    def _persist_units(self, session_id: str, units: list[Unit]) -> None:
        hasher = self._hasher
        self._audit.submit(lambda: units_record(session_id, units, hasher))

    async def session_exposure(self, session_id: str) -> dict[str, Any]:
        return await read_exposure(self._audit, session_id)

    async def start(self) -> None:
        self._audit.start()
        if self.units.file_units():
            self._persist_units("*", self.units.file_units())

    def flush(self) -> None:
        self._audit.flush()

    async def aclose(self) -> None:
        await asyncio.to_thread(self._audit.close)
