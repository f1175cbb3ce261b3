"""``privacy.enabled: false`` with the audit on: the body leaves unchanged, and which listed units left raw is still
measured and recorded (never the body), so an unprotected baseline shows its real exposure instead of none."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from privacy.audit import AuditedUnits, call_row
from privacy.classes.names import ANYONE, Who
from privacy.detect import Unit, UnitsDocument
from privacy.hook import PassThroughProtection, PassThroughProtector, Protection

T = TypeVar("T")


class RecordingPassThroughProtector(PassThroughProtector):
    """``privacy.enabled: false`` with the audit on: the body leaves unchanged, and which listed units left raw is
    recorded, so an unprotected baseline shows its real exposure."""

    def __init__(self, audited: AuditedUnits) -> None:
        self._audited = audited
        self.units = audited.units

    async def protect(self, body: dict[str, Any], *, session_id: str, request_id: str,
                      experiment: str | None = None, tiers: Sequence[str] = ("standard",),
                      who: Who = ANYONE) -> Protection:
        call_id, created = uuid.uuid4().hex, time.time()
        protection = PassThroughProtection(body, self._audited.unprotected_receipts(
            call_id=call_id, request_id=request_id, session_id=session_id, body=body))
        call = call_row(id=call_id, session_id=session_id, request_id=request_id, experiment=experiment,
                        created_at=created, body="{}", findings=0)  # the raw body is never written to disk
        self._audited.audit.submit(lambda: {"kind": "call", "call": call, "findings": []})
        await self._audited.record_exposure(call_id, session_id, body)
        return protection

    async def register_units(self, session_id: str, document: UnitsDocument) -> list[Unit]:
        return await self._audited.register(session_id, document)

    async def session_exposure(self, session_id: str) -> dict[str, Any]:
        return await self._audited.session_exposure(session_id)

    async def erase_session(self, session_id: str) -> int:
        await self._audited.units.forget(session_id)  # nothing was pseudonymised: no vault
        return await self._audited.erase(session_id)

    async def read_audit(self, read: Callable[..., T], *args: Any) -> T:
        return await self._audited.read_audit(read, *args)

    async def start(self) -> None:
        await self._audited.start()

    def flush(self) -> None:
        self._audited.flush()

    async def aclose(self) -> None:
        await self._audited.aclose()
